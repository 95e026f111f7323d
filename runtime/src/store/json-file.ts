/**
 * A lowdb adapter that reads strictly and writes durably. Reading refuses zero-length, BOM,
 * non-JSON and wrong-schema files with a {@link StoreError} naming the file — lowdb would
 * otherwise fall back to default data and the next write would erase what was there.
 */
import { readdir, readFile, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Adapter } from 'lowdb';
import { writeFileAtomic } from './atomic.js';
import { StoreError } from './errors.js';

/** Returns a problem description, or undefined when the value has the expected shape. */
export type ShapeCheck<T> = (
  value: unknown,
) => { ok: true; value: T } | { ok: false; path: string; message: string };

/** Parses store-file text strictly; shared by the catalog and checkpoint readers. */
export function parseStoreText<T>(text: string, file: string, check: ShapeCheck<T>): T {
  if (text.length === 0) throw new StoreError('empty-file', `${file} is empty (zero length)`, file);
  if (text.charCodeAt(0) === 0xfeff)
    throw new StoreError('bom', `${file} starts with a byte-order mark; Switchboard never writes one`, file);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new StoreError(
      'not-json',
      `${file} is not valid JSON (torn or edited by hand?): ${(e as Error).message}`,
      file,
    );
  }
  const r = check(value);
  if (!r.ok)
    throw new StoreError(
      'wrong-schema',
      `${file} does not have the expected shape at ${r.path || '/'}: ${r.message}`,
      file,
    );
  return r.value;
}

export class DurableJSONFile<T> implements Adapter<T> {
  constructor(
    readonly file: string,
    private readonly check: ShapeCheck<T>,
  ) {}

  /** null only when the file does not exist (a fresh directory). */
  async read(): Promise<T | null> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new StoreError('io', `cannot read ${this.file}: ${(e as Error).message}`, this.file);
    }
    return parseStoreText(text, this.file, this.check);
  }

  async write(data: T): Promise<void> {
    await writeFileAtomic(this.file, `${JSON.stringify(data, null, 1)}\n`);
  }
}

/** Removes temp files an interrupted atomic write left next to `file`. */
export async function removeStaleTemps(file: string): Promise<number> {
  const dir = dirname(file);
  const prefix = `.${basename(file)}.`;
  let n = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (name.startsWith(prefix) && name.endsWith('.tmp')) {
      await unlink(join(dir, name)).catch(() => {});
      n++;
    }
  }
  return n;
}
