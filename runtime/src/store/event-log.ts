/**
 * One append-only JSON-lines event log per run. Appends are batched per synchronous burst
 * (a microtask) into one `write` on an O_APPEND descriptor, so an append costs the same at
 * event 10 and event 10,000; `sync()` adds the fsync the run does at each turn boundary.
 *
 * Opening scans the file: a torn last record (no newline, or not JSON) is cut; anything wrong
 * before the tail is corruption and is reported, never skipped.
 */
import {
  closeSync,
  fdatasync,
  fdatasyncSync,
  ftruncateSync,
  openSync,
  readFileSync,
  writeSync,
} from 'node:fs';
import { promisify } from 'node:util';
import type { RunEvent } from '@switchboard/schemas';
import { StoreError } from './errors.js';

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

const fdatasyncAsync = promisify(fdatasync);

export class EventLog {
  private fd: number;
  private pending: string[] = [];
  private flushQueued = false;
  private closed = false;
  /** Every event of the run in seq order, for catch-up reads while the log is open. */
  readonly events: RunEvent[];
  /** Called after each batch reaches the file, with the events of that batch. */
  onFlushed?: (batch: RunEvent[]) => void;
  private unflushed: RunEvent[] = [];
  /** How many of `events` reached the file; reads never see events before they are written. */
  private flushedCount: number;
  /** Bytes written since the last fsync (to skip needless fsyncs). */
  private dirty = false;

  private constructor(
    readonly file: string,
    fd: number,
    events: RunEvent[],
  ) {
    this.fd = fd;
    this.events = events;
    this.flushedCount = events.length;
  }

  /** Opens (creating) a log for appending; a torn tail is cut first and reported in `torn`. */
  static open(
    file: string,
    runId: string,
    options: { fsync?: boolean } = {},
  ): { log: EventLog; torn?: ScanResult['torn'] } {
    const scan = scanEventLog(file, runId);
    const fd = openSync(file, 'a', 0o600);
    if (scan.torn) {
      ftruncateSync(fd, scan.goodBytes);
      fdatasyncSync(fd);
    }
    const log = new EventLog(file, fd, scan.events);
    log.fsync = options.fsync ?? true;
    return { log, ...(scan.torn ? { torn: scan.torn } : {}) };
  }

  /** Seq of the last appended event (written or about to be, this turn). */
  get lastSeq(): number {
    return this.events.at(-1)?.seq ?? 0;
  }

  /** Seq of the last event that reached the file. */
  get writtenSeq(): number {
    return this.events[this.flushedCount - 1]?.seq ?? 0;
  }

  /** Queues an event; it reaches the file before control returns to the event loop. */
  append(event: RunEvent): void {
    if (this.closed) throw new StoreError('io', `append to closed log ${this.file}`, this.file);
    this.events.push(event);
    this.unflushed.push(event);
    this.pending.push(`${JSON.stringify(event)}\n`);
    if (!this.flushQueued) {
      this.flushQueued = true;
      queueMicrotask(() => this.flush());
    }
  }

  /** Writes queued events now (one write call). */
  flush(): void {
    this.flushQueued = false;
    if (this.pending.length === 0 || this.closed) return;
    const buf = Buffer.from(this.pending.join(''));
    this.pending = [];
    let off = 0;
    while (off < buf.length) off += writeSync(this.fd, buf, off);
    this.dirty = true;
    const batch = this.unflushed;
    this.unflushed = [];
    this.flushedCount = this.events.length;
    this.onFlushed?.(batch);
  }

  private syncing: Promise<void> | undefined;
  /** false: `sync()` only flushes (the store's `durability: 'os'`). */
  fsync = true;

  /**
   * Flushes and fsyncs: everything appended so far survives a power loss. Asynchronous so
   * that one run's fsync does not stall the other runs and the sockets.
   */
  async sync(): Promise<void> {
    this.flush();
    if (!this.dirty || this.closed || !this.fsync) return;
    this.dirty = false;
    const p = fdatasyncAsync(this.fd);
    this.syncing = p;
    try {
      await p;
    } finally {
      if (this.syncing === p) this.syncing = undefined;
    }
  }

  /** Written events with seq > after, at most `limit`. */
  after(after: number, limit = Number.POSITIVE_INFINITY): RunEvent[] {
    const first = this.events[0]?.seq ?? 1;
    const start = Math.max(0, after - first + 1);
    return this.events.slice(start, Math.min(this.flushedCount, start + Math.min(limit, this.events.length)));
  }

  /** Flushes, fsyncs and closes. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.sync();
    await this.syncing;
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }

  /** Synchronous close for process exit paths. */
  closeSync(): void {
    if (this.closed) return;
    this.flush();
    fdatasyncSync(this.fd);
    this.closed = true;
    closeSync(this.fd);
  }
}
