/**
 * `switchboard run FLOW --from RUN_ID --at NODE[:TURN] [--data DIR]`: the run starts from a past
 * run's state at that node's turn (see cassette/fork.ts). The past run is read from the data
 * directory without its lock; the input is the past run's unless one is given.
 */
import type { RunOptions } from '../engine/types.js';

export interface ForkFlags {
  from?: string;
  at?: string;
  data?: string;
}

/** A flag problem, reported as a usage error. */
export class ForkFlagError extends Error {}

/** Sets up `options` for a fork; returns the forker (to report a divergence) and the past input. */
export async function applyFork(
  flags: ForkFlags,
  flow: import('@switchboard/schemas').Flow,
  options: RunOptions,
): Promise<{ forker: import('../cassette/fork.js').Forker; input: unknown }> {
  if (flags.from === undefined || flags.at === undefined)
    throw new ForkFlagError('--from RUN_ID and --at NODE[:TURN] go together');
  const { ForkError, forkRunOptions, parseForkAt, planFork } = await import('../cassette/fork.js');
  const { readJournal } = await import('../cassette/stored.js');
  const { readStoredRun } = await import('./stored-run.js');
  const { resolveDataDir } = await import('../store/store.js');
  const { join } = await import('node:path');
  let plan: import('../cassette/fork.js').ForkPlan;
  try {
    const at = parseForkAt(flags.at);
    const run = await readStoredRun(flags.from, flags.data);
    const journal = readJournal(join(resolveDataDir(flags.data), 'runs', flags.from, 'tools.jsonl'));
    plan = planFork(
      flags.from,
      { flow: run.spec.flow, input: run.spec.input, events: run.events, journal },
      at,
    );
  } catch (e) {
    if (e instanceof ForkError || (e as { usage?: boolean }).usage !== undefined)
      throw new ForkFlagError((e as Error).message);
    throw e;
  }
  if (!flow.nodes.some((n) => n.id === plan.at.nodeId))
    throw new ForkFlagError(`the flow has no node "${plan.at.nodeId}" to fork at`);
  const forker = forkRunOptions(plan, options, flow);
  options.signal = options.signal ? AbortSignal.any([options.signal, forker.signal]) : forker.signal;
  return { forker, input: plan.input };
}
