/**
 * One process owns a data directory at a time. The lock file names the owner's pid; a second
 * live process is refused with "locked by pid N"; a lock left by a dead process is taken over.
 */
import { closeSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { StoreLockedError } from './errors.js';

export const LOCK_FILE = 'lock';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else — still alive.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readPid(file: string): number | undefined {
  try {
    const n = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
    return Number.isSafeInteger(n) && n > 0 ? n : undefined;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

export interface DirLock {
  readonly file: string;
  /** Whether a stale lock of a dead process was taken over. */
  readonly tookOver?: number;
  release(): void;
}

/** Takes the lock of `dir` or throws {@link StoreLockedError}. */
export function acquireLock(dir: string): DirLock {
  const file = join(dir, LOCK_FILE);
  let tookOver: number | undefined;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      return {
        file,
        ...(tookOver !== undefined ? { tookOver } : {}),
        release() {
          // Only remove the lock while it still names us.
          if (readPid(file) === process.pid) {
            try {
              unlinkSync(file);
            } catch {}
          }
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const pid = readPid(file);
    if (pid !== undefined && pid !== process.pid && alive(pid)) throw new StoreLockedError(pid, file);
    if (pid === undefined) {
      // An empty lock: its writer may be between create and write. Give it a moment once.
      if (attempt === 0) {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
        continue;
      }
    }
    // Stale (dead pid, our own pid from a previous life in a container, or unreadable):
    // move it aside atomically — of two racing processes only one rename succeeds.
    const aside = `${file}.stale.${process.pid}`;
    try {
      renameSync(file, aside);
      const movedPid = readPid(aside);
      if (movedPid !== pid && movedPid !== undefined && movedPid !== process.pid && alive(movedPid)) {
        // We moved a fresh lock that a racing process had just created: it owns the directory.
        renameSync(aside, file);
        throw new StoreLockedError(movedPid, file);
      }
      unlinkSync(aside);
      tookOver = pid ?? 0;
    } catch (e) {
      if (e instanceof StoreLockedError) throw e;
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
  const pid = readPid(file);
  throw new StoreLockedError(pid ?? 0, file);
}
