/**
 * Keeps edge labels off nodes and off each other: after the flow changes (not while a node is
 * dragged), samples each labelled edge's drawn path, measures its text and asks `placeLabels`
 * for a spot along the edge. Each edge reads only its own spot, together with the end points
 * the spot was computed for; an edge whose ends have moved since draws its label at its middle
 * until the next placement.
 */
import type { ReactFlowInstance } from '@xyflow/react';
import { useEffect, useRef } from 'react';
import { type LabelRequest, pathPoints, placeLabels, type Rect } from '../model/labelPlacement.js';
import type { SbEdge, SbNode } from '../store/editorStore.js';
import { KeyedStore } from '../store/keyed.js';
import { BENCH_MODE } from './bench.js';

/** A label's widest box (px); longer captions are truncated, the full text on hover. */
export const LABEL_MAX_WIDTH = 160;
export const LABEL_HEIGHT = 18;
/** Horizontal padding plus border of a label box. */
const LABEL_CHROME = 12;
/** The part of a team's box its face draws on (kind and name): labels keep off it. */
const TEAM_HEAD = 44;

export interface Spot {
  x: number;
  y: number;
  width: number;
  /** The edge's end points when the spot was computed. */
  sx: number;
  sy: number;
  tx: number;
  ty: number;
}

/** `x|y|width|sx|sy|tx|ty`, a string so that an unchanged spot does not re-render the edge. */
export const labelSpots = new KeyedStore<string>('');

export function parseSpot(s: string): Spot | undefined {
  if (!s) return undefined;
  const [x, y, width, sx, sy, tx, ty] = s.split('|').map(Number) as number[];
  return { x: x!, y: y!, width: width!, sx: sx!, sy: sy!, tx: tx!, ty: ty! };
}

let measureCtx: CanvasRenderingContext2D | null | undefined;
function textWidth(text: string, font: string): number {
  measureCtx ??= document.createElement('canvas').getContext('2d');
  if (!measureCtx) return text.length * 6.5;
  measureCtx.font = font;
  return measureCtx.measureText(text).width;
}

type Rf = ReactFlowInstance<SbNode, SbEdge>;

function obstacles(rf: Rf): Rect[] {
  const out: Rect[] = [];
  for (const n of rf.getNodes()) {
    const i = rf.getInternalNode(n.id);
    const w = i?.measured.width;
    const h = i?.measured.height;
    if (!i || !w || !h) continue;
    const { x, y } = i.internals.positionAbsolute;
    // A team holds its members' edges: only its head is in the way.
    out.push({ x, y, width: w, height: n.type === 'group' ? Math.min(h, TEAM_HEAD) : h });
  }
  return out;
}

function samplePath(canvas: Element, id: string): Array<{ x: number; y: number }> {
  const path = canvas.querySelector<SVGPathElement>(
    `[data-testid="rf__edge-${CSS.escape(id)}"] path.react-flow__edge-path`,
  );
  return path ? pathPoints(path.getAttribute('d') ?? '') : [];
}

/**
 * What the placement depends on: each labelled edge's caption and ends, each node's box. Edits
 * that change none of it (typing a prompt) cost this string, not a new placement.
 */
export function geometryKey(rf: Rf): string {
  const parts: string[] = [];
  for (const e of rf.getEdges())
    if (e.data?.caption) parts.push(`${e.id}\u0000${e.data.caption}\u0000${e.source}\u0000${e.target}`);
  for (const n of rf.getNodes()) {
    const i = rf.getInternalNode(n.id);
    if (!i) continue;
    const p = i.internals.positionAbsolute;
    parts.push(`${n.id}\u0000${p.x},${p.y},${i.measured.width},${i.measured.height}`);
  }
  return parts.join('\u0001');
}

/** Computes every label's spot now (from what the canvas draws); whether every label got one. */
export function layoutEdgeLabels(rf: Rf, canvas: Element): boolean {
  const font = `11px ${getComputedStyle(canvas).fontFamily || 'system-ui'}`;
  const requests: LabelRequest[] = [];
  let labelled = 0;
  for (const e of rf.getEdges()) {
    const caption = e.data?.caption;
    if (!caption) continue;
    labelled++;
    const points = samplePath(canvas, e.id);
    if (points.length < 2) continue;
    const width = Math.min(LABEL_MAX_WIDTH, Math.ceil(textWidth(caption, font)) + LABEL_CHROME);
    requests.push({ id: e.id, points, width, height: LABEL_HEIGHT });
  }
  const placed = placeLabels(requests, obstacles(rf));
  const next = new Map<string, string>();
  for (const r of requests) {
    const p = placed.get(r.id);
    if (!p) continue;
    const a = r.points[0]!;
    const b = r.points[r.points.length - 1]!;
    const round = (v: number) => Math.round(v * 10) / 10;
    next.set(r.id, [p.x, p.y, p.width, a.x, a.y, b.x, b.y].map(round).join('|'));
  }
  labelSpots.replaceAll(next);
  return next.size === labelled;
}

/** Re-places the labels shortly after the flow's nodes or edges change, unless a drag is on. */
export function useEdgeLabelLayout(
  rf: Rf,
  box: React.RefObject<HTMLDivElement | null>,
  nodes: SbNode[],
  edges: SbEdge[],
  ready: boolean,
): void {
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const placedFor = useRef('');
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new edges array (captions, ends) is what asks for a new placement
  useEffect(() => {
    if (!ready || nodes.some((n) => n.dragging)) return;
    clearTimeout(timer.current);
    // After React Flow has drawn the new paths.
    timer.current = setTimeout(() => {
      if (!box.current) return;
      const key = geometryKey(rf);
      if (key === placedFor.current) return;
      const t0 = performance.now();
      // An edge not drawn yet (or outside a virtualised view) gets its spot on a later pass.
      placedFor.current = layoutEdgeLabels(rf, box.current) ? key : '';
      if (BENCH_MODE)
        (window as { __SB_LABEL_MS__?: number[] }).__SB_LABEL_MS__?.push(performance.now() - t0);
    }, 60);
    return () => clearTimeout(timer.current);
  }, [rf, box, nodes, edges, ready]);
}
