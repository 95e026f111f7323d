/** Applies the legible fit (legibleFit.ts) to a React Flow instance and says where the minimap may go. */
import type { ReactFlowInstance } from '@xyflow/react';
import type { SbEdge, SbNode } from '../store/editorStore.js';
import { type FitResult, intersects, legibleViewport, type Rect } from './legibleFit.js';

export const MINIMAP = { width: 140, height: 96, margin: 15 };
export type MinimapCorner = 'bottom-right' | 'top-right' | 'top-left';

type Rf = ReactFlowInstance<SbNode, SbEdge>;

function canvasSize(): { width: number; height: number } | undefined {
  const box = document.querySelector('.sb-canvas')?.getBoundingClientRect();
  return box && box.width > 0 && box.height > 0 ? { width: box.width, height: box.height } : undefined;
}

/** The start node's box in flow coordinates (the first start node when there are several). */
export function startRect(rf: Rf): Rect | undefined {
  const start = rf.getNodes().find((n) => n.data.kind === 'start');
  const n = start && rf.getInternalNode(start.id);
  if (!n) return undefined;
  return {
    x: n.internals.positionAbsolute.x,
    y: n.internals.positionAbsolute.y,
    width: n.measured.width ?? n.initialWidth ?? 0,
    height: n.measured.height ?? n.initialHeight ?? 0,
  };
}

/**
 * Above this many nodes the canvas renders only the nodes in view; the others keep the size the
 * store estimated for them (store/estimates.ts) until they are scrolled into view.
 */
export const VIRTUALIZE_ABOVE = 200;

/**
 * Whether every node has its size measured (right after a load, some may not yet); on a flow
 * large enough to render only what is in view, an estimated size counts.
 */
export function allMeasured(rf: Rf): boolean {
  const nodes = rf.getNodes();
  const estimatesOk = nodes.length > VIRTUALIZE_ABOVE;
  return nodes.every((n) => {
    const m = rf.getInternalNode(n.id)?.measured;
    return (!!m?.width && !!m.height) || (estimatesOk && !!n.initialWidth && !!n.initialHeight);
  });
}

/** Fits the flow as legibleViewport says; undefined when there is nothing to fit yet. */
export async function fitLegibly(rf: Rf, duration = 0): Promise<FitResult | undefined> {
  const nodes = rf.getNodes();
  const view = canvasSize();
  if (nodes.length === 0 || !view || !allMeasured(rf)) return undefined;
  const fit = legibleViewport(rf.getNodesBounds(nodes), startRect(rf), view);
  await rf.setViewport({ x: fit.x, y: fit.y, zoom: fit.zoom }, duration ? { duration } : undefined);
  return fit;
}

/** The first corner where the minimap leaves the start node uncovered. */
export function minimapCorner(
  rf: Rf,
  vp: { x: number; y: number; zoom: number } = rf.getViewport(),
): MinimapCorner {
  const view = canvasSize();
  const s = startRect(rf);
  if (!view || !s) return 'bottom-right';
  const onScreen = {
    x: vp.x + s.x * vp.zoom,
    y: vp.y + s.y * vp.zoom,
    width: s.width * vp.zoom,
    height: s.height * vp.zoom,
  };
  const { width, height, margin } = MINIMAP;
  const right = view.width - margin - width;
  const corners: Array<[MinimapCorner, Rect]> = [
    ['bottom-right', { x: right, y: view.height - margin - height, width, height }],
    ['top-right', { x: right, y: margin, width, height }],
    ['top-left', { x: margin, y: margin, width, height }],
  ];
  return corners.find(([, r]) => !intersects(onScreen, r))?.[0] ?? 'bottom-right';
}
