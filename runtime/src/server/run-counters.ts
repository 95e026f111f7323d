/**
 * A run's index entry follows its log: status, lastSeq and counters are taken from durable
 * events only, so the API never reports what the disk does not hold; and a resumed run, which
 * replays the turns after its checkpoint, marks their events `replayed` so a turn, its tokens
 * and its tool calls are counted once however often the run resumed.
 */
import type { RunEvent } from '@switchboard/schemas';
import type { RunStatus } from '../engine/types.js';
import type { RunCounters, RunRecord } from '../store/catalog.js';

export const FINAL: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled', 'interrupted']);

const ENDS = new Map<string, RunStatus>([
  ['run.completed', 'completed'],
  ['run.failed', 'failed'],
  ['run.cancelled', 'cancelled'],
]);

/**
 * The status a run's own final event ends it with; undefined for any other event (a nested
 * run's end included). The engine emits nothing after it and takes no more commands.
 */
export function endedBy(runId: string, ev: RunEvent): RunStatus | undefined {
  const status = ENDS.get(ev.type);
  return status !== undefined && ev.runId === runId ? status : undefined;
}

export const nowIso = (): string => new Date().toISOString();

export const isReplayed = (ev: RunEvent): boolean => ev.replayed === true;

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
    return { ...ev, replayed: true };
  }
}

/**
 * Applies one durable event to the run's index entry (nothing that is not on disk is ever
 * reported). Returns whether the entry on disk must follow now: only a pause (or its end)
 * changes what recovery does with a run — it resumes paused runs paused and every other live
 * one running — and a final status is written once the log under it is durable (settle). The
 * in-memory index, which the API reads, is current.
 */
export function applyEvent(rec: RunRecord, ev: RunEvent): boolean {
  rec.lastSeq = ev.seq;
  const before = rec.status;
  count(rec.counters, rec.id, ev);
  if (ev.runId !== rec.id) return false; // nested runs only count through the parent
  let changed = true;
  switch (ev.type) {
    case 'run.started':
    case 'run.resumed':
    case 'input.received':
      rec.status = 'running';
      break;
    case 'run.paused':
      rec.status = 'paused';
      break;
    case 'input.requested':
      rec.status = 'waiting';
      break;
    case 'run.completed':
      rec.status = 'completed';
      rec.output = ev.output;
      break;
    case 'run.failed':
      rec.status = 'failed';
      rec.error = { code: ev.error.code, message: ev.error.message };
      break;
    case 'run.cancelled':
      rec.status = 'cancelled';
      break;
    case 'run.interrupted':
      rec.status = 'interrupted';
      rec.error = { code: 'interrupted', message: ev.reason ?? 'interrupted' };
      break;
    default:
      changed = false;
  }
  if (ev.scripted) rec.scripted = true;
  if (changed) {
    rec.updatedAt = nowIso();
    if (FINAL.has(rec.status)) rec.endedAt = rec.updatedAt;
  }
  return changed && (rec.status === 'paused') !== (before === 'paused');
}

/**
 * A run the disk refused stops as `paused` with the storage error (`pausedBy`) unless it had
 * already ended; says whether it did.
 */
export function pauseForStorage(
  rec: RunRecord,
  se: { code: string; message: string; path?: string },
): boolean {
  if (FINAL.has(rec.status)) return false;
  rec.status = 'paused';
  rec.pausedBy = { code: se.code, message: se.message, ...(se.path ? { path: se.path } : {}), at: nowIso() };
  return true;
}
