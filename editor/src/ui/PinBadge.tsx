/**
 * The mark of a pinned node on the canvas: the run (and the node's turn there) its output comes
 * from. Stale — the node's config is no longer the one that produced that output — shows a
 * warning; the pin still applies until someone unpins it, here (a click) or in the trace.
 */
import { pinIsStale } from '@switchboard/schemas/core';
import type { PinView } from '../model/api.js';
import { KeyedStore } from '../store/keyed.js';
import { useEditor, useKeyed } from './context.js';

const NO_PINS = new KeyedStore<PinView | undefined>(undefined);

/** `r_mwxg93o6_syAvxvev` → `…syAvxvev`: enough to tell runs apart on a node face. */
function shortRun(runId: string): string {
  return runId.length > 10 ? `…${runId.slice(-8)}` : runId;
}

export function PinBadge({ id, config }: { id: string; config: Record<string, unknown> }) {
  const { runs } = useEditor();
  const pin = useKeyed(runs?.pins.byNode ?? NO_PINS, id);
  if (!pin) return null;
  const stale = pinIsStale(pin, config);
  const label = [
    `Output pinned from run ${pin.fromRun}, turn ${pin.fromTurn}: runs use it instead of calling the model.`,
    stale ? 'Stale: the node changed since that run; the pinned output is still used.' : '',
    pin.problem ?? '',
    'Click to unpin.',
  ]
    .filter(Boolean)
    .join(' ');
  return (
    <button
      type="button"
      className={`sb-node-pin nodrag${stale ? ' sb-node-pin-stale' : ''}`}
      data-testid={`node-pin-${id}`}
      data-from-run={pin.fromRun}
      data-stale={stale || undefined}
      title={label}
      aria-label={label}
      onClick={(e) => {
        e.stopPropagation();
        void runs?.unpin(id);
      }}
    >
      {stale ? '⚠ stale pin' : 'pinned'} {shortRun(pin.fromRun)}:{pin.fromTurn}
    </button>
  );
}
