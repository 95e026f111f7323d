/** Small builders for test flows: nodes at dummy positions, edges with generated ids. */
import type { Flow, FlowEdgeT, FlowNodeT } from '@switchboard/schemas';

let pos = 0;
export function node(
  id: string,
  kind: string,
  config: Record<string, unknown> = {},
  extra: Partial<FlowNodeT> = {},
): FlowNodeT {
  pos += 10;
  return { id, kind, position: { x: pos, y: 0 }, config, ...extra };
}

export function agent(
  id: string,
  config: Record<string, unknown> = {},
  extra: Partial<FlowNodeT> = {},
): FlowNodeT {
  return node(
    id,
    'agent',
    { role: `${id} role`, model: 'default', prompt: [{ text: `You are ${id}. Task: {{task}}` }], ...config },
    extra,
  );
}

export function edge(
  source: string,
  target: string,
  kind: FlowEdgeT['kind'] = 'handover',
  config?: Record<string, unknown>,
  id?: string,
): FlowEdgeT {
  const e: FlowEdgeT = { id: id ?? `${source}-${target}`, kind, source, target };
  if (config) e.config = config;
  return e;
}

export function flow(
  nodes: FlowNodeT[],
  edges: FlowEdgeT[],
  script: unknown[] = [],
  extra: Partial<Flow> = {},
): Flow {
  return {
    version: 1,
    id: 'test-flow',
    name: 'Test flow',
    models: { default: { provider: 'scripted', script } },
    nodes,
    edges,
    ...extra,
  };
}

/** start → a1 → … → aN → end, each agent answering from a fallback entry. */
export function chain(n: number, extraAgent: Record<string, unknown> = {}): Flow {
  const nodes: FlowNodeT[] = [node('start', 'start')];
  const edges: FlowEdgeT[] = [];
  let prev = 'start';
  for (let i = 1; i <= n; i++) {
    const id = `a${i}`;
    nodes.push(agent(id, extraAgent));
    edges.push(edge(prev, id));
    prev = id;
  }
  nodes.push(node('end', 'end'));
  edges.push(edge(prev, 'end'));
  return flow(nodes, edges, [{ fallback: true, text: 'ok' }]);
}
