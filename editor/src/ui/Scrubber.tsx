/**
 * The timeline of the run on the canvas: dragging the playhead (or the arrow keys on it, one
 * event a step) shows the canvas, counters, traces and transcript as of that event; "Live"
 * returns to the run as it goes.
 */
import { useSyncExternalStore } from 'react';
import type { RunSession } from '../run/runSession.js';

export function Scrubber({ runs }: { runs: RunSession }) {
  const snap = useSyncExternalStore(runs.subscribe, runs.getSnapshot);
  const events = runs.events();
  if (snap.logSize === 0 || events.length === 0) return null;
  const first = events[0]!.seq;
  const last = events.at(-1)!.seq;
  const at = snap.scrub ?? last;
  const here = events.find((e) => e.seq === at) ?? events.at(-1)!;
  return (
    <div
      className="sb-scrubber"
      data-testid="run-scrubber-bar"
      data-live={snap.scrub === undefined || undefined}
    >
      <input
        type="range"
        data-testid="run-scrubber"
        aria-label="Run timeline: the event the canvas shows"
        min={first}
        max={last}
        step={1}
        value={at}
        onChange={(e) => runs.scrubTo(Number(e.target.value))}
      />
      <span className="sb-scrubber-label" data-testid="run-scrubber-label" data-seq={at}>
        event {at} of {last} · {here.type}
        {here.nodeId ? ` · ${here.nodeId}` : ''}
      </span>
      <button
        type="button"
        data-testid="btn-scrub-live"
        disabled={snap.scrub === undefined}
        onClick={() => runs.scrubTo(undefined)}
        title="Back to the run as it is now"
      >
        Live
      </button>
    </div>
  );
}
