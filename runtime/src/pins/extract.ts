/**
 * A pin from a stored run: what one turn of a node produced, read back from the run's events.
 *
 * A node's turns are its `turn.started` events in the run itself (not in delegated runs), in
 * order: turn 1 is the first. A turn spans from its `turn.started` to the node's
 * `node.completed`; in it, the node's last `message` is its reply (parsed back to JSON for an
 * agent with JSON output), a decider's `decision` is its route, `mic.granted` by the node is its
 * mic grant. An agent's handover choice is the `handover` events from the node that follow the
 * turn (they are emitted together, as the engine takes the edges), before the node starts again.
 */
import {
  configHash,
  type Flow,
  PINNABLE_KINDS,
  type Pin,
  type PinnedOutcome,
  type RunEvent,
} from '@switchboard/schemas/core';

export class PinError extends Error {
  override readonly name = 'PinError';
}

export interface PinSource {
  /** The flow as that run ran it. */
  flow: Flow;
  events: readonly RunEvent[];
}

/** `RUN_ID` or `RUN_ID:TURN` (TURN from 1). */
export function parsePinRef(ref: string, what: string): { runId: string; turn?: number } {
  const i = ref.lastIndexOf(':');
  if (i < 0) return { runId: ref };
  const runId = ref.slice(0, i);
  const t = ref.slice(i + 1);
  const turn = Number(t);
  if (runId === '' || !/^[0-9]{1,7}$/.test(t) || turn < 1)
    throw new PinError(
      `${what} ${JSON.stringify(ref)}: expected RUN_ID or RUN_ID:TURN (TURN a whole number from 1)`,
    );
  return { runId, turn };
}

/** `NODE=RUN_ID[:TURN]` (the `--pin` flag). */
export function parsePinFlag(flag: string): { nodeId: string; runId: string; turn?: number } {
  const i = flag.indexOf('=');
  if (i <= 0 || i === flag.length - 1)
    throw new PinError(`--pin ${JSON.stringify(flag)}: expected NODE=RUN_ID or NODE=RUN_ID:TURN`);
  return { nodeId: flag.slice(0, i), ...parsePinRef(flag.slice(i + 1), `--pin ${flag.slice(0, i)}=`) };
}

interface TurnSpan {
  start: number;
  /** Index of the node's node.completed (or node.failed) ending the turn; -1 if it never ended. */
  end: number;
  failed: boolean;
}

function turnsOf(events: readonly RunEvent[], nodeId: string): TurnSpan[] {
  const spans: TurnSpan[] = [];
  let open: TurnSpan | undefined;
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.parentRunId !== undefined || e.nodeId !== nodeId) continue;
    if (e.type === 'turn.started') {
      open = { start: i, end: -1, failed: false };
      spans.push(open);
    } else if (open && (e.type === 'node.completed' || e.type === 'node.failed')) {
      open.end = i;
      open.failed = e.type === 'node.failed';
      open = undefined;
    }
  }
  return spans;
}

/**
 * The pin of `nodeId`'s turn `turn` (default: its last completed turn) in the run `runId`;
 * a PinError naming the node, the run and the turn when there is nothing to pin.
 */
export function pinFromRun(
  runId: string,
  src: PinSource,
  nodeId: string,
  turn?: number,
  now: () => Date = () => new Date(),
): Pin {
  const node = src.flow.nodes.find((n) => n.id === nodeId);
  if (!node) throw new PinError(`run ${runId} has no node "${nodeId}"`);
  if (!PINNABLE_KINDS.has(node.kind))
    throw new PinError(
      `node "${nodeId}" is a ${node.kind}: only the output of ${[...PINNABLE_KINDS].join(' and ')} nodes can be pinned`,
    );
  const spans = turnsOf(src.events, nodeId);
  if (spans.length === 0) throw new PinError(`node "${nodeId}" did not run in run ${runId}`);
  let index: number;
  if (turn === undefined) {
    index = spans.length - 1;
    while (index >= 0 && (spans[index]!.end < 0 || spans[index]!.failed)) index--;
    if (index < 0) throw new PinError(`node "${nodeId}" completed no turn in run ${runId}`);
  } else {
    if (turn > spans.length)
      throw new PinError(
        `node "${nodeId}" had ${spans.length} turn(s) in run ${runId}; there is no turn ${turn} to pin`,
      );
    index = turn - 1;
  }
  const span = spans[index]!;
  const fromTurn = index + 1;
  if (span.end < 0)
    throw new PinError(`turn ${fromTurn} of node "${nodeId}" in run ${runId} never completed`);
  if (span.failed)
    throw new PinError(`turn ${fromTurn} of node "${nodeId}" in run ${runId} failed: nothing to pin`);

  const outcome: PinnedOutcome = {};
  let toolCalls = 0;
  const jsonOutput = (node.config as { output?: { type?: string } }).output?.type === 'json';
  for (let i = span.start; i <= span.end; i++) {
    const e = src.events[i]!;
    if (e.parentRunId !== undefined) continue;
    if (e.type === 'message' && e.nodeId === nodeId) {
      const content = e.message.content;
      outcome.message = { content };
      if (jsonOutput)
        try {
          outcome.message.json = JSON.parse(content);
        } catch {
          // The reply was text after all (a guard's replacement, a handover note): kept as text.
        }
    } else if (e.type === 'decision' && e.nodeId === nodeId) {
      outcome.route =
        e.choice === 'done'
          ? { done: true, reason: e.reason }
          : { edges: Array.isArray(e.choice) ? [...e.choice] : [e.choice], reason: e.reason };
    } else if (e.type === 'mic.granted' && e.by === nodeId) outcome.grantMic = e.holder;
    else if (e.type === 'tool.called' && e.nodeId === nodeId && !e.tool.startsWith('handover_to_'))
      toolCalls++;
  }
  if (node.kind === 'agent' && outcome.route === undefined) {
    // The edges taken from the node right after its turn: one contiguous group of handovers.
    const edges: string[] = [];
    for (let i = span.end + 1; i < src.events.length; i++) {
      const e = src.events[i]!;
      if (e.parentRunId !== undefined) continue;
      if (e.type === 'handover' && e.from === nodeId) edges.push(e.edgeId as string);
      else if (edges.length > 0) break;
      else if ((e.type === 'node.started' || e.type === 'turn.started') && e.nodeId === nodeId) break;
    }
    if (edges.length > 0) outcome.route = { edges, reason: 'pinned handover' };
  }
  if (outcome.message === undefined && outcome.route === undefined)
    throw new PinError(
      `turn ${fromTurn} of node "${nodeId}" in run ${runId} produced no message and no route`,
    );
  const pin: Pin = {
    nodeId,
    kind: node.kind,
    fromRun: runId,
    fromTurn,
    configHash: configHash(node.config),
    pinnedAt: now().toISOString(),
    outcome,
  };
  if (toolCalls > 0) pin.toolCalls = toolCalls;
  return pin;
}
