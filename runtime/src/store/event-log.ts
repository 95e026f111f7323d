/**
 * One append-only JSON-lines event log per run: the file and the run's events in memory. It
 * does not decide when to write — the run's group commit (group-commit.ts) does: each call of
 * `write()` appends the events handed over since the last one as one line, a JSON array, in
 * one `write` on an O_APPEND descriptor, so an append costs the same at event 10 and event
 * 10,000, and a batch is serialised in one `JSON.stringify` and encoded once (the bytes are
 * kept until they are durable: the WebSocket frames are made of them).
 *
 * Readers see only durable events (`after`) unless they ask for written ones too, so nothing
 * is served as durable before it is on disk in the store's durability mode.
 *
 * Opening scans the file: a torn last record (no newline, or not JSON) is cut; anything wrong
 * before the tail is corruption and is reported, never skipped. A line holding one event
 * object (how logs were written before batches) reads as a batch of one.
 */
import { closeSync, fdatasyncSync, ftruncateSync, openSync, readFileSync } from 'node:fs';
import type { RunEvent } from '@switchboard/schemas';
import { StoreError } from './errors.js';
import { fault } from './faults.js';
import { DataSync, type SyncData, writeAll } from './fd-io.js';

export interface ScanResult {
  events: RunEvent[];
  /** Byte length of the good prefix. */
  goodBytes: number;
  /** Present when the tail held a torn record that is (or would be) cut. */
  torn?: { bytes: number; reason: string };
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** What is wrong with one parsed line, given the events before it; undefined when nothing is. */
function lineProblem(value: unknown, before: RunEvent[], runId: string | undefined): string | undefined {
  const items = Array.isArray(value) ? value : [value];
  if (items.length === 0) return 'the record is an empty batch';
  let prev = before.at(-1)?.seq;
  for (const ev of items) {
    if (!isObj(ev) || typeof ev.type !== 'string' || !Number.isInteger(ev.seq))
      return 'the record is not an event (type, seq)';
    // Nested (delegated) runs share the parent's log and seq, with ids `<runId>~N`.
    if (runId !== undefined && ev.runId !== runId && !String(ev.runId).startsWith(`${runId}~`))
      return `the record belongs to run ${String(ev.runId)}`;
    const expected = (prev ?? (ev.seq as number) - 1) + 1;
    if (ev.seq !== expected) return `seq ${String(ev.seq)} where ${expected} was expected`;
    prev = ev.seq as number;
  }
  return undefined;
}

/** Reads and checks a log without changing it. */
export function scanEventLog(file: string, runId?: string): ScanResult {
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { events: [], goodBytes: 0 };
    throw new StoreError('io', `cannot read ${file}: ${(e as Error).message}`, file);
  }
  if (buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf)
    throw new StoreError('bom', `${file} starts with a byte-order mark; Switchboard never writes one`, file);
  const events: RunEvent[] = [];
  let pos = 0;
  let line = 0;
  while (pos < buf.length) {
    const nl = buf.indexOf(10, pos);
    line++;
    const end = nl === -1 ? buf.length : nl;
    const text = buf.toString('utf8', pos, end);
    let value: unknown;
    let parsed = false;
    let problem: string | undefined;
    if (nl === -1) problem = 'the last record has no newline (torn write)';
    else {
      try {
        value = JSON.parse(text);
        parsed = true;
        problem = lineProblem(value, events, runId);
      } catch (e) {
        problem = `not JSON: ${(e as Error).message}`;
      }
    }
    if (problem !== undefined) {
      // Only a last line that did not make it whole is torn; a whole record that is wrong is damage.
      const isTail = nl === -1 || nl === buf.length - 1;
      const whole = parsed && (Array.isArray(value) || (isObj(value) && Number.isInteger(value.seq)));
      if (isTail && (nl === -1 || !whole))
        return { events, goodBytes: pos, torn: { bytes: buf.length - pos, reason: problem } };
      throw new StoreError('corrupt-log', `${file}: line ${line}: ${problem}`, file);
    }
    if (Array.isArray(value)) for (const ev of value) events.push(ev as RunEvent);
    else events.push(value as RunEvent);
    pos = end + 1;
  }
  if (events.length > 0 && events[0]!.seq !== 1)
    throw new StoreError(
      'corrupt-log',
      `${file}: the first record has seq ${events[0]!.seq}, expected 1`,
      file,
    );
  return { events, goodBytes: pos };
}

/**
 * One write of the log as it is on disk: a JSON array of events and a newline, and how many
 * events it holds.
 */
export interface LogLine {
  bytes: Buffer;
  count: number;
}

/** One write: its line, and the count of events up to its end. */
interface Written extends LogLine {
  end: number;
}

/** Events that just became durable (or written), and the lines they were written in. */
export interface DurableBatch {
  events: RunEvent[];
  lines: LogLine[];
}

const NONE: DurableBatch = { events: [], lines: [] };

