/**
 * A large synthetic flow for the benchmark: `nodes` nodes on a grid (start, end, agents, with a
 * tool and a decider now and then) and `edges` edges (a handover chain, then handovers to the
 * next row, then tools grants), all of them legal.
 */
import type { Flow, FlowEdgeT, FlowNodeT } from '@switchboard/schemas';

export function generateFlow(nodes: number, edges: number): Flow {
  const cols = Math.ceil(Math.sqrt(nodes * 2));
  const list: FlowNodeT[] = [];
  const kindAt = (i: number) =>
    i === 0 ? 'start' : i === nodes - 1 ? 'end' : i % 10 === 5 ? 'tool' : i % 10 === 7 ? 'decider' : 'agent';
  for (let i = 0; i < nodes; i++) {
    const kind = kindAt(i);
    const config: Record<string, unknown> =
      kind === 'agent'
        ? { role: `Agent ${i}`, model: 'default', prompt: [{ text: 'Work on {{task}}' }] }
        : kind === 'tool'
          ? { server: 'docs' }
          : kind === 'decider'
            ? { strategy: 'roundRobin' }
            : kind === 'end'
              ? { output: 'last' }
              : {};
    list.push({
      id: `n${i}`,
      kind,
      position: { x: (i % cols) * 240, y: Math.floor(i / cols) * 140 },
      config,
    });
  }
  const flowKinds = new Set(['start', 'agent', 'decider', 'end']);
  const out: FlowEdgeT[] = [];
  const seen = new Set<string>();
  const add = (kind: FlowEdgeT['kind'], s: number, t: number) => {
    const key = `${kind}:${s}:${t}`;
    if (out.length >= edges || seen.has(key) || s === t) return;
    seen.add(key);
    out.push({ id: `e${out.length}`, kind, source: `n${s}`, target: `n${t}` });
  };
  const flowNodes = list
    .map((n, i) => [n, i] as const)
    .filter(([n]) => flowKinds.has(n.kind))
    .map(([, i]) => i);
  for (let k = 0; k + 1 < flowNodes.length; k++)
    if (kindAt(flowNodes[k]!) !== 'end') add('handover', flowNodes[k]!, flowNodes[k + 1]!);
  for (let k = 0; k < flowNodes.length && out.length < edges; k++) {
    const s = flowNodes[k]!;
    const t = flowNodes[Math.min(flowNodes.length - 1, k + Math.max(2, Math.floor(cols / 2)))]!;
    if (kindAt(s) !== 'end' && kindAt(t) !== 'start') add('handover', s, t);
  }
  const agents = list
    .map((n, i) => [n, i] as const)
    .filter(([n]) => n.kind === 'agent')
    .map(([, i]) => i);
  const tools = list
    .map((n, i) => [n, i] as const)
    .filter(([n]) => n.kind === 'tool')
    .map(([, i]) => i);
  for (let k = 0; out.length < edges && k < agents.length * tools.length; k++)
    add('tools', tools[k % tools.length]!, agents[(k * 7) % agents.length]!);
  return {
    version: 1,
    id: `bench-${nodes}`,
    name: `Benchmark ${nodes} nodes`,
    models: { default: { provider: 'scripted' } },
    mcpServers: { docs: { builtin: 'documents' } },
    nodes: list,
    edges: out,
  };
}
