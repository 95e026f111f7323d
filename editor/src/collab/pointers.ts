/**
 * What a person's awareness state says about where they are on the canvas, in flow
 * coordinates (the same in every browser, whatever its window size or zoom):
 * - `cursor: { x, y } | null` — the mouse pointer over the canvas (null when it left);
 * - `view: { x, y, zoom }` — the flow point at the centre of their canvas and their zoom, so
 *   that someone following them sees what they see.
 * Awareness comes from other browsers: only finite, bounded numbers are taken.
 */
export interface FlowPoint {
  x: number;
  y: number;
}

export interface FlowView extends FlowPoint {
  zoom: number;
}

export const CURSOR_FIELD = 'cursor';
export const VIEW_FIELD = 'view';
/** How often a moving pointer or view is published at most (awareness goes to everyone). */
export const POINTER_INTERVAL_MS = 80;

const LIMIT = 1e7;
const coord = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && Math.abs(v) < LIMIT;

export function readCursor(v: unknown): FlowPoint | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const { x, y } = v as Record<string, unknown>;
  return coord(x) && coord(y) ? { x, y } : undefined;
}

export function readView(v: unknown): FlowView | undefined {
  const p = readCursor(v);
  const zoom = (v as { zoom?: unknown } | undefined)?.zoom;
  if (!p || typeof zoom !== 'number' || !(zoom > 0.01 && zoom <= 10)) return undefined;
  return { ...p, zoom };
}

/** Rounds to what is worth sending (a tenth of a flow unit, zoom to 1/1000). */
export function roundPoint(p: FlowPoint): FlowPoint {
  return { x: Math.round(p.x * 10) / 10, y: Math.round(p.y * 10) / 10 };
}

/** Calls `send` at most every `ms`, always with the latest value (the last one is never lost). */
export function throttled<T>(
  send: (v: T) => void,
  ms = POINTER_INTERVAL_MS,
): ((v: T) => void) & {
  cancel(): void;
} {
  let last = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let pending: { v: T } | undefined;
  const flush = () => {
    timer = undefined;
    if (!pending) return;
    const { v } = pending;
    pending = undefined;
    last = Date.now();
    send(v);
  };
  const fn = (v: T) => {
    pending = { v };
    if (timer) return;
    const wait = Math.max(0, last + ms - Date.now());
    if (wait === 0) flush();
    else timer = setTimeout(flush, wait);
  };
  return Object.assign(fn, {
    cancel() {
      clearTimeout(timer);
      timer = undefined;
      pending = undefined;
    },
  });
}
