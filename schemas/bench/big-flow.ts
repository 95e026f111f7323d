/**
 * A large, valid flow for benchmarks: teams of agents chained by handovers, with tools,
 * observers, deciders and delegations, sized to exact node and edge counts. Deterministic.
 */
import type { Flow, FlowEdgeT, FlowNodeT } from '../src/index.js';

export function bigFlow(nodeCount = 5000, edgeCount = 10000): Flow {
  const nodes: FlowNodeT[] = [];
  const edges: FlowEdgeT[] = [];
  const at = (i: number) => ({ x: (i % 50) * 220, y: Math.floor(i / 50) * 140 });
  const node = (id: string, kind: string, config: Record<string, unknown>, parent?: string) => {
    const n: FlowNodeT = { id, kind, position: at(nodes.length), config };
    if (parent) n.parent = parent;
    nodes.push(n);
    return id;
  };
  const edge = (
    kind: FlowEdgeT['kind'],
    source: string,
    target: string,
    config?: Record<string, unknown>,
  ) => {
    const e: FlowEdgeT = { id: `e${edges.length}`, kind, source, target };
    if (config) e.config = config;
    edges.push(e);
  };
  const agent = (id: string, parent?: string) =>
    node(
      id,
      'agent',
      {
        role: `Worker ${id}`,
        model: 'default',
        prompt: [
          { text: 'You are a careful worker. Task: {{task}}' },
          { text: 'Earlier: {{summary}}', when: { path: 'state.phase', op: 'eq', value: 'review' } },
        ],
        memory: 'summary',
      },
      parent,
    );

  // Per team: one team, 12 agents, 2 tools, 1 observer, 1 decider = 17 nodes.
  const perTeam = 17;
  const teamCount = Math.floor((nodeCount - 2) / perTeam);
  const start = node('start', 'start', {});
  const teams: string[] = [];
  const agents: string[] = [];
  let prev = start;
  for (let t = 0; t < teamCount; t++) {
    const team = node(`team${t}`, 'team', {
      mode: 'handover',
      entry: `t${t}a0`,
      termination: { maxTurns: 40 },
    });
    teams.push(team);
    const members: string[] = [];
    for (let a = 0; a < 12; a++) members.push(agent(`t${t}a${a}`, team));
    agents.push(...members);
    const decider = node(
      `t${t}d`,
      'decider',
      {
        strategy: 'rules',
        rules: [
          { when: { path: 'last.content', op: 'contains', value: 'again' }, to: `e${edges.length + 11}` },
        ],
        default: 'done',
      },
      team,
    );
    for (let a = 0; a < 11; a++)
      edge('handover', members[a]!, members[a + 1]!, { context: { mode: 'lastN', n: 4 } });
    edge('handover', decider, members[0]!);
    edge('handover', members[11]!, decider);
    for (let k = 0; k < 2; k++) {
      const tool = node(`t${t}tool${k}`, 'tool', { server: k === 0 ? 'docs' : 'fs' }, team);
      for (let a = k * 6; a < k * 6 + 6; a++) edge('tools', tool, members[a]!);
    }
    const obs = node(
      `t${t}obs`,
      'observer',
      { type: 'summarizer', when: 'after', every: 6, model: 'default' },
      team,
    );
    edge('observe', obs, team);
    edge('handover', prev, team, { briefing: 'Continue with {{task}}' });
    prev = team;
  }
  while (nodes.length < nodeCount - 1) {
    const id = agent(`x${nodes.length}`);
    agents.push(id);
    edge('handover', prev, id);
    prev = id;
  }
  const end = node('end', 'end', { output: 'last' });
  edge('handover', prev, end);
  // Fill with delegations: agent → a later team, so no handover cycles appear.
  let i = 0;
  while (edges.length < edgeCount) {
    const a = agents[(i * 7919) % agents.length]!;
    const team = teams[(i * 104729) % teams.length]!;
    edge('delegate', a, team, { description: 'Ask this team' });
    i++;
  }
  return {
    $schema: '../schemas/flow.schema.json',
    version: 1,
    id: 'bench',
    name: `Benchmark flow (${nodes.length} nodes, ${edges.length} edges)`,
    models: { default: { provider: 'scripted', script: [] } },
    mcpServers: { docs: { builtin: 'documents' }, fs: { builtin: 'filesystem' } },
    nodes,
    edges,
  };
}
