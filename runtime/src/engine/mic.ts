/**
 * Who holds the mic (a decider with `grantMic` gives it; a `micGrant` guard lets only the holder
 * speak) is run state; these events put it in the log, so a replay, a late client and the canvas
 * can show who may speak. A new grant releases the previous holder first; leaving the team the
 * holder belongs to releases it.
 */
import type { GNode } from './graph.js';
import type { RunData } from './state.js';

type Emit = (e: Record<string, unknown>) => void;

export function grantMic(d: RunData, to: string, by: string, emit: Emit): void {
  if (d.mic !== undefined) releaseMic(d, `"${by}" granted it to "${to}"`, emit);
  d.mic = to;
  emit({ type: 'mic.granted', nodeId: to, holder: to, by });
}

export function releaseMic(d: RunData, reason: string, emit: Emit): void {
  const holder = d.mic;
  if (holder === undefined) return;
  delete d.mic;
  emit({ type: 'mic.released', nodeId: holder, holder, reason });
}

/** When a team ends, a member of it (at any depth) holding the mic gives it back. */
export function releaseMicLeaving(d: RunData, team: GNode, holderNode: GNode | undefined, emit: Emit): void {
  if (d.mic === undefined || !holderNode?.ancestors.includes(team.id)) return;
  releaseMic(d, `team "${team.id}" ended`, emit);
}