export class EventLog {
  private fd: number;
  private closed = false;
  /** Every event of the run in seq order, for catch-up reads while the log is open. */
  readonly events: RunEvent[];
  /** Writes not yet durable. */
  private chunks: Written[] = [];
  /** The latest write: where its events start, and its line. */
  private lastWrite: { from: number; line: LogLine } | undefined;
  /** How many of `events` were handed to the OS. */
  private writtenCount: number;
  /** How many of `events` are durable; reads never see more. */
  private durableCount: number;
  private readonly syncs: DataSync;

  private constructor(
    readonly file: string,
    fd: number,
    events: RunEvent[],
    syncData?: SyncData,
  ) {
    this.syncs = new DataSync(file, syncData);
    this.fd = fd;
    this.events = events;
    this.writtenCount = this.durableCount = events.length;
  }

  /**
   * Opens (creating) a log for appending; a torn tail is cut first and reported in `torn`.
   * With `fsync`, what a previous process left is synced before it counts as durable: a
   * killed process's last lines may be only in the OS's cache.
   */
  static open(
    file: string,
    runId: string,
    options: { fsync?: boolean; syncData?: SyncData } = {},
  ): { log: EventLog; torn?: ScanResult['torn'] } {
    const scan = scanEventLog(file, runId);
    fault('open', file);
    const fd = openSync(file, 'a', 0o600);
    if (scan.torn) ftruncateSync(fd, scan.goodBytes);
    if (scan.torn || (options.fsync && scan.goodBytes > 0)) fdatasyncSync(fd);
    const log = new EventLog(file, fd, scan.events, options.syncData);
    return { log, ...(scan.torn ? { torn: scan.torn } : {}) };
  }

  /** Seq of the last appended event (durable or not). */
  get lastSeq(): number {
    return this.events.at(-1)?.seq ?? 0;
  }

  /** Seq of the last durable event. */
  get durableSeq(): number {
    return this.events[this.durableCount - 1]?.seq ?? 0;
  }

  /** Events handed to the OS so far (a count, for marking them durable once synced). */
  get written(): number {
    return this.writtenCount;
  }

  /** Keeps an event; it is serialised and reaches the file at the next write. */
  append(event: RunEvent): void {
    if (this.closed) throw new StoreError('io', `append to closed log ${this.file}`, this.file);
    this.events.push(event);
  }

  /** Whether events were appended that are not written yet. */
  get hasPending(): boolean {
    return this.events.length > this.writtenCount;
  }

  /**
   * Hands the appended events to the OS in one write, as one line; false when there was
   * nothing new. The bytes are kept until they are durable: the WebSocket frames are made of
   * them.
   *
   * A batch is serialised here in one `JSON.stringify`, not event by event as they come
   * between the engine's steps (which costs more): an event is handed over whole and never
   * changed after (reads of the log in memory rely on that too).
   */
  write(): boolean {
    const n = this.events.length;
    const from = this.writtenCount;
    if (n === from || this.closed) return false;
    const batch = from === 0 ? this.events : this.events.slice(from, n);
    const bytes = Buffer.from(`${JSON.stringify(batch)}\n`);
    writeAll(this.fd, bytes, this.file);
    const line = { bytes, count: n - from };
    this.chunks.push({ end: n, ...line });
    this.lastWrite = { from, line };
    this.writtenCount = n;
    this.syncs.wrote();
    return true;
  }

  /**
   * Resolves once everything written so far is on disk. Asynchronous so one run's fsync stalls
   * no other run; with nothing written since the last fdatasync began, it waits for that one.
   */
  sync(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.syncs.sync(this.fd);
  }

  /** Whether something was written since the last fdatasync began. */
  get needsSync(): boolean {
    return !this.closed && this.syncs.needed;
  }

  /** The events of the latest write and its line (what provisional readers get at once). */
  lastWritten(): DurableBatch {
    const w = this.lastWrite;
    if (!w) return NONE;
    return { events: this.events.slice(w.from, w.from + w.line.count), lines: [w.line] };
  }

  /**
   * Declares the events of the writes that ended by event `count` durable (they were written,
   * and synced when the store syncs) and returns the ones that just became so, with the bytes.
   */
  markDurable(count = this.writtenCount): DurableBatch {
    let k = 0;
    while (k < this.chunks.length && this.chunks[k]!.end <= count) k++;
    if (k === 0) return NONE;
    const done = this.chunks.splice(0, k);
    const events = this.events.slice(this.durableCount, done[k - 1]!.end);
    this.durableCount = done[k - 1]!.end;
    return { events, lines: done };
  }

  /**
   * Events with seq > after, at most `limit`: durable ones, or with `written` every one handed
   * to the OS (it survives the process, not yet a power loss).
   */
  after(after: number, limit = Number.POSITIVE_INFINITY, written = false): RunEvent[] {
    const first = this.events[0]?.seq ?? 1;
    const start = Math.max(0, after - first + 1);
    const end = written ? this.writtenCount : this.durableCount;
    return this.events.slice(start, Math.min(end, start + Math.min(limit, this.events.length)));
  }

  /** Writes what is left, fsyncs and closes (standalone use; a run's group commit closes its own). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.write();
    await this.sync();
    this.markDurable();
    this.closeFd();
  }

  /** Closes the descriptor; the caller has written and synced what it wanted. */
  closeFd(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}
