/**
 * The run counters on a node's face (turns, tokens in/out, cost, time, failures) and the reply it
 * is generating, live. A component of its own: it subscribes to the node's counters, so a counter
 * update re-renders this line, not the face. Updates are paced (`FramePacer`): when a fan-out
 * changes a hundred nodes in one frame, a share of them is drawn each frame, every one with its
 * latest counters, instead of all of them in one long frame.
 */
import type { NodeSummary } from '@switchboard/schemas/core';
import { type CSSProperties, memo, useMemo, useSyncExternalStore } from 'react';
import type { KeyedStore } from '../store/keyed.js';
import { useEditor } from './context.js';
import { FramePacer } from './framePacer.js';

export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function formatCost(c: number): string {
  return c >= 0.01 ? `$${c.toFixed(2)}` : `$${c.toPrecision(2)}`;
}

function line(c: NodeSummary): string {
  const parts: string[] = [];
  if (c.turns > 0) parts.push(`${c.turns} turn${c.turns === 1 ? '' : 's'}`);
  if (c.pinned) parts.push(`${c.pinned} pinned`);
  if (c.promptTokens + c.completionTokens > 0)
    parts.push(`${formatTokens(c.promptTokens)} in / ${formatTokens(c.completionTokens)} out`);
  if (c.cost !== undefined) parts.push(formatCost(c.cost));
  parts.push(formatMs(c.elapsedMs));
  if (c.failures > 0) parts.push(`${c.failures} failed`);
  return parts.join(' · ');
}

/**
 * Faces drawn per frame. A face's update costs React's render and the browser's text shaping,
 * layout and paint of its counter and stream lines: about 0.2-0.5 ms on a slow machine.
 */
export const FACES_PER_FRAME = 20;
const pacer = new FramePacer({ perFrame: FACES_PER_FRAME });

/** Characters of the reply kept on the face (the text shaped on each update is at most this long). */
export const STREAM_TAIL = 240;

/** The streamed text a face shows: the end of the reply, marked as cut when it is. */
export function streamTail(text: string): string {
  return text.length > STREAM_TAIL ? `…${text.slice(-STREAM_TAIL)}` : text;
}

/** The node's counters as shown: the store's, drawn when the pacer gives the face its turn. */
function usePacedCounters(counters: KeyedStore<NodeSummary | undefined>, id: string) {
  const [subscribe, get] = useMemo(() => {
    let shown = counters.get(id);
    const subscribe = (notify: () => void) => {
      const show = () => {
        const next = counters.get(id);
        if (Object.is(next, shown)) return;
        shown = next;
        notify();
      };
      const off = counters.subscribe(id, () => pacer.request(show));
      // A change between the first render and this subscription.
      if (!Object.is(counters.get(id), shown)) pacer.request(show);
      return () => {
        off();
        pacer.cancel(show);
      };
    };
    return [subscribe, () => shown] as const;
  }, [counters, id]);
  return useSyncExternalStore(subscribe, get);
}

/** `style` places the line (under its node's face, on the run overlay: RunOverlay.tsx). */
export const NodeCounters = memo(function NodeCounters({ id, style }: { id: string; style?: CSSProperties }) {
  const { store } = useEditor();
  const c = usePacedCounters(store.runState.counters, id);
  if (!c) return null;
  const tail = streamTail(c.streaming);
  return (
    <div className="sb-node-run" style={style}>
      <div
        className={`sb-node-counters${c.failures > 0 ? ' sb-node-counters-failed' : ''}`}
        data-testid={`node-counters-${id}`}
        data-turns={c.turns}
        data-calls={c.calls}
        data-tokens-in={c.promptTokens}
        data-tokens-out={c.completionTokens}
        data-cost={c.cost}
        data-elapsed-ms={c.elapsedMs}
        data-failures={c.failures}
        data-pinned={c.pinned}
        data-status={c.status}
      >
        {line(c)}
      </div>
      {tail && (
        <div className="sb-node-stream" data-testid={`node-stream-${id}`} aria-live="off">
          {tail}
        </div>
      )}
    </div>
  );
});
