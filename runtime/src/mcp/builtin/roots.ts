/**
 * A built-in's root must not reach the store of the run it serves. With `options.root: "."` the
 * `filesystem` and `documents` built-ins used to see `runs/<id>/` itself, so a flow could rewrite
 * its own `events.jsonl` or forge `tools.jsonl`. A root is refused when it is, or contains, the
 * run's folder or the data directory, or when it lies elsewhere in the data directory (another
 * run, the catalog); roots inside the run's folder (`workspace`, `documents`) are the normal case.
 */
import { realpath } from 'node:fs/promises';
import { McpHostError } from '../errors.js';
import { isWithin } from '../safe-path.js';
import type { BuiltinContext } from './context.js';

async function real(p: string): Promise<string> {
  try {
    return await realpath(p);
  } catch {
    return p;
  }
}

/** Throws `mcp.root-refused` when the real root `root` can reach the store `ctx.protect` names. */
export async function confineRoot(ctx: BuiltinContext, root: string, asGiven: string): Promise<void> {
  if (!ctx.protect) return;
  const run = await real(ctx.protect.run);
  const refuse = (why: string) =>
    new McpHostError(
      'mcp.root-refused',
      `root ${JSON.stringify(asGiven.slice(0, 200))} refused: ${why}; use a sub-folder such as "workspace"`,
    );
  if (isWithin(root, run))
    throw refuse("it is or contains the run's own store (event log, tool journal, checkpoints)");
  if (ctx.protect.store === undefined) return;
  const store = await real(ctx.protect.store);
  if (isWithin(root, store)) throw refuse("it is or contains the server's data directory");
  if (isWithin(store, root) && !isWithin(run, root))
    throw refuse("it is inside the server's data directory but outside this run's folder");
}
