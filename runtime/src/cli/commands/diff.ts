/**
 * `switchboard diff RUN_A RUN_B [--data DIR] [--json]`: compares two stored runs — the path
 * taken, each node's outputs, tokens per node, the end state and output — and shows time too.
 * Exit 0 when the runs agree (time aside), 1 when they differ, 2 on a usage error (a run that
 * is not there).
 */
import type { Command } from 'commander';
import { type CliContext, EXIT } from '../context.js';

interface DiffCliOptions {
  data?: string;
  json?: boolean;
}

async function diffCommand(idA: string, idB: string, opts: DiffCliOptions, ctx: CliContext): Promise<number> {
  const { readStoredRun, StoredRunError } = await import('../stored-run.js');
  const { diffRuns, summarize, summaryJson } = await import('../../run-diff/diff.js');
  let runs: Awaited<ReturnType<typeof readStoredRun>>[];
  try {
    runs = [await readStoredRun(idA, opts.data), await readStoredRun(idB, opts.data)];
  } catch (e) {
    ctx.err(`switchboard diff: ${(e as Error).message}\n`);
    return e instanceof StoredRunError && e.usage ? EXIT.usage : EXIT.failed;
  }
  const a = summarize(idA, runs[0]!.events);
  const b = summarize(idB, runs[1]!.events);
  const diffs = diffRuns(a, b);
  if (opts.json) {
    ctx.out(
      `${JSON.stringify({ same: diffs.length === 0, a: summaryJson(a), b: summaryJson(b), differences: diffs }, null, 2)}\n`,
    );
  } else {
    const line = (label: string, s: typeof a) =>
      `${label} ${s.runId}: ${s.flowId}, ${s.status}, ${s.path.length} handover(s), ${s.totalTokens} tokens, ${Math.round(s.ms)} ms\n`;
    ctx.out(line('A', a));
    ctx.out(line('B', b));
    if (diffs.length === 0) ctx.out(`path: ${a.path.join(' → ') || '(no handovers)'}\n`);
    for (const d of diffs) ctx.out(`≠ ${d.detail}\n`);
    const times = [...new Set([...a.nodes, ...b.nodes])]
      .map((n) => `${n} ${Math.round(a.nodeMs.get(n) ?? 0)}/${Math.round(b.nodeMs.get(n) ?? 0)}`)
      .join(', ');
    ctx.out(
      `time (A/B ms, not compared): total ${Math.round(a.ms)}/${Math.round(b.ms)}${times ? `; ${times}` : ''}\n`,
    );
    ctx.out(diffs.length === 0 ? 'the runs agree\n' : `the runs differ (${diffs.length} difference(s))\n`);
  }
  return diffs.length === 0 ? EXIT.ok : EXIT.failed;
}

export function registerDiff(program: Command, ctx: CliContext): void {
  program
    .command('diff')
    .description('Compare two stored runs: path, per-node outputs, tokens and time. Exit 0 agree, 1 differ.')
    .argument('<runA>', 'run id')
    .argument('<runB>', 'run id')
    .option('--data <dir>', 'data directory (default $SWITCHBOARD_DATA or ./.switchboard)')
    .option('--json', 'print both summaries and the differences as JSON')
    .action(async (a: string, b: string, opts: DiffCliOptions) => {
      try {
        ctx.setExit(await diffCommand(a, b, opts, ctx));
      } catch (e) {
        ctx.err(`switchboard diff: ${(e as Error).message}\n`);
        ctx.setExit(EXIT.failed);
      }
    });
}
