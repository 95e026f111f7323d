/**
 * Reads and validates the flow file a command was given, reporting problems the same way for
 * every command that needs a valid flow before it can start (mcp, trust): an unreadable file is
 * EXIT.failed, an invalid flow is EXIT.usage with one line per problem.
 */
import { readFile } from 'node:fs/promises';
import type { Flow } from '@switchboard/schemas';
import { formatProblem } from './commands/validate.js';
import { type CliContext, EXIT } from './context.js';

/** The valid flow in `file`, or undefined after the error was printed and the exit code set. */
export async function readValidFlow(
  command: string,
  file: string,
  ctx: CliContext,
): Promise<Flow | undefined> {
  // Loaded lazily like every heavy module a command needs (see cli/main.ts).
  const { validateText } = await import('@switchboard/nodes');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    ctx.err(
      `switchboard ${command}: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}\n`,
    );
    ctx.setExit(EXIT.failed);
    return undefined;
  }
  const v = validateText(text);
  if (!v.ok || !v.flow) {
    for (const p of v.errors) ctx.err(`${formatProblem(file, p, 'error')}\n`);
    ctx.setExit(EXIT.usage);
    return undefined;
  }
  return v.flow;
}
