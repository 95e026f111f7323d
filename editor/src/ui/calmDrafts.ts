/**
 * The view the run transcript draws. Drafts (the replies nodes are streaming, "typing…") grow a
 * piece at a time; a 100-node fan-out grows a hundred drafts several times a second, and drawing
 * each growth lays the transcript out and paints it every frame. A change that only grows drafts
 * is shown at most every `DRAFT_MS`, with the latest text; any other change (an entry added or
 * closed, a new phase, a scrub) is shown at once, drafts and all.
 */
import { useEffect, useRef, useState } from 'react';
import type { RunView } from '../run/transcript.js';

/** How often growing drafts are drawn in the transcript (the node faces show every piece). */
export const DRAFT_MS = 200;

/** True when `b` differs from `a` only in the text of drafts that `a` shows too. */
export function onlyDraftsGrew(a: RunView, b: RunView): boolean {
  if (a.runId !== b.runId || a.phase !== b.phase || a.dropped !== b.dropped) return false;
  if (a.entries.length !== b.entries.length) return false;
  for (let i = 0; i < a.entries.length; i++) {
    const x = a.entries[i]!;
    const y = b.entries[i]!;
    if (x === y) continue;
    if (x.kind !== 'stream' || y.kind !== 'stream' || x.seq !== y.seq || x.nodeId !== y.nodeId) return false;
  }
  return true;
}

/** `view`, with changes that only grow drafts drawn at most every `ms`. */
export function useCalmDrafts(view: RunView, ms = DRAFT_MS): RunView {
  const shown = useRef(view);
  const due = useRef(false);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const [, wake] = useState(0);
  if (shown.current !== view && (due.current || !onlyDraftsGrew(shown.current, view))) {
    shown.current = view;
    due.current = false;
  }
  useEffect(() => {
    if (shown.current === view || timer.current !== undefined) return;
    timer.current = setTimeout(() => {
      timer.current = undefined;
      due.current = true;
      wake((n) => n + 1);
    }, ms);
  });
  useEffect(() => () => clearTimeout(timer.current), []);
  return shown.current;
}
