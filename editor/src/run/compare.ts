/**
 * Two runs of a flow side by side: which nodes each took, and per node the difference in
 * output, tokens and time. Pure, from the two logs; the same counters as the node faces.
 */
import { type NodeSummary, type PricedModel, type RunEvent, summarizeNodes } from '@switchboard/schemas/core';

export type Side = 'a' | 'b' | 'both';

export interface CompareNode {
  nodeId: string;
  side: Side;
  a?: NodeSummary;
  b?: NodeSummary;
  /** The last message each run's node wrote. */
  outputA?: string;
  outputB?: string;
}

export interface Comparison {
  a: string;
  b: string;
  nodes: CompareNode[];
}

function outputs(events: readonly RunEvent[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of events)
    if (e.type === 'message' && e.nodeId !== undefined && e.parentRunId === undefined)
      out.set(e.nodeId, e.message.content);
  return out;
}

/** Nodes that started in the run (its own, not those of delegated runs). */
function path(events: readonly RunEvent[]): Set<string> {
  const s = new Set<string>();
  for (const e of events) if (e.type === 'node.started' && e.parentRunId === undefined) s.add(e.nodeId ?? '');
  return s;
}

export function compareRuns(
  a: { runId: string; events: readonly RunEvent[] },
  b: { runId: string; events: readonly RunEvent[] },
  models: Readonly<Record<string, PricedModel>> = {},
): Comparison {
  const sa = new Map(summarizeNodes(a.events, models).map((n) => [n.nodeId, n]));
  const sb = new Map(summarizeNodes(b.events, models).map((n) => [n.nodeId, n]));
  const pa = path(a.events);
  const pb = path(b.events);
  const oa = outputs(a.events);
  const ob = outputs(b.events);
  const ids = [...new Set([...sa.keys(), ...sb.keys()])];
  const nodes: CompareNode[] = [];
  for (const id of ids) {
    const inA = pa.has(id) || sa.has(id);
    const inB = pb.has(id) || sb.has(id);
    const n: CompareNode = { nodeId: id, side: inA && inB ? 'both' : inA ? 'a' : 'b' };
    const x = sa.get(id);
    const y = sb.get(id);
    if (x) n.a = x;
    if (y) n.b = y;
    const ox = oa.get(id);
    const oy = ob.get(id);
    if (ox !== undefined) n.outputA = ox;
    if (oy !== undefined) n.outputB = oy;
    nodes.push(n);
  }
  return { a: a.runId, b: b.runId, nodes };
}
