/**
 * Where the view goes when a flow opens or the user asks to fit: the whole flow when it fits at a
 * readable zoom, else a readable zoom centred on the start node (the minimap finds the rest).
 * Pure arithmetic, so that the rule is tested without a browser.
 */

/** Node titles are 12 px; at this zoom they render at 11 px or more. */
export const TITLE_PX = 12;
export const MIN_FIT_ZOOM = 0.92;
/** A small flow is not blown up past this. */
export const MAX_FIT_ZOOM = 1.25;

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface FitResult {
  x: number;
  y: number;
  zoom: number;
  /** The flow is larger than the view at the readable zoom: only part of it shows. */
  overflows: boolean;
}

/**
 * @param bounds all nodes, in flow coordinates
 * @param start the start node, in flow coordinates (the view centres on it when the flow overflows)
 * @param view the canvas size in screen pixels
 * @param padding screen pixels kept free on each side when the flow fits
 */
export function legibleViewport(
  bounds: Rect,
  start: Rect | undefined,
  view: { width: number; height: number },
  padding = 32,
): FitResult {
  const usableW = Math.max(view.width - 2 * padding, 1);
  const usableH = Math.max(view.height - 2 * padding, 1);
  const fit = Math.min(
    usableW / Math.max(bounds.width, 1),
    usableH / Math.max(bounds.height, 1),
    MAX_FIT_ZOOM,
  );
  const overflows = fit < MIN_FIT_ZOOM;
  const zoom = overflows ? MIN_FIT_ZOOM : fit;
  const focus = overflows && start ? start : bounds;
  const cx = focus.x + focus.width / 2;
  const cy = focus.y + focus.height / 2;
  return { x: view.width / 2 - cx * zoom, y: view.height / 2 - cy * zoom, zoom, overflows };
}

/** Whether two screen rectangles overlap. */
export function intersects(a: Rect, b: Rect): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}
