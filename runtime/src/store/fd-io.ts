/** Whole-buffer writes to a descriptor, and fdatasync from the thread pool. */

/** How a store makes a file's written data durable: fdatasync, unless replaced. */
export type SyncData = (fd: number) => Promise<void>;

import { fdatasync, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import { faultAsync, writeFault } from './faults.js';

export const fdatasyncAsync = promisify(fdatasync);

const RESOLVED = Promise.resolve();

/**
 * Writes all of `buf` to `file`'s descriptor (a short write continues where it stopped; a full
 * disk then fails with ENOSPC, leaving a torn record that the next open cuts).
 */
export function writeAll(fd: number, buf: Buffer, file: string): void {
  const f = writeFault(file, buf.length);
  if (f) {
    writeSync(fd, buf, 0, f.bytes);
    throw f.error;
  }
  let off = 0;
  try {
    while (off < buf.length) off += writeSync(fd, buf, off);
  } catch (e) {
    throw withPath(e, file);
  }
}

/** Errors of descriptor operations carry no path: the file they were for is added. */
export function withPath(e: unknown, file: string): unknown {
  if (e instanceof Error && (e as NodeJS.ErrnoException).path === undefined)
    (e as NodeJS.ErrnoException).path = file;
  return e;
}

/**
 * The fdatasyncs of one file: whether something was written since the last one began, and
 * the latest one while it runs. An fdatasync covers every page written before it began, so a
 * write made while one runs needs another.
 */
export class DataSync {
  private dirty = false;
  private last: Promise<void> | undefined;

  /** `syncData` replaces fdatasync (tests that hold a sync; storage with a sync of its own). */
  constructor(
    private readonly file: string,
    private readonly syncData: SyncData = fdatasyncAsync,
  ) {}

  /** Notes a write that the next sync must cover. */
  wrote(): void {
    this.dirty = true;
  }

  /** Whether something was written since the last sync began. */
  get needed(): boolean {
    return this.dirty;
  }

  /** The latest sync, while it runs. */
  get running(): Promise<void> | undefined {
    return this.last;
  }

  /** Forgets unsynced writes (the file was replaced durably by other means). */
  forget(): void {
    this.dirty = false;
  }

  /**
   * Resolves once everything written so far is on disk: starts an fdatasync of `fd` when
   * something was written since the last one began (even beside a running one), else waits
   * for the running one, if any.
   */
  sync(fd: number): Promise<void> {
    if (!this.dirty) return this.last ?? RESOLVED;
    this.dirty = false;
    const p: Promise<void> = (faultAsync('sync', this.file) ?? this.syncData(fd))
      .catch((e: unknown) => {
        throw withPath(e, this.file);
      })
      .finally(() => {
        if (this.last === p) this.last = undefined;
      });
    this.last = p;
    return p;
  }
}
