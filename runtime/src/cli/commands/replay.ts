/**
 * `switchboard replay CASSETTE|RUN_ID [--flow FILE] [--data DIR] [--json]`: re-executes a recorded
 * run from its cassette (a stored run's is built from its log) — no network, no tool side effects — and reports whether the events match
 * the recording (timestamps and ids aside). With `--flow`, an edited flow is replayed against
 * the recording: a model request the cassette does not hold is a `cassette_miss` naming the
 * node, the nearest recorded request and the first difference.
 *
 * Exit codes: 0 the replay matches, 1 it differs or missed, 2 usage (unreadable cassette or flow).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { type CliContext, EXIT } from '../context.js';
import { readValidFlow } from '../read-flow.js';

interface ReplayCliOptions {
  flow?: string;
  data?: string;
  json?: boolean;
}

async function replayCommand(file: string, opts: ReplayCliOptions, ctx: CliContext): Promise<number> {
  const { readCassette } = await import('../../cassette/file.js');
  const { replayCassette } = await import('../../cassette/replay-run.js');
  const { existsSync } = await import('node:fs');
  const { RUN_ID_RE } = await import('../../store/store.js');
  // A run id (not a file): the cassette is built from the stored run's log in the data directory.
  const fromRun = !existsSync(file) && RUN_ID_RE.test(file);
  let r: Awaited<ReturnType<typeof readCassette>>;
  if (fromRun) {
    const { cassetteOfStoredRun } = await import('../../cassette/stored.js');
    const { StoredRunError } = await import('../stored-run.js');
    try {
      const c = await cassetteOfStoredRun(file, opts.data);
      for (const w of c.warnings) ctx.err(`switchboard replay: warning: ${w}\n`);
      r = { ok: true, cassette: c.cassette };
    } catch (e) {
      ctx.err(`switchboard replay: ${(e as Error).message}\n`);
      return e instanceof StoredRunError && !e.usage ? EXIT.failed : EXIT.usage;
    }
  } else r = await readCassette(file);
  if (!r.ok) {
    ctx.err(`switchboard replay: ${r.message}\n`);
    return EXIT.usage;
  }
  let flow: import('@switchboard/schemas').Flow | undefined;
  if (opts.flow) {
    let code: number = EXIT.ok;
    flow = await readValidFlow('replay', opts.flow, { ...ctx, setExit: (c) => (code = c) });
    if (!flow) return code === EXIT.failed ? EXIT.usage : code;
  }
  // Replaying a stored run never writes into the directory it was read from.
  const scratch = !opts.data || fromRun;
  const dataDir = scratch ? await mkdtemp(join(tmpdir(), 'sb-replay-')) : opts.data!;
  try {
    const out = await replayCassette(r.cassette, { ...(flow ? { flow } : {}), dataDir });
    const c = out.comparison;
    const ok = !out.miss && c.same;
    if (opts.json)
      ctx.out(
        `${JSON.stringify(
          {
            ok,
            status: out.result.status,
            ...(out.miss ? { error: out.miss } : {}),
            events: {
              recorded: c.recorded,
              replayed: c.replayed,
              same: c.same,
              ...(c.first ? { first: c.first } : {}),
            },
            modelCalls: out.modelCalls,
            toolCalls: out.toolCalls,
            ms: Math.round(out.ms),
          },
          null,
          2,
        )}\n`,
      );
    else if (out.miss) ctx.err(`switchboard replay: ${out.miss.message}\n`);
    else if (c.same)
      ctx.out(
        `replay matches the recording: ${c.replayed} events (timestamps and ids aside), ${out.modelCalls} model and ${out.toolCalls} tool call(s) from the cassette, ${Math.round(out.ms)} ms\n`,
      );
    else {
      const f = c.first!;
      ctx.out(
        `replay differs from the recording at event ${f.index} (${f.recordedType ?? 'none'} recorded, ${f.replayedType ?? 'none'} replayed): ${f.difference.path}: recorded ${f.difference.recorded}, replayed ${f.difference.requested}\n`,
      );
    }
    return ok ? EXIT.ok : EXIT.failed;
  } finally {
    if (scratch) await rm(dataDir, { recursive: true, force: true }).catch(() => {});
  }
}

export function registerReplay(program: Command, ctx: CliContext): void {
  program
    .command('replay')
    .description(
      'Re-execute a recorded run from its cassette (no network, no tool side effects) and compare the events.',
    )
    .argument('<cassette>', 'cassette file written by `switchboard run --record`, or the id of a stored run')
    .option('--flow <file>', 'replay this (edited) flow instead of the recorded one')
    .option(
      '--data <dir>',
      'data directory: where the run RUN_ID is stored, or for a cassette file where the replay writes (default: a temporary one)',
    )
    .option('--json', 'print the outcome as JSON')
    .action(async (file: string, opts: ReplayCliOptions) => {
      try {
        ctx.setExit(await replayCommand(file, opts, ctx));
      } catch (e) {
        ctx.err(`switchboard replay: ${(e as Error).message}\n`);
        ctx.setExit(EXIT.failed);
      }
    });
}
