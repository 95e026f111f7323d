/**
 * The pins of a headless run: `FLOW.pins.json` beside the flow file when it exists (or the file
 * named with `--pins FILE`; `--no-pins` ignores both), then each `--pin NODE=RUN_ID[:TURN]`,
 * taken from a run stored in `--data DIR` (in place of the file's pin of that node). A fork
 * (`--from`) also keeps the pins its past run ran with, for the nodes not pinned here: the
 * recorded run made no model request for them, so its state can only be rebuilt with them.
 *
 * Every pin is checked against the flow before the run starts (its node, kind and edges), and
 * a stale pin (the node's config changed since) is said on stderr: it still applies.
 */
import { existsSync } from 'node:fs';
import type { Flow, Pin } from '@switchboard/schemas';
import type { Command } from 'commander';
import type { RunOptions } from '../engine/types.js';
import { pinProblem, stalePins } from '../pins/behavior.js';
import { PinError, parsePinFlag, pinFromRun } from '../pins/extract.js';
import { pinsOfEvents, pinsPathFor, readPinsFile } from '../pins/file.js';
import { readStoredRun, StoredRunError } from './stored-run.js';

export interface PinFlags {
  pin?: string[];
  /** A file, or false for `--no-pins`. */
  pins?: string | boolean;
  data?: string;
  from?: string;
}

/** A flag problem, reported as a usage error. */
export class PinFlagError extends Error {}

export function addPinFlags(cmd: Command): Command {
  const collect = (v: string, prev: string[] = []) => [...prev, v];
  return cmd
    .option(
      '--pin <node=run[:turn]>',
      "use the node's output from a stored run (--data) instead of running it; repeatable",
      collect,
    )
    .option('--pins <file>', 'the pins file (default: FLOW.pins.json beside the flow, when it exists)')
    .option('--no-pins', 'ignore the pins file beside the flow');
}

/** A pin of `nodeId` from the stored run `runId` (its turn, or its last), checked against `flow`. */
export async function pinFromStoredRun(
  flow: Flow,
  nodeId: string,
  runId: string,
  turn: number | undefined,
  dataDir: string | undefined,
): Promise<Pin> {
  let run: Awaited<ReturnType<typeof readStoredRun>>;
  try {
    run = await readStoredRun(runId, dataDir);
  } catch (e) {
    if (e instanceof StoredRunError) throw new PinError(e.message);
    throw e;
  }
  if (run.spec.flow.id !== flow.id)
    throw new PinError(`run ${runId} is a run of flow "${run.spec.flow.id}", not of "${flow.id}"`);
  const pin = pinFromRun(runId, { flow: run.spec.flow, events: run.events }, nodeId, turn);
  const problem = pinProblem(pin, flow);
  if (problem) throw new PinError(problem);
  return pin;
}

/** Sets `options.pins`; warnings (stale pins) go to `warn`. */
export async function applyPinFlags(
  flags: PinFlags,
  flowFile: string,
  flow: Flow,
  options: RunOptions,
  warn: (line: string) => void,
): Promise<void> {
  const byNode = new Map<string, Pin>();
  try {
    if (flags.from !== undefined) {
      // A fork rebuilds its past run's state: that run's pinned nodes must stay pinned.
      const past = await readStoredRun(flags.from, flags.data).catch(() => undefined);
      for (const p of (past && pinsOfEvents(past.events)) ?? []) byNode.set(p.nodeId, p);
    }
    if (flags.pins !== false) {
      const file = typeof flags.pins === 'string' ? flags.pins : pinsPathFor(flowFile);
      if (typeof flags.pins === 'string' || existsSync(file))
        for (const p of (await readPinsFile(file)).pins) byNode.set(p.nodeId, p);
    }
    for (const f of flags.pin ?? []) {
      const { nodeId, runId, turn } = parsePinFlag(f);
      byNode.set(nodeId, await pinFromStoredRun(flow, nodeId, runId, turn, flags.data));
    }
  } catch (e) {
    if (e instanceof PinError) throw new PinFlagError(e.message);
    throw e;
  }
  const pins = [...byNode.values()];
  for (const p of pins) {
    const problem = pinProblem(p, flow);
    if (problem) throw new PinFlagError(problem);
  }
  for (const p of stalePins(pins, flow))
    warn(
      `warning: the pin of "${p.nodeId}" is stale: the node's config changed since run ${p.fromRun}; the pinned output is used anyway (unpin it to run the node)`,
    );
  if (pins.length > 0) options.pins = pins;
}
