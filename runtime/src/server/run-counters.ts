/**
 * A run's index entry follows its log: status, lastSeq and counters are taken from durable
 * events only, so the API never reports what the disk does not hold; and a resumed run, which
 * replays the turns after its checkpoint, marks their events `replayed` so a turn, its tokens
 * and its tool calls are counted once however often the run resumed.
 */
import type { RunEvent } from '@switchboard/schemas';
import type { RunCounters, RunRecord } from '../store/catalog.js';

/** `replayed` is not in the event schema's named fields; events allow additional ones. */
export type Replayable = RunEvent & { replayed?: boolean };

export const isReplayed = (ev: RunEvent): boolean => (ev as Replayable).replayed === true;

export function zeroCounters(): RunCounters {
  return { turns: 0, promptTokens: 0, completionTokens: 0, toolCalls: 0 };
}

/** Adds one event of the run itself (not of a nested run, not a replay) to the counters. */
export function count(c: RunCounters, runId: string, ev: RunEvent): void {
  if (ev.runId !== runId || isReplayed(ev)) return;
  if (ev.type === 'turn.completed') {
    c.turns++;
    c.promptTokens += ev.usage.promptTokens;
    c.completionTokens += ev.usage.completionTokens;
  } else if (ev.type === 'tool.called') c.toolCalls++;
}

/** The counters of a whole log. */
export function countLog(runId: string, events: readonly RunEvent[]): RunCounters {
  const c = zeroCounters();
  for (const ev of events) count(c, runId, ev);
  return c;
}

export function recount(rec: RunRecord, events: readonly RunEvent[]): void {
  rec.counters = countLog(rec.id, events);
}

/**
 * Marks the events a resumed run emits again: the log already holds, after the checkpoint the
 * run resumes from, the events of the turns it replays. The engine replays them in the same
 * order, so the first N events of each type after the resume (N: how many of that type the log
 * holds after the checkpoint) are the replay. Run-level events (`run.*`) are never replays.
 */
export class ReplayMarker {
  private readonly left = new Map<string, number>();

  constructor(logEvents: readonly RunEvent[], checkpointSeq: number) {
    for (const ev of logEvents) {
      if (ev.seq <= checkpointSeq || ev.type.startsWith('run.') || isReplayed(ev)) continue;
      this.left.set(ev.type, (this.left.get(ev.type) ?? 0) + 1);
    }
  }

  get pending(): boolean {
    return this.left.size > 0;
  }

  /** The event as it goes to the log: a copy marked `replayed` when it repeats one already there. */
  mark(ev: RunEvent): RunEvent {
    const n = this.left.get(ev.type);
    if (n === undefined) return ev;
    if (n <= 1) this.left.delete(ev.type);
    else this.left.set(ev.type, n - 1);
    return { ...ev, replayed: true } as unknown as RunEvent;
  }
}
