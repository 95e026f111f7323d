/**
 * Sizes of the editor's production build, read from Vite's manifest (`dist/.vite/manifest.json`):
 * the entry chunk, everything the first load fetches (the entry and its static imports), and
 * what loads only when needed (dynamic imports). Used by the benchmark and by the size test.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { EDITOR_DIST } from './static.js';

interface ManifestChunk {
  file: string;
  isEntry?: boolean;
  isDynamicEntry?: boolean;
  imports?: string[];
  dynamicImports?: string[];
}

export interface BundleSizes {
  /** The entry chunk's file and its minified bytes. */
  main: { file: string; bytes: number };
  /** JavaScript bytes the first load fetches: the entry and the chunks it imports statically. */
  firstLoadBytes: number;
  /** Every JavaScript chunk, first load or not, with its bytes (web workers included). */
  chunks: Array<{ file: string; bytes: number; firstLoad: boolean }>;
}

export function bundleSizes(dist: string = EDITOR_DIST): BundleSizes {
  const path = join(dist, '.vite', 'manifest.json');
  if (!existsSync(path))
    throw new Error(
      `The editor's build manifest is missing (${path}). Build it first: pnpm --filter @switchboard/editor build`,
    );
  const manifest = new Map(
    Object.entries(JSON.parse(readFileSync(path, 'utf8')) as Record<string, ManifestChunk>),
  );
  const entries = [...manifest.entries()].filter(([, c]) => c.isEntry);
  if (entries.length !== 1) throw new Error(`${path}: expected one entry chunk, found ${entries.length}`);
  const [entryKey, entry] = entries[0]!;
  const bytes = (file: string) => statSync(join(dist, file)).size;
  const first = new Set<string>();
  const visit = (key: string) => {
    if (first.has(key)) return;
    first.add(key);
    for (const k of manifest.get(key)?.imports ?? []) visit(k);
  };
  visit(entryKey);
  const chunks = [...manifest.entries()]
    .filter(([, c]) => c.file.endsWith('.js'))
    .map(([key, c]) => ({ file: c.file, bytes: bytes(c.file), firstLoad: first.has(key) }))
    .sort((a, b) => b.bytes - a.bytes);
  // Web workers are emitted as assets, outside the manifest: started by code, never a first load.
  const listed = new Set(chunks.map((c) => c.file));
  for (const name of readdirSync(join(dist, 'assets')))
    if (name.endsWith('.js') && !listed.has(`assets/${name}`))
      chunks.push({ file: `assets/${name}`, bytes: bytes(`assets/${name}`), firstLoad: false });
  chunks.sort((a, b) => b.bytes - a.bytes);
  return {
    main: { file: entry.file, bytes: bytes(entry.file) },
    firstLoadBytes: chunks.filter((c) => c.firstLoad).reduce((s, c) => s + c.bytes, 0),
    chunks,
  };
}
