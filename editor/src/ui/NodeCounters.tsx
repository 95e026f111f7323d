/**
 * The run counters on a node's face (turns, tokens in/out, cost, time, failures) and the reply it
 * is generating, live. A component of its own: it subscribes to the node's counters, so a counter
 * update re-renders this line, not the face.
 */
import type { NodeSummary } from '@switchboard/schemas/core';
import { memo } from 'react';
import { useEditor, useKeyed } from './context.js';

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

export const NodeCounters = memo(function NodeCounters({ id }: { id: string }) {
  const { store } = useEditor();
  const c = useKeyed(store.runState.counters, id);
  if (!c) return null;
  const tail = c.streaming.length > 240 ? `…${c.streaming.slice(-240)}` : c.streaming;
  // Under the face, out of its layout: a face that grew would be measured and drawn again.
  return (
    <div className="sb-node-run">
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
