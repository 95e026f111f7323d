/**
 * Compares the events of a replay with the recorded ones, timestamps and ids aside: `ts` and
 * measured durations are dropped and run ids (of the run and of its nested runs) are numbered
 * by first appearance.
 */
import type { RunEvent } from '@switchboard/schemas';
import { type Difference, firstDifference } from './canonical.js';

export function normalizeEvents(events: readonly RunEvent[]): Record<string, unknown>[] {
  const ids = new Map<string, string>();
  const id = (v: unknown) => {
    if (typeof v !== 'string') return v;
    let n = ids.get(v);
    if (!n) {
      n = `run#${ids.size}`;
      ids.set(v, n);
    }
    return n;
  };
  return events.map((e) => {
    const {
      ts: _ts,
      durationMs: _d,
      elapsedMs: _e,
      latencyMs: _l,
      ...rest
    } = e as RunEvent & Record<string, unknown>;
    const out: Record<string, unknown> = { ...rest, runId: id(rest.runId) };
    // A replay answers from the cassette in place of the recorded provider: which endpoint and
    // model id served a call is not part of the run (what was sent, messages and parameters, is).
    if (rest.type === 'model.request') {
      Reflect.deleteProperty(out, 'provider');
      Reflect.deleteProperty(out, 'modelId');
    }
    if (rest.parentRunId !== undefined) out.parentRunId = id(rest.parentRunId);
    return out;
  });
}

export interface EventComparison {
  same: boolean;
  recorded: number;
  replayed: number;
  /** The first event that differs (0-based index), and where in it. */
  first?: { index: number; recordedType?: string; replayedType?: string; difference: Difference };
}

export function compareEvents(recorded: readonly RunEvent[], replayed: readonly RunEvent[]): EventComparison {
  const a = normalizeEvents(recorded);
  const b = normalizeEvents(replayed);
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = firstDifference(a[i], b[i], `events[${i}]`);
    if (d)
      return {
        same: false,
        recorded: a.length,
        replayed: b.length,
        first: {
          index: i,
          ...(a[i] ? { recordedType: String(a[i]!.type) } : {}),
          ...(b[i] ? { replayedType: String(b[i]!.type) } : {}),
          difference: d,
        },
      };
  }
  return { same: true, recorded: a.length, replayed: b.length };
}
