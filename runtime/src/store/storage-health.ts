/**
 * The data directory's health as the operator sees it: `degraded` from the first write that
 * failed until a probe write succeeds again with no failure in between (then `ok`), the last
 * storage error, and the free space — with a warning in the log and in health once it drops
 * below a threshold, before a write fails for it.
 *
 * While degraded a small probe file is written every `probeMs`; when it goes through, the
 * listeners of `onRecovered` (the run manager resumes the runs the disk paused) are told.
 */

import { existsSync } from 'node:fs';
import { statfs, unlink } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { writeFileAtomic } from './atomic.js';
import { type StorageError, toStorageError } from './storage-error.js';

export interface StorageHealthOptions {
  /** Below this many free bytes a warning goes to the log and health (default 256 MiB). */
  lowSpaceBytes?: number;
  /** How often a degraded store probes whether writes succeed again (default 1 s). */
  probeMs?: number;
  /** How often free space is checked while nothing asks (default 30 s). */
  spaceCheckMs?: number;
}

export interface StorageLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface StorageErrorInfo {
  code: string;
  message: string;
  /** Relative to the data directory. */
  path?: string;
  errno?: string;
  at: string;
}

export interface StorageSnapshot {
  status: 'ok' | 'degraded';
  /** Free bytes for this user on the data directory's file system (undefined when unknown). */
  freeBytes?: number;
  totalBytes?: number;
  lowSpaceBytes: number;
  lowSpace: boolean;
  lastError?: StorageErrorInfo;
}

export const DEFAULT_LOW_SPACE_BYTES = 256 * 1024 * 1024;

/** `SWITCHBOARD_LOW_SPACE_MB` → bytes; a clear error for anything but a number ≥ 0. */
export function lowSpaceFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const v = env.SWITCHBOARD_LOW_SPACE_MB;
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0)
    throw new Error(`SWITCHBOARD_LOW_SPACE_MB must be a number of MiB ≥ 0, not ${JSON.stringify(v)}`);
  return Math.round(n * 1024 * 1024);
}

export class StorageHealth {
  private failing = false;
  private lastErr: StorageErrorInfo | undefined;
  /** Failures reported since the next probe was scheduled (a probe only clears a quiet store). */
  private failuresSinceProbe = 0;
  private probeTimer: ReturnType<typeof setTimeout> | undefined;
  private spaceTimer: ReturnType<typeof setInterval> | undefined;
  private warnedLow = false;
  private lastFailedPath: string | undefined;
  private free: { free: number; total: number } | undefined;
  private readonly listeners = new Set<() => void>();
  private closed = false;
  readonly lowSpaceBytes: number;
  private readonly probeMs: number;
  logger: StorageLogger | undefined;

  constructor(
    readonly dir: string,
    o: StorageHealthOptions = {},
  ) {
    this.lowSpaceBytes = o.lowSpaceBytes ?? DEFAULT_LOW_SPACE_BYTES;
    this.probeMs = o.probeMs ?? 1000;
    this.spaceTimer = setInterval(() => void this.checkSpace(), o.spaceCheckMs ?? 30_000);
    this.spaceTimer.unref?.();
  }

  get degraded(): boolean {
    return this.failing;
  }

  get lastError(): StorageErrorInfo | undefined {
    return this.lastErr;
  }

  /** Called when writes succeed again after a failure. */
  onRecovered(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Notes a failed write (any error of a file operation); returns it named. */
  report(e: unknown, path?: string): StorageError {
    const se = toStorageError(e, path);
    this.lastErr = {
      code: se.code,
      message: se.message.replaceAll(this.dir, '<data>'),
      ...(se.path ? { path: relative(this.dir, se.path) || '.' } : {}),
      ...(se.errno ? { errno: se.errno } : {}),
      at: new Date().toISOString(),
    };
    if (se.path) this.lastFailedPath = se.path;
    this.failuresSinceProbe++;
    if (!this.failing) {
      this.failing = true;
      this.logger?.error(
        { code: se.code, path: se.path, errno: se.errno },
        `storage degraded: ${se.message}`,
      );
    }
    this.scheduleProbe();
    return se;
  }

  private scheduleProbe(): void {
    if (this.probeTimer || this.closed) return;
    // Failures from now until the probe runs keep the store degraded.
    this.failuresSinceProbe = 0;
    this.probeTimer = setTimeout(() => {
      this.probeTimer = undefined;
      void this.probe();
    }, this.probeMs);
    this.probeTimer.unref?.();
  }

  /** Writes a probe file; true (and `ok` again) when it and every write since the last probe succeeded. */
  async probe(): Promise<boolean> {
    if (!this.failing) return true;
    // Next to the file that failed when its folder is still there (a fault may be that
    // folder's or that file system's), else in the data directory.
    const failed = this.lastFailedPath;
    const file =
      failed?.startsWith(this.dir) && existsSync(dirname(failed))
        ? `${failed}.probe`
        : join(this.dir, '.storage-probe');
    try {
      await writeFileAtomic(file, `${Date.now()}\n`);
      await unlink(file).catch(() => {});
    } catch (e) {
      // Reported as the file that keeps failing, not as the probe.
      const err = e as NodeJS.ErrnoException;
      if (typeof err.path === 'string' && err.path.endsWith('.probe')) err.path = err.path.slice(0, -6);
      if (err.message) err.message = err.message.replace('.probe', '');
      this.report(e, file.endsWith('.probe') ? file.slice(0, -6) : file);
      return false;
    }
    if (this.failuresSinceProbe > 0) {
      this.scheduleProbe();
      return false;
    }
    this.failing = false;
    this.logger?.info({ lastError: this.lastErr?.code }, 'storage ok again: writes succeed');
    for (const fn of this.listeners) fn();
    return true;
  }

  /** Reads free space; warns once each time it drops below the threshold. */
  async checkSpace(): Promise<void> {
    try {
      const s = await statfs(this.dir);
      this.free = { free: s.bavail * s.bsize, total: s.blocks * s.bsize };
    } catch {
      this.free = undefined;
      return;
    }
    const low = this.free.free < this.lowSpaceBytes;
    if (low && !this.warnedLow)
      this.logger?.warn(
        { freeBytes: this.free.free, lowSpaceBytes: this.lowSpaceBytes, dir: this.dir },
        `storage low: ${this.free.free} bytes free, below ${this.lowSpaceBytes}`,
      );
    this.warnedLow = low;
  }

  async snapshot(): Promise<StorageSnapshot> {
    await this.checkSpace();
    return {
      status: this.failing ? 'degraded' : 'ok',
      ...(this.free ? { freeBytes: this.free.free, totalBytes: this.free.total } : {}),
      lowSpaceBytes: this.lowSpaceBytes,
      lowSpace: this.free !== undefined && this.free.free < this.lowSpaceBytes,
      ...(this.lastErr ? { lastError: this.lastErr } : {}),
    };
  }

  close(): void {
    this.closed = true;
    if (this.probeTimer) clearTimeout(this.probeTimer);
    if (this.spaceTimer) clearInterval(this.spaceTimer);
    this.probeTimer = this.spaceTimer = undefined;
  }
}
