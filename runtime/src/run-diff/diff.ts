/**
 * What two runs did, side by side: the path taken (handovers in order), each node's outputs,
 * tokens per node, the end state and output, and time. Runs "agree" when everything but time
 * is the same.
 */
import type { RunEvent } from '@switchboard/schemas';
import { edgesTaken, jsonEqual, nodeOutputs } from '../testing-flows/assert.js';

export interface RunSummary {
  runId: string;
  flowId: string;
  status: string;
  output?: unknown;
  error?: { code: string; message: string };
  path: string[];
  /** Node ids in the order they first started. */
  nodes: string[];
  outputs: Map<string, unknown[]>;
  tokens: Map<string, number>;
  /** Per node, where its pinned turns' output came from (`RUN:TURN`, see ../pins/); absent: it ran live. */
  pinned: Map<string, string[]>;
  totalTokens: number;
  /** Milliseconds from the first to the last event; per node, summed over its activations. */
  ms: number;
  nodeMs: Map<string, number>;
}

export interface Difference {
  what: 'flow' | 'status' | 'output' | 'path' | 'node-output' | 'tokens' | 'pinned';
  node?: string;
  a: unknown;
  b: unknown;
  detail: string;
}

export function summarize(runId: string, events: readonly RunEvent[]): RunSummary {
  const top = events.filter((e) => !e.parentRunId);
  const started = top.find((e) => e.type === 'run.started');
  const end = top.findLast(
    (e) => e.type.startsWith('run.') && e.type !== 'run.started' && e.type !== 'run.resumed',
  );
  const nodes: string[] = [];
  const seen = new Set<string>();
  const tokens = new Map<string, number>();
  const nodeMs = new Map<string, number>();
  const since = new Map<string, number>();
  const pinned = new Map<string, string[]>();
  let total = 0;
  for (const e of events) {
    const id = e.nodeId;
    if (id === undefined) continue;
    if (e.type === 'node.started') {
      if (!seen.has(id)) {
        seen.add(id);
        nodes.push(id);
      }
      since.set(id, e.ts);
    } else if ((e.type === 'node.completed' || e.type === 'node.failed') && since.has(id)) {
      nodeMs.set(id, (nodeMs.get(id) ?? 0) + (e.ts - since.get(id)!));
      since.delete(id);
    } else if (e.type === 'node.pinned' && !e.parentRunId) {
      pinned.set(id, [...(pinned.get(id) ?? []), `${e.fromRun}:${e.fromTurn}`]);
    } else if (e.type === 'model.completed' && e.usage) {
      const n = e.usage.promptTokens + e.usage.completionTokens;
      tokens.set(id, (tokens.get(id) ?? 0) + n);
      total += n;
    }
  }
  const outputs = new Map<string, unknown[]>();
  for (const n of nodes) outputs.set(n, nodeOutputs(events, n));
  const s: RunSummary = {
    runId,
    flowId: started?.type === 'run.started' ? started.flowId : '',
    status: end ? end.type.slice(4) : 'running',
    path: edgesTaken(events),
    nodes,
    outputs,
    tokens,
    pinned,
    totalTokens: total,
    ms: events.length > 0 ? events.at(-1)!.ts - events[0]!.ts : 0,
    nodeMs,
  };
  if (end?.type === 'run.completed') s.output = end.output;
  if (end?.type === 'run.failed') s.error = end.error;
  return s;
}

const brief = (v: unknown): string => {
  const s = v === undefined ? '(none)' : typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v);
  return s.length > 160 ? `${s.slice(0, 160)}…` : s;
};

export function diffRuns(a: RunSummary, b: RunSummary): Difference[] {
  const d: Difference[] = [];
  if (a.flowId !== b.flowId)
    d.push({
      what: 'flow',
      a: a.flowId,
      b: b.flowId,
      detail: `different flows: ${a.flowId} and ${b.flowId}`,
    });
  if (a.status !== b.status)
    d.push({ what: 'status', a: a.status, b: b.status, detail: `ended ${a.status} and ${b.status}` });
  if (!jsonEqual(a.output, b.output))
    d.push({
      what: 'output',
      a: a.output,
      b: b.output,
      detail: `final output ${brief(a.output)} and ${brief(b.output)}`,
    });
  if (!jsonEqual(a.path, b.path)) {
    let i = 0;
    while (i < a.path.length && a.path[i] === b.path[i]) i++;
    d.push({
      what: 'path',
      a: a.path,
      b: b.path,
      detail: `paths part at handover ${i + 1}: ${a.path[i] ?? '(end)'} and ${b.path[i] ?? '(end)'}`,
    });
  }
  const nodes = [...a.nodes, ...b.nodes.filter((n) => !a.outputs.has(n))];
  for (const n of nodes) {
    const oa = a.outputs.get(n) ?? [];
    const ob = b.outputs.get(n) ?? [];
    if (!jsonEqual(oa, ob)) {
      let i = 0;
      while (i < oa.length && i < ob.length && jsonEqual(oa[i], ob[i])) i++;
      d.push({
        what: 'node-output',
        node: n,
        a: oa,
        b: ob,
        detail: `node "${n}" output ${i + 1} (of ${oa.length} and ${ob.length}): ${brief(oa[i])} and ${brief(ob[i])}`,
      });
    }
    const pa = a.pinned.get(n) ?? [];
    const pb = b.pinned.get(n) ?? [];
    if (!jsonEqual(pa, pb)) {
      const how = (p: string[]) => (p.length === 0 ? 'ran live' : `was pinned (${p.join(', ')})`);
      d.push({ what: 'pinned', node: n, a: pa, b: pb, detail: `node "${n}" ${how(pa)} and ${how(pb)}` });
    }
    const ta = a.tokens.get(n) ?? 0;
    const tb = b.tokens.get(n) ?? 0;
    if (ta !== tb)
      d.push({ what: 'tokens', node: n, a: ta, b: tb, detail: `node "${n}" used ${ta} and ${tb} tokens` });
  }
  return d;
}

export function summaryJson(s: RunSummary): Record<string, unknown> {
  return {
    runId: s.runId,
    flowId: s.flowId,
    status: s.status,
    ...(s.output !== undefined ? { output: s.output } : {}),
    ...(s.error ? { error: s.error } : {}),
    path: s.path,
    nodes: s.nodes.map((n) => ({
      node: n,
      outputs: s.outputs.get(n) ?? [],
      tokens: s.tokens.get(n) ?? 0,
      ms: s.nodeMs.get(n) ?? 0,
      ...(s.pinned.has(n) ? { pinned: s.pinned.get(n) } : {}),
    })),
    tokens: s.totalTokens,
    ms: s.ms,
  };
}
