/**
 * Test and benchmark hooks, on only with `?bench=1`: a count of node component renders
 * (`window.__SB_RENDER_COUNTS__`) and a handle on the store (`window.__SB__`).
 */
import { type Dict, dict } from '@switchboard/schemas/core';
export const BENCH_MODE =
  typeof location !== 'undefined' && new URLSearchParams(location.search).has('bench');

declare global {
  interface Window {
    __SB_RENDER_COUNTS__?: Dict<number>;
    __SB__?: unknown;
  }
}

if (BENCH_MODE) {
  window.__SB_RENDER_COUNTS__ = dict();
  // How long each edge-label placement took (ms).
  (window as { __SB_LABEL_MS__?: number[] }).__SB_LABEL_MS__ = [];
}

export function countRender(id: string): void {
  if (!BENCH_MODE) return;
  const c = window.__SB_RENDER_COUNTS__!;
  c[id] = (c[id] ?? 0) + 1;
}
