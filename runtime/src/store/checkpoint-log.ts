/**
 * Checkpoints of one run as an append-only JSON-lines file: the last complete line is the
 * current checkpoint. Appending costs one write (plus one fdatasync when durable) where
 * replacing a file costs create, write, fsync, rename and a directory fsync — the difference
 * is most of a scripted turn. When the file passes `compactAt` bytes it is rewritten
 * atomically with only its last checkpoint.
 */
import { closeSync, fdatasyncSync, fstatSync, openSync, readFileSync, writeSync } from 'node:fs';
import type { RunCheckpoint } from '../engine/types.js';
import { writeFileAtomicSync } from './atomic.js';
import { StoreError } from './errors.js';
import type { ShapeCheck } from './json-file.js';

export interface CheckpointRead {
  checkpoint?: RunCheckpoint;
  /** A torn last line that was ignored. */
  torn?: string;
}

/** The last checkpoint in `file`; a torn final line is skipped, a damaged complete line is an error. */
export function readCheckpointLog(file: string, check: ShapeCheck<RunCheckpoint>): CheckpointRead {
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new StoreError('io', `cannot read ${file}: ${(e as Error).message}`, file);
  }
  if (buf.length === 0) throw new StoreError('empty-file', `${file} is empty (zero length)`, file);
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
  const start = buf.lastIndexOf(10, end - 2) + 1;
  const line = buf.toString('utf8', start, end - 1);
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (e) {
    throw new StoreError(
      'not-json',
      `${file}: the last checkpoint is not JSON: ${(e as Error).message}`,
      file,
    );
  }
  const r = check(value);
  if (!r.ok)
    throw new StoreError(
      'wrong-schema',
      `${file}: the last checkpoint is wrong at ${r.path || '/'}: ${r.message}`,
      file,
    );
  return { checkpoint: r.value, ...(torn ? { torn } : {}) };
}

export class CheckpointLog {
  private fd: number;
  private size: number;

  constructor(
    readonly file: string,
    private readonly fsync: boolean,
    private readonly compactAt = 4 * 1024 * 1024,
  ) {
    this.fd = openSync(file, 'a', 0o600);
    this.size = fstatSync(this.fd).size;
  }

  /** Appends one serialised checkpoint (a JSON line ending in a newline). */
  append(text: string): void {
    const line = Buffer.from(text);
    if (this.size + line.length > this.compactAt && this.size > 0) {
      // Rewrite with only the new checkpoint (atomic), then keep appending to the new file.
      closeSync(this.fd);
      writeFileAtomicSync(this.file, line, { fsync: this.fsync });
      this.fd = openSync(this.file, 'a', 0o600);
      this.size = line.length;
      return;
    }
    let off = 0;
    while (off < line.length) off += writeSync(this.fd, line, off);
    if (this.fsync) fdatasyncSync(this.fd);
    this.size += line.length;
  }

  close(): void {
    try {
      closeSync(this.fd);
    } catch {}
  }
}
