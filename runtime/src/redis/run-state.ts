/**
 * Reading a run's state from Redis: its events after a seq (the stream, in seq order), its
 * checkpoint, its tool journal and its spec. Shared by workers (to take a run over) and
 * servers (to follow it).
 */
import type { RunEvent } from '@switchboard/schemas';
import type { Redis } from 'ioredis';
import type { RunCheckpoint, RunCommand } from '../engine/types.js';
import type { RunSpec } from '../store/run-files.js';
import type { JournalCall, JournalEntry } from '../store/tool-journal.js';
import type { RedisKeys } from './keys.js';
import { SEND_COMMAND } from './scripts.js';

/** What a worker keeps with a checkpoint: the last command applied before it. */
export interface StoredCheckpoint {
  cp: RunCheckpoint;
  /** Id of the last entry of the command stream the run had applied (`0` for none). */
  cmd: string;
}

export const FINAL_TYPES: ReadonlySet<string> = new Set([
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.interrupted',
]);

type StreamEntry = [id: string, fields: string[]];

function eventOf(entry: StreamEntry): RunEvent {
  return JSON.parse(entry[1][1]!) as RunEvent;
}

/** Events with seq > after, at most `limit`. */
export async function eventsAfter(
  r: Redis,
  k: RedisKeys,
  runId: string,
  after: number,
  limit = 1000,
): Promise<RunEvent[]> {
  const entries = (await r.xrange(k.events(runId), `(${after}-0`, '+', 'COUNT', limit)) as StreamEntry[];
  return entries.map(eventOf);
}

export async function lastEvent(r: Redis, k: RedisKeys, runId: string): Promise<RunEvent | undefined> {
  const entries = (await r.xrevrange(k.events(runId), '+', '-', 'COUNT', 1)) as StreamEntry[];
  return entries[0] ? eventOf(entries[0]) : undefined;
}

/**
 * Whether the run was paused when its last worker stopped: its latest run.paused comes after its
 * latest run.resumed (a pause is not in the engine's checkpoint; the host pauses a resumed run).
 */
export async function wasPaused(r: Redis, k: RedisKeys, runId: string): Promise<boolean> {
  const entries = (await r.xrevrange(k.events(runId), '+', '-', 'COUNT', 500)) as StreamEntry[];
  for (const e of entries) {
    const t = eventOf(e).type;
    if (t === 'run.paused') return true;
    if (t === 'run.resumed' || t === 'run.started') return false;
  }
  return false;
}

export async function readStoredCheckpoint(
  r: Redis,
  k: RedisKeys,
  runId: string,
): Promise<StoredCheckpoint | undefined> {
  const s = await r.get(k.checkpoint(runId));
  return s === null ? undefined : (JSON.parse(s) as StoredCheckpoint);
}

export async function readSpec(r: Redis, k: RedisKeys, runId: string): Promise<RunSpec | undefined> {
  const s = await r.get(k.spec(runId));
  return s === null ? undefined : (JSON.parse(s) as RunSpec);
}

/** The journal's calls in order, each with its outcome when it has one. */
export async function readJournal(r: Redis, k: RedisKeys, runId: string): Promise<JournalCall[]> {
  const lines = await r.lrange(k.journal(runId), 0, -1);
  const calls: JournalCall[] = [];
  const byN = new Map<number, JournalCall>();
  for (const line of lines) {
    const e = JSON.parse(line) as JournalEntry;
    if (e.k === 'intent') {
      const c: JournalCall = { intent: e };
      calls.push(c);
      byN.set(e.n, c);
    } else {
      const c = byN.get(e.n);
      if (c) c.done = e;
    }
  }
  return calls;
}

/** Commands after the entry id `after`, with their ids. */
export async function commandsAfter(
  r: Redis,
  k: RedisKeys,
  runId: string,
  after: string,
): Promise<Array<{ id: string; cmd: RunCommand }>> {
  const res = (await r.xread('COUNT', 100, 'STREAMS', k.commands(runId), after)) as Array<
    [string, StreamEntry[]]
  > | null;
  const entries = res?.[0]?.[1] ?? [];
  return entries.map(([id, fields]) => ({ id, cmd: JSON.parse(fields[1]!) as RunCommand }));
}

/**
 * Appends a command to the run's stream and tells the workers (the one holding it reads it),
 * in one atomic step with a look at the run's events: a run whose own final event is there gets
 * nothing, and the status it ended with is returned instead (undefined: the command was sent).
 *
 * Left open, by nature: a command sent just before the worker appends the final event is in the
 * stream, but the engine may end without reading it (or drop it, being over). It is then never
 * applied — the worker retires the run's command stream at its end, and a run that ended is
 * never executed again (executeRun) — and the run's record, its final status, shows the client
 * that it had no effect.
 */
export async function sendCommand(
  r: Redis,
  k: RedisKeys,
  runId: string,
  cmd: RunCommand,
): Promise<string | undefined> {
  const ended = (await r.eval(
    SEND_COMMAND,
    2,
    k.events(runId),
    k.commands(runId),
    runId,
    k.cmdChannel,
    JSON.stringify(cmd),
  )) as string | null;
  return ended === null ? undefined : ended.slice('run.'.length);
}
