/**
 * The behaviour of a pinned node: its turn makes no model call and no tool call; it emits
 * `node.pinned` (where the output came from, whether the pin is stale) and returns the recorded
 * outcome, which the engine commits as it commits a live one — the message, the mic grant and
 * the handovers are emitted by the engine as usual, and a decider's recorded `decision` is
 * emitted again, so traces, counters and diffs read a pinned turn like any other (with no tokens).
 *
 * Stale pins (the node's config changed since the pinned run) still apply: a pin is a deliberate
 * choice to freeze a node while working on the rest, and silently dropping it would change what
 * the run does. The event says `stale: true`, and hosts warn. A pin that cannot apply — its node
 * is gone or of another kind, or an edge it routes along no longer leaves the node — fails the
 * run at its start with `pin_invalid`, naming the node and the edge.
 */
import type { FlowBehavior, NodeContext, StepOutcome } from '@switchboard/nodes/core';
import { type Flow, type Pin, pinIsStale } from '@switchboard/schemas/core';
import { RunFailure } from '../engine/errors.js';

/** Why a pin cannot apply to this flow, or undefined when it can. */
export function pinProblem(pin: Pin, flow: Flow): string | undefined {
  const where = `pin of node "${pin.nodeId}" (from run ${pin.fromRun}, turn ${pin.fromTurn})`;
  const node = flow.nodes.find((n) => n.id === pin.nodeId);
  if (!node) return `${where}: the flow has no node "${pin.nodeId}"`;
  if (node.kind !== pin.kind) return `${where}: the node is now a ${node.kind}, the pin is of a ${pin.kind}`;
  const route = pin.outcome.route;
  if (route && !('done' in route))
    for (const id of route.edges)
      if (!flow.edges.some((e) => e.id === id && e.source === pin.nodeId))
        return `${where}: edge "${id}", which the pinned turn took, no longer leaves "${pin.nodeId}"`;
  const mic = pin.outcome.grantMic;
  if (mic !== undefined && !flow.nodes.some((n) => n.id === mic))
    return `${where}: the flow has no node "${mic}" to give the mic to`;
  return undefined;
}

function pinnedBehavior(pin: Pin, stale: boolean): FlowBehavior {
  return {
    type: 'flow',
    run(ctx: NodeContext): Promise<StepOutcome> {
      const ev: Record<string, unknown> = {
        type: 'node.pinned',
        fromRun: pin.fromRun,
        fromTurn: pin.fromTurn,
      };
      if (stale) ev.stale = true;
      if (pin.toolCalls) ev.toolCalls = pin.toolCalls;
      ctx.emit(ev as never);
      const o = pin.outcome;
      const out: StepOutcome = { toolCalls: 0 };
      if (o.message) out.message = structuredClone(o.message);
      if (o.route) {
        out.route = structuredClone(o.route);
        if (pin.kind === 'decider') {
          const r = o.route;
          const choice = 'done' in r ? 'done' : r.edges.length === 1 ? r.edges[0]! : [...r.edges];
          ctx.emit({ type: 'decision', choice, reason: r.reason ?? 'pinned' });
        }
      }
      if (o.grantMic !== undefined) out.grantMic = o.grantMic;
      return Promise.resolve(out);
    },
  };
}

/** The behaviours of the pinned nodes, by node id; a pin that cannot apply is a `pin_invalid` failure. */
export function pinnedBehaviors(pins: readonly Pin[], flow: Flow): Map<string, FlowBehavior> {
  const out = new Map<string, FlowBehavior>();
  for (const pin of pins) {
    const problem = pinProblem(pin, flow);
    if (problem) throw new RunFailure('pin_invalid', problem);
    const node = flow.nodes.find((n) => n.id === pin.nodeId)!;
    out.set(pin.nodeId, pinnedBehavior(pin, pinIsStale(pin, node.config)));
  }
  return out;
}

/** The pins among `pins` whose node's config changed since the pinned run. */
export function stalePins(pins: readonly Pin[], flow: Flow): Pin[] {
  return pins.filter((p) => {
    const n = flow.nodes.find((x) => x.id === p.nodeId);
    return n !== undefined && pinIsStale(p, n.config);
  });
}
