/**
 * Copy, paste and duplicate on plain flow JSON: a copied selection takes its nested members and
 * the edges inside it along; a paste renews every id, keeps the inner edges and rewrites config
 * references (a team's `entry`, a decider's edge ids) that pointed inside the selection.
 */
import type { KindRegistry } from '@switchboard/nodes';
import type { Flow, FlowEdgeT, FlowNodeT } from '@switchboard/schemas';
import { idPrefix, newId } from './ids.js';

/** What the clipboard holds; also written to the system clipboard as JSON. */
export interface FlowFragment {
  switchboardFragment: 1;
  nodes: FlowNodeT[];
  edges: FlowEdgeT[];
}

export function isFragment(v: unknown): v is FlowFragment {
  const f = v as FlowFragment | null;
  return !!f && f.switchboardFragment === 1 && Array.isArray(f.nodes) && Array.isArray(f.edges);
}

/** The selected nodes with everything nested in them, and the edges between them. */
export function copyFragment(flow: Flow, nodeIds: Iterable<string>): FlowFragment {
  const picked = new Set(nodeIds);
  let grew = true;
  while (grew) {
    grew = false;
    for (const n of flow.nodes)
      if (n.parent !== undefined && picked.has(n.parent) && !picked.has(n.id)) {
        picked.add(n.id);
        grew = true;
      }
  }
  const nodes = flow.nodes.filter((n) => picked.has(n.id));
  const edges = flow.edges.filter((e) => picked.has(e.source) && picked.has(e.target));
  return { switchboardFragment: 1, nodes: structuredClone(nodes), edges: structuredClone(edges) };
}

function getPath(obj: Record<string, unknown>, path: string[]): unknown {
  let cur: unknown = obj;
  for (const k of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

function setPath(obj: Record<string, unknown>, path: string[], value: unknown): void {
  let cur: Record<string, unknown> = obj;
  for (const k of path.slice(0, -1)) cur = cur[k] as Record<string, unknown>;
  // Paths come from kinds' reference declarations, but the config is a peer's data: never let a
  // key reach a prototype.
  const last = path[path.length - 1]!;
  if (!Object.hasOwn(cur, last)) return;
  Object.defineProperty(cur, last, { value, writable: true, enumerable: true, configurable: true });
}

function remapRefs(
  config: Record<string, unknown>,
  paths: readonly string[],
  map: Map<string, string>,
): void {
  for (const dotted of paths) {
    const path = dotted.split('.');
    const v = getPath(config, path);
    if (typeof v === 'string' && map.has(v)) setPath(config, path, map.get(v));
    else if (Array.isArray(v))
      setPath(
        config,
        path,
        v.map((x) => (typeof x === 'string' ? (map.get(x) ?? x) : x)),
      );
  }
}

/** Decider rules name edge ids in `to` and `default`; they follow their edges. */
function remapDeciderEdges(config: Record<string, unknown>, map: Map<string, string>): void {
  const re = (x: unknown) => (typeof x === 'string' ? (map.get(x) ?? x) : x);
  if (typeof config.default === 'string') config.default = re(config.default);
  if (Array.isArray(config.rules))
    config.rules = config.rules.map((r: Record<string, unknown>) =>
      r && typeof r === 'object' ? { ...r, to: Array.isArray(r.to) ? r.to.map(re) : re(r.to) } : r,
    );
}

/**
 * Makes a fragment ready to insert into `target`: fresh ids, inner edges and references kept,
 * top-level nodes moved by `offset`. A node whose parent is not in the fragment stays in that
 * parent when it exists in `target`, otherwise it lands on the canvas at its position.
 */
export function pasteFragment(
  fragment: FlowFragment,
  target: { nodeIds: Set<string>; edgeIds: Set<string> },
  registry: KindRegistry,
  offset = { x: 40, y: 40 },
): { nodes: FlowNodeT[]; edges: FlowEdgeT[] } {
  const taken = new Set([...target.nodeIds, ...target.edgeIds]);
  const nodeMap = new Map<string, string>();
  for (const n of fragment.nodes) {
    const id = newId(idPrefix(n.kind), taken);
    taken.add(id);
    nodeMap.set(n.id, id);
  }
  const edgeMap = new Map<string, string>();
  for (const e of fragment.edges) {
    const id = newId('e', taken);
    taken.add(id);
    edgeMap.set(e.id, id);
  }
  const nodes = fragment.nodes.map((n) => {
    const copy = structuredClone(n);
    copy.id = nodeMap.get(n.id)!;
    const inside = n.parent !== undefined && nodeMap.has(n.parent);
    if (inside) copy.parent = nodeMap.get(n.parent!);
    else {
      if (n.parent !== undefined && !target.nodeIds.has(n.parent)) delete copy.parent;
      copy.position = { x: n.position.x + offset.x, y: n.position.y + offset.y };
    }
    const def = registry.get(n.kind);
    if (def) {
      remapRefs(copy.config, def.nodeRefs ?? [], nodeMap);
      remapRefs(copy.config, def.edgeRefs ?? [], edgeMap);
      if (def.role === 'decider') remapDeciderEdges(copy.config, edgeMap);
    }
    return copy;
  });
  const edges = fragment.edges
    .filter((e) => nodeMap.has(e.source) && nodeMap.has(e.target))
    .map((e) => ({
      ...structuredClone(e),
      id: edgeMap.get(e.id)!,
      source: nodeMap.get(e.source)!,
      target: nodeMap.get(e.target)!,
    }));
  return { nodes, edges };
}
