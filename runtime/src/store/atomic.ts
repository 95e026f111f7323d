/**
 * Atomic, durable file replacement: write a temp file in the same directory, fsync it, rename
 * it over the target, fsync the directory. A crash at any point leaves either the old or the
 * new file under the target name, never an empty or partial one (lowdb's own writer renames
 * without fsync, so a power loss could leave a zero-length file).
 */
import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fault, faultAsync } from './faults.js';
import { withPath } from './fd-io.js';

/** Crash-injection points for tests: `SWITCHBOARD_CRASH_AT=atomic:<stage>` SIGKILLs the process there. */
function crashPoint(stage: string): void {
  if (process.env.SWITCHBOARD_CRASH_AT === `atomic:${stage}`) process.kill(process.pid, 'SIGKILL');
}

let counter = 0;
function tempName(file: string): string {
  counter = (counter + 1) % 1_000_000;
  return join(dirname(file), `.${basename(file)}.${process.pid}.${counter}.tmp`);
}

/** fsyncs a directory so that a rename in it survives a power loss (no-op where unsupported). */
export async function fsyncDir(dir: string): Promise<void> {
  let fh: Awaited<ReturnType<typeof open>> | undefined;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch (e) {
    // Some filesystems refuse fsync on a directory (EINVAL/EISDIR/EPERM); the rename is still atomic.
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'EISDIR' && code !== 'EPERM' && code !== 'EBADF') throw e;
  } finally {
    await fh?.close();
  }
}

export function fsyncDirSync(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'EISDIR' && code !== 'EPERM' && code !== 'EBADF') throw e;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Replaces `file` with `data` atomically and durably. With `fsync: false` the replacement is
 * still atomic and survives the process dying, but not a power loss.
 */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  /** `dirSync: false`: the caller fsyncs the directory itself (once for several files). */
  options: { fsync?: boolean; dirSync?: boolean } = {},
): Promise<void> {
  const fsync = options.fsync ?? true;
  const tmp = tempName(file);
  await faultAsync('open', tmp);
  const fh = await open(tmp, 'wx', 0o600);
  try {
    await faultAsync('write', file);
    await fh.writeFile(data);
    crashPoint('written');
    if (fsync) await (faultAsync('sync', file) ?? fh.sync());
    crashPoint('synced');
  } catch (e) {
    await fh.close().catch(() => {});
    await unlink(tmp).catch(() => {});
    throw withPath(e, file);
  }
  await fh.close();
  try {
    await faultAsync('rename', file);
    await rename(tmp, file);
  } catch (e) {
    await unlink(tmp).catch(() => {});
    throw e;
  }
  crashPoint('renamed');
  if (fsync && options.dirSync !== false) await fsyncDir(dirname(file));
}

/**
 * Synchronous twin of {@link writeFileAtomic}. Without fsync it costs a few syscalls and no
 * thread-pool round trips, which is what a per-turn checkpoint wants in `durability: 'os'`.
 */
export function writeFileAtomicSync(
  file: string,
  data: string | Uint8Array,
  options: { fsync?: boolean } = {},
): void {
  const fsync = options.fsync ?? true;
  const tmp = tempName(file);
  fault('open', tmp);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    fault('write', file);
    writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    if (fsync) {
      fault('sync', file);
      fsyncSync(fd);
    }
  } catch (e) {
    closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {}
    throw withPath(e, file);
  }
  closeSync(fd);
  try {
    fault('rename', file);
    renameSync(tmp, file);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {}
    throw e;
  }
  if (fsync) fsyncDirSync(dirname(file));
}
