/**
 * One append-only JSON-lines event log per run: the file and the run's events in memory. It
 * does not decide when to write — the run's group commit (group-commit.ts) does: appended
 * events reach the file in one `write` on an O_APPEND descriptor per call of `write()`, so an
 * append costs the same at event 10 and event 10,000, and each event is serialised and
 * encoded once (the bytes are kept until they are durable: the WebSocket frames reuse them).
 *
 * Readers see only durable events (`after`), so nothing is served before it is on disk in the
 * store's durability mode.
 *
 * Opening scans the file: a torn last record (no newline, or not JSON) is cut; anything wrong
 * before the tail is corruption and is reported, never skipped.
 */
import { closeSync, fdatasyncSync, ftruncateSync, openSync, readFileSync } from 'node:fs';
import type { RunEvent } from '@switchboard/schemas';
import { StoreError } from './errors.js';
import { fdatasyncAsync, writeAll } from './fd-io.js';

export interface ScanResult {
  events: RunEvent[];
  /** Byte length of the good prefix. */
  goodBytes: number;
  /** Present when the tail held a torn record that is (or would be) cut. */
  torn?: { bytes: number; reason: string };
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

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
    let ev: unknown;
    let problem: string | undefined;
    if (nl === -1) problem = 'the last record has no newline (torn write)';
    else {
      try {
        ev = JSON.parse(text);
        if (!isObj(ev) || typeof ev.type !== 'string' || !Number.isInteger(ev.seq))
          problem = 'the record is not an event (type, seq)';
        else if (runId !== undefined && ev.runId !== runId && !String(ev.runId).startsWith(`${runId}~`))
          // Nested (delegated) runs share the parent's log and seq, with ids `<runId>~N`.
          problem = `the record belongs to run ${String(ev.runId)}`;
        else {
          const expected = (events.at(-1)?.seq ?? (ev.seq as number) - 1) + 1;
          if (ev.seq !== expected) problem = `seq ${String(ev.seq)} where ${expected} was expected`;
        }
      } catch (e) {
        problem = `not JSON: ${(e as Error).message}`;
      }
    }
    if (problem !== undefined) {
      const isTail = nl === -1 || nl === buf.length - 1;
      if (isTail && (nl === -1 || !(isObj(ev) && Number.isInteger(ev.seq))))
        return { events, goodBytes: pos, torn: { bytes: buf.length - pos, reason: problem } };
      throw new StoreError('corrupt-log', `${file}: line ${line}: ${problem}`, file);
    }
    events.push(ev as RunEvent);
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

/** One write: its bytes, and the count of events up to its end. */
interface Written {
  end: number;
  bytes: Buffer;
}

/** Events that just became durable, and their bytes as written: one JSON line per event. */
export interface DurableBatch {
  events: RunEvent[];
  jsonl: Buffer[];
}

const NONE: DurableBatch = { events: [], jsonl: [] };

export class EventLog {
  private fd: number;
  private closed = false;
  /** Every event of the run in seq order, for catch-up reads while the log is open. */
  readonly events: RunEvent[];
  /** Writes not yet durable. */
  private chunks: Written[] = [];
  /** How many of `events` were handed to the OS. */
  private writtenCount: number;
  /** How many of `events` are durable; reads never see more. */
  private durableCount: number;
  /** Written since the last fdatasync began (to skip needless ones). */
  private dirty = false;
  /** The latest fdatasync, while it runs. */
  private syncing: Promise<void> | undefined;

  private constructor(
    readonly file: string,
    fd: number,
    events: RunEvent[],
  ) {
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
    options: { fsync?: boolean } = {},
  ): { log: EventLog; torn?: ScanResult['torn'] } {
    const scan = scanEventLog(file, runId);
    const fd = openSync(file, 'a', 0o600);
    if (scan.torn) ftruncateSync(fd, scan.goodBytes);
    if (scan.torn || (options.fsync && scan.goodBytes > 0)) fdatasyncSync(fd);
    const log = new EventLog(file, fd, scan.events);
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
   * Hands the appended events to the OS in one write; false when there was nothing new. The
   * bytes are kept until they are durable: the WebSocket frames are made of them.
   *
   * Events are serialised here, in one tight loop per write, not one by one as they come
   * between the engine's steps (which costs more): an event is handed over whole and never
   * changed after (reads of the log in memory rely on that too).
   */
  write(): boolean {
    const n = this.events.length;
    if (n === this.writtenCount || this.closed) return false;
    let text = '';
    for (let i = this.writtenCount; i < n; i++) text += `${JSON.stringify(this.events[i])}\n`;
    const bytes = Buffer.from(text);
    writeAll(this.fd, bytes);
    this.chunks.push({ end: n, bytes });
    this.writtenCount = n;
    this.dirty = true;
    return true;
  }

  /**
   * Resolves once everything written so far is on disk. Asynchronous so one run's fsync stalls
   * no other run; with nothing written since the last fdatasync began, it waits for that one.
   */
  sync(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (!this.dirty) return this.syncing ?? Promise.resolve();
    this.dirty = false;
    const p: Promise<void> = fdatasyncAsync(this.fd).finally(() => {
      if (this.syncing === p) this.syncing = undefined;
    });
    this.syncing = p;
    return p;
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
    return { events, jsonl: done.map((c) => c.bytes) };
  }

  /** Durable events with seq > after, at most `limit`. */
  after(after: number, limit = Number.POSITIVE_INFINITY): RunEvent[] {
    const first = this.events[0]?.seq ?? 1;
    const start = Math.max(0, after - first + 1);
    return this.events.slice(start, Math.min(this.durableCount, start + Math.min(limit, this.events.length)));
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
