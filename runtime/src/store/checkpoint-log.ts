/**
 * Checkpoints of one run as an append-only JSON-lines file: the current checkpoint is the last
 * complete line that the event log covers (its seq is at most the log's last seq). Appending
 * costs one write where replacing a file costs create, write, fsync, rename and a directory
 * fsync; the run's group commit fsyncs it in the background. When the file passes `compactAt`
 * bytes (or four checkpoints, if those are bigger) it is rewritten atomically with only the
 * new checkpoint and, when given, the last one known to be on disk with the log under it.
 *
 * Why "covered by the log" and not simply "the last line": the checkpoint is written right
 * after the log lines under it, and both are fsynced later, together. A process that dies
 * loses neither (the OS has them), but after a power loss the checkpoint's page may have
 * reached the disk while the log's last page did not; the reader then steps back to the last
 * checkpoint the surviving log covers, so a resumed run never starts past its own history.
 */
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import type { RunCheckpoint } from '../engine/types.js';
import { writeFileAtomicSync } from './atomic.js';
import { StoreError } from './errors.js';
import { fault } from './faults.js';
import { DataSync, type SyncData, writeAll } from './fd-io.js';
import type { ShapeCheck } from './json-file.js';

export interface CheckpointRead {
  checkpoint?: RunCheckpoint;
  /** A torn last line that was ignored. */
  torn?: string;
}

/**
 * The last checkpoint in `file` with seq ≤ `maxSeq` (the log's last seq; default: any). A torn
 * final line is skipped; a damaged complete line that has to be read is an error.
 */
export function readCheckpointLog(
  file: string,
  check: ShapeCheck<RunCheckpoint>,
  maxSeq = Number.POSITIVE_INFINITY,
): CheckpointRead {
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new StoreError('io', `cannot read ${file}: ${(e as Error).message}`, file);
  }
  // Created when the run starts and only ever appended to (or replaced atomically): empty means
  // no checkpoint was written yet.
  if (buf.length === 0) return {};
  if (buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf)
    throw new StoreError('bom', `${file} starts with a byte-order mark; Switchboard never writes one`, file);
  let end = buf.length;
  let torn: string | undefined;
  if (buf[end - 1] !== 10) {
    const nl = buf.lastIndexOf(10, end - 1);
    torn = `the last checkpoint has no newline (torn write, ${end - nl - 1} bytes)`;
    end = nl + 1;
    if (end === 0) throw new StoreError('not-json', `${file} holds only a torn checkpoint`, file);
  }
  // `end` is just past a newline; walk the complete lines from the last one backwards.
  let which = 'the last checkpoint';
  while (end > 0) {
    const start = end >= 2 ? buf.lastIndexOf(10, end - 2) + 1 : 0;
    const line = buf.toString('utf8', start, end - 1);
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      throw new StoreError('not-json', `${file}: ${which} is not JSON: ${(e as Error).message}`, file);
    }
    const r = check(value);
    if (!r.ok)
      throw new StoreError(
        'wrong-schema',
        `${file}: ${which} is wrong at ${r.path || '/'}: ${r.message}`,
        file,
      );
    if (r.value.seq <= maxSeq) return { checkpoint: r.value, ...(torn ? { torn } : {}) };
    end = start;
    which = `the checkpoint before seq ${r.value.seq}`;
  }
  return torn ? { torn } : {};
}

export class CheckpointLog {
  private fd: number;
  private size: number;
  private readonly syncs: DataSync;
  private closed = false;

  constructor(
    readonly file: string,
    /** Compaction replaces the file durably (fsync + directory fsync) when true. */
    private readonly fsync: boolean,
    private readonly compactAt = 4 * 1024 * 1024,
    syncData?: SyncData,
  ) {
    this.syncs = new DataSync(file, syncData);
    fault('open', file);
    this.fd = openSync(file, 'a', 0o600);
    this.size = fstatSync(this.fd).size;
  }

  /** Whether appending `bytes` more rewrites the file. */
  private compactsWith(bytes: number): boolean {
    return this.size > 0 && this.size + bytes > Math.max(this.compactAt, 4 * bytes);
  }

  /**
   * Appends one serialised checkpoint (a JSON line ending in a newline); `sync()` makes it
   * durable. `durable` is the newest checkpoint already synced together with the log under
   * it: a compaction keeps it in front of the new one, so until the new one and its log are
   * synced a power loss still finds a checkpoint the log covers.
   *
   * Returns `compacted` when the file was replaced instead: that replacement is already
   * durable (when `fsync`), so it needs no `sync()`.
   */
  append(text: string, durable?: string): 'appended' | 'compacted' {
    const line = Buffer.from(text);
    if (this.compactsWith(line.length)) {
      writeFileAtomicSync(this.file, this.compacted(line, durable), { fsync: this.fsync });
      this.reopen();
      return 'compacted';
    }
    writeAll(this.fd, line, this.file);
    this.size += line.length;
    this.syncs.wrote();
    return 'appended';
  }

  private compacted(line: Buffer, durable: string | undefined): Buffer {
    return durable === undefined ? line : Buffer.concat([Buffer.from(durable), line]);
  }

  /** After a compaction: append to the new file; the old descriptor closes once no fdatasync uses it. */
  private reopen(): void {
    const old = this.fd;
    this.fd = openSync(this.file, 'a', 0o600);
    this.size = fstatSync(this.fd).size;
    this.syncs.forget();
    const closeOld = () => {
      try {
        closeSync(old);
      } catch {}
    };
    const running = this.syncs.running;
    if (running) void running.then(closeOld, closeOld);
    else closeOld();
  }

  /** Resolves once every checkpoint appended so far is on disk (see EventLog.sync). */
  sync(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.syncs.sync(this.fd);
  }

  /** Whether something was appended since the last fdatasync began. */
  get needsSync(): boolean {
    return !this.closed && this.syncs.needed;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      closeSync(this.fd);
    } catch {}
  }
}
