/**
 * A template's picture, drawn from its own nodes and edges: each node a box in its kind's
 * colour (teams as outlines holding their members), each edge a line between box centres,
 * scaled into a small view box. Pure, so that a flow of any shape gives a sane picture.
 */
import type { KindRegistry } from '@switchboard/nodes';

export interface ThumbBox {
  id: string;
  x: number;
  y: number;
  width: number;
  height: number;
  color: string;
  group: boolean;
}

export interface ThumbLine {
  id: string;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

export interface Thumbnail {
  viewBox: string;
  boxes: ThumbBox[];
  lines: ThumbLine[];
}

interface RawNode {
  id?: unknown;
  kind?: unknown;
  parent?: unknown;
  position?: { x?: unknown; y?: unknown };
  size?: { width?: unknown; height?: unknown };
}

const num = (v: unknown, d: number) => (typeof v === 'number' && Number.isFinite(v) ? v : d);

export function thumbnail(flow: unknown, registry: KindRegistry): Thumbnail {
  const f = (flow ?? {}) as { nodes?: unknown; edges?: unknown };
  const nodes = (Array.isArray(f.nodes) ? f.nodes : []) as RawNode[];
  const edges = (Array.isArray(f.edges) ? f.edges : []) as Array<{
    id?: unknown;
    source?: unknown;
    target?: unknown;
  }>;
  const byId = new Map<string, RawNode>();
  for (const n of nodes) if (typeof n?.id === 'string') byId.set(n.id, n);
  // Members are placed relative to their team.
  const abs = (n: RawNode, depth = 0): { x: number; y: number } => {
    const own = { x: num(n.position?.x, 0), y: num(n.position?.y, 0) };
    const parent = typeof n.parent === 'string' ? byId.get(n.parent) : undefined;
    if (!parent || depth > 20) return own;
    const p = abs(parent, depth + 1);
    return { x: own.x + p.x, y: own.y + p.y };
  };
  const boxes: ThumbBox[] = [];
  const centre = new Map<string, { x: number; y: number }>();
  for (const [id, n] of byId) {
    const def = registry.get(String(n.kind));
    const fallback = def?.display.size ?? { width: 180, height: 56 };
    const width = num(n.size?.width, fallback.width);
    const height = num(n.size?.height, fallback.height);
    const { x, y } = abs(n);
    boxes.push({
      id,
      x,
      y,
      width,
      height,
      color: def?.display.color ?? '#64748b',
      group: !!def?.display.group,
    });
    centre.set(id, { x: x + width / 2, y: y + height / 2 });
  }
  // Teams first, so that their members are drawn over them.
  boxes.sort((a, b) => Number(b.group) - Number(a.group));
  const lines: ThumbLine[] = [];
  for (const e of edges) {
    const a = centre.get(String(e?.source));
    const b = centre.get(String(e?.target));
    if (a && b) lines.push({ id: String(e.id), x1: a.x, y1: a.y, x2: b.x, y2: b.y });
  }
  if (boxes.length === 0) return { viewBox: '0 0 100 60', boxes, lines };
  const minX = Math.min(...boxes.map((b) => b.x));
  const minY = Math.min(...boxes.map((b) => b.y));
  const maxX = Math.max(...boxes.map((b) => b.x + b.width));
  const maxY = Math.max(...boxes.map((b) => b.y + b.height));
  const pad = 20;
  return {
    viewBox: `${minX - pad} ${minY - pad} ${maxX - minX + 2 * pad} ${maxY - minY + 2 * pad}`,
    boxes,
    lines,
  };
}

/** A template's purpose in one line: the first sentence of its description. */
export function purposeOf(description: string | undefined, max = 120): string {
  if (!description) return '';
  const first = /^(.+?[.!?])(\s|$)/s.exec(description.trim())?.[1] ?? description.trim();
  const line = first.replace(/\s+/g, ' ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
