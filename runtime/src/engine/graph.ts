/**
 * A flow compiled for interpretation: nodes by id with their kind definitions, outgoing handover
 * edges, team members, observers, grants and delegates, all indexed once per flow object so the
 * hot path does map lookups only.
 */
import type { Candidate, KindBehavior, KindRegistry, NodeKindDefinition } from '@switchboard/nodes';
import type { Flow, FlowEdgeT, FlowNodeT, HandoverConfigT } from '@switchboard/schemas';

export interface GNode {
  id: string;
  kind: string;
  role: NodeKindDefinition['role'];
  label: string;
  config: Record<string, unknown>;
  parent: string | undefined;
  def: NodeKindDefinition;
  behavior: KindBehavior | undefined;
  /** Outgoing handover edges in document order. */
  out: GEdge[];
  /** Team nodes from the outermost to the direct parent. */
  ancestors: string[];
  /** Observer node ids attached to this node, then to its teams (nearest first). */
  observers: string[];
  /** Delegate edges from this agent. */
  delegates: FlowEdgeT[];
  /** Agents only: the memory policy, resolved once. */
  memory: 'transcript' | 'thread' | 'summary';
}

export interface GEdge {
  id: string;
  source: string;
  target: string;
  label: string | undefined;
  config: HandoverConfigT;
}

export interface Graph {
  flow: Flow;
  nodes: Map<string, GNode>;
  start: GNode;
  /** Team id → active members (not notes, tools or observers), in document order. */
  members: Map<string, GNode[]>;
  /** Team id → the member that runs first. */
  entry: Map<string, string>;
  /** Whether any agent uses thread memory (threads are only tracked then). */
  threads: Set<string>;
  joinCache: Map<string, string | null>;
  /** A node's outgoing choices depend on the flow alone: built on first use, shared by every run. */
  candidates: Map<string, Candidate[]>;
}

const cache = new WeakMap<Flow, WeakMap<KindRegistry, Graph>>();

/** The flow object changed since it was compiled (validated.ts found it): compile it again. */
export function forgetCompiled(flow: Flow): void {
  cache.delete(flow);
}

export class FlowError extends Error {
  override readonly name = 'FlowError';
}

export function compileFlow(flow: Flow, registry: KindRegistry): Graph {
  let byReg = cache.get(flow);
  const hit = byReg?.get(registry);
  if (hit) return hit;
  const nodes = new Map<string, GNode>();
  for (const n of flow.nodes) nodes.set(n.id, makeNode(n, registry));
  for (const n of nodes.values()) {
    let p = n.parent;
    const chain: string[] = [];
    while (p !== undefined && chain.length < 64) {
      chain.unshift(p);
      p = nodes.get(p)?.parent;
    }
    n.ancestors = chain;
  }
  const observeTargets = new Map<string, string[]>();
  for (const e of flow.edges) {
    const s = nodes.get(e.source);
    const t = nodes.get(e.target);
    if (!s || !t) throw new FlowError(`edge "${e.id}" joins a node that does not exist`);
    if (e.kind === 'handover')
      s.out.push({
        id: e.id,
        source: e.source,
        target: e.target,
        label: e.label,
        config: (e.config ?? {}) as HandoverConfigT,
      });
    else if (e.kind === 'delegate') s.delegates.push(e);
    else if (e.kind === 'observe') {
      const l = observeTargets.get(e.target) ?? [];
      l.push(e.source);
      observeTargets.set(e.target, l);
    }
  }
  const members = new Map<string, GNode[]>();
  for (const n of nodes.values()) {
    if (n.parent === undefined) continue;
    if (n.role === 'note' || n.role === 'tool' || n.role === 'observer') continue;
    const l = members.get(n.parent) ?? [];
    l.push(n);
    members.set(n.parent, l);
  }
  const threads = new Set<string>();
  for (const n of nodes.values()) {
    n.observers = [...(observeTargets.get(n.id) ?? [])];
    for (let i = n.ancestors.length - 1; i >= 0; i--)
      n.observers.push(...(observeTargets.get(n.ancestors[i]!) ?? []));
    if (n.memory === 'thread') threads.add(n.id);
  }
  const entry = new Map<string, string>();
  for (const [team, list] of members) {
    const t = nodes.get(team)!;
    const configured = t.config.entry;
    if (typeof configured === 'string' && nodes.get(configured)?.parent === team) {
      entry.set(team, configured);
      continue;
    }
    const ids = new Set(list.map((m) => m.id));
    const incoming = new Set<string>();
    for (const m of list) for (const e of m.out) if (ids.has(e.target)) incoming.add(e.target);
    const roots = list.filter((m) => !incoming.has(m.id) && m.role !== 'decider');
    const first = roots[0] ?? list.find((m) => m.role !== 'decider') ?? list[0];
    if (first) entry.set(team, first.id);
  }
  const starts = [...nodes.values()].filter((n) => n.role === 'start');
  if (starts.length !== 1) throw new FlowError(`a flow needs exactly one start node, found ${starts.length}`);
  const g: Graph = {
    flow,
    nodes,
    start: starts[0]!,
    members,
    entry,
    threads,
    joinCache: new Map(),
    candidates: new Map(),
  };
  if (!byReg) {
    byReg = new WeakMap();
    cache.set(flow, byReg);
  }
  byReg.set(registry, g);
  return g;
}

function makeNode(n: FlowNodeT, registry: KindRegistry): GNode {
  const def = registry.get(n.kind);
  if (!def) throw new FlowError(`node "${n.id}": unknown kind "${n.kind}"`);
  const mem = n.config.memory;
  return {
    id: n.id,
    kind: n.kind,
    role: def.role,
    label: n.label ?? (typeof n.config.name === 'string' ? n.config.name : n.id),
    config: n.config,
    parent: n.parent,
    def,
    behavior: def.behavior,
    out: [],
    ancestors: [],
    observers: [],
    delegates: [],
    memory: mem === 'thread' || mem === 'summary' ? mem : 'transcript',
  };
}

/**
 * Where parallel branches meet: the first node (in breadth-first order from the first branch)
 * that every branch can reach. Branches stop before it; it runs once with the merged results.
 */
export function joinNode(g: Graph, targets: readonly string[]): string | null {
  const key = targets.join('\u0000');
  const hit = g.joinCache.get(key);
  if (hit !== undefined) return hit;
  const reach = targets.map((t) => bfs(g, t));
  let join: string | null = null;
  for (const id of reach[0]!.order) {
    if (id === targets[0]) continue;
    if (reach.every((r, i) => i === 0 || (r.set.has(id) && id !== targets[i]))) {
      join = id;
      break;
    }
  }
  g.joinCache.set(key, join);
  return join;
}

function bfs(g: Graph, from: string): { order: string[]; set: Set<string> } {
  const set = new Set<string>([from]);
  const order = [from];
  for (let i = 0; i < order.length; i++) {
    for (const e of g.nodes.get(order[i]!)?.out ?? []) {
      if (set.has(e.target)) continue;
      set.add(e.target);
      order.push(e.target);
    }
  }
  return { order, set };
}
