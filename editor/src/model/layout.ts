/**
 * Auto-layout with ELK's layered algorithm. Teams are laid out as compound nodes, so members
 * stay inside their team and the team is sized around them; positions of members come back
 * relative to their team, as the flow document keeps them.
 */
import type { Flow } from '@switchboard/schemas';
import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js';

export type Box = { x: number; y: number; width?: number; height?: number };

export interface LayoutInput {
  flow: Flow;
  sizeOf(id: string): { width: number; height: number };
  isGroup(id: string): boolean;
}

const ROOT_OPTIONS = {
  'elk.algorithm': 'layered',
  'elk.direction': 'RIGHT',
  'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
  'elk.layered.spacing.nodeNodeBetweenLayers': '80',
  'elk.spacing.nodeNode': '48',
  'elk.layered.nodePlacement.strategy': 'BRANDES_KOEPF',
};

export function toElkGraph(input: LayoutInput): ElkNode {
  const { flow } = input;
  const ids = new Set(flow.nodes.map((n) => n.id));
  const elk = new Map<string, ElkNode>();
  for (const n of flow.nodes) {
    const group = input.isGroup(n.id);
    const size = input.sizeOf(n.id);
    const node: ElkNode = { id: n.id, children: [] };
    if (group) node.layoutOptions = { 'elk.padding': '[top=56,left=32,bottom=32,right=32]' };
    else {
      node.width = size.width;
      node.height = size.height;
    }
    elk.set(n.id, node);
  }
  const root: ElkNode = { id: '__root__', layoutOptions: ROOT_OPTIONS, children: [], edges: [] };
  for (const n of flow.nodes) {
    const parent =
      n.parent !== undefined && ids.has(n.parent) && input.isGroup(n.parent) ? elk.get(n.parent)! : root;
    parent.children!.push(elk.get(n.id)!);
  }
  // An empty team still needs a size.
  for (const n of flow.nodes)
    if (input.isGroup(n.id) && elk.get(n.id)!.children!.length === 0) {
      const s = input.sizeOf(n.id);
      Object.assign(elk.get(n.id)!, { width: s.width, height: s.height });
    }
  const edges: ElkExtendedEdge[] = flow.edges
    .filter((e) => ids.has(e.source) && ids.has(e.target) && e.source !== e.target)
    .map((e) => ({ id: e.id, sources: [e.source], targets: [e.target] }));
  root.edges = edges;
  return root;
}

export function fromElkGraph(graph: ElkNode): Map<string, Box> {
  const out = new Map<string, Box>();
  const walk = (n: ElkNode) => {
    for (const c of n.children ?? []) {
      const box: Box = { x: c.x ?? 0, y: c.y ?? 0 };
      if (c.children && c.children.length > 0) {
        box.width = c.width;
        box.height = c.height;
      }
      out.set(c.id, box);
      walk(c);
    }
  };
  walk(graph);
  return out;
}

/** Lays the flow out; returns the new box of every node (members relative to their team). */
export async function autoLayout(input: LayoutInput): Promise<Map<string, Box>> {
  const { default: ELK } = await import('elkjs/lib/elk.bundled.js');
  const elk = new ELK();
  const result = await elk.layout(toElkGraph(input));
  return fromElkGraph(result);
}
