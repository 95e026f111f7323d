/** Whole-buffer writes to a descriptor, and fdatasync from the thread pool. */
import { fdatasync, writeSync } from 'node:fs';
import { promisify } from 'node:util';

export const fdatasyncAsync = promisify(fdatasync);

/** Writes all of `buf` (a short write, as on a full disk, continues where it stopped). */
export function writeAll(fd: number, buf: Buffer): void {
  let off = 0;
  while (off < buf.length) off += writeSync(fd, buf, off);
}
