/**
 * How the catalog lies on disk: `catalog.json` holds only small index records (each flow's
 * revision, times and file; the run index; settings), and every flow document lives in its own
 * file under `flows/`, so a write costs what the flows it changes cost — not the size of every
 * flow stored (with 8 flows of 8 MiB, one small PUT used to rewrite 64 MiB).
 *
 * A flow's file is named after its id, revision and a random tag and is never rewritten in
 * place: a write puts the new file down (atomically, fsynced), then replaces the index
 * (atomically, fsynced), and only then removes the files the index no longer names. A crash at
 * any point leaves an index naming complete files; files it does not name are left-overs of an
 * interrupted write and are removed at the next open. A version-1 catalog (flows inline) is
 * migrated the same way when opened.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { dict, type Flow } from '@switchboard/schemas/core';
import type { Adapter } from 'lowdb';
import { fsyncDir, writeFileAtomic } from './atomic.js';
import type { CatalogData, FlowRecord } from './catalog.js';
import { StoreError } from './errors.js';
import { faultAsync } from './faults.js';
import { parseStoreText, type ShapeCheck } from './json-file.js';

export const CATALOG_FORMAT = 'switchboard-catalog';
/** 1: flows inline (read and migrated); 2: flows in their own files. */
export const CATALOG_VERSION = 2;

export interface FlowIndexRecord {
  rev: number;
  createdAt: string;
  updatedAt: string;
  /** The flow document's file under `flows/`. */
  file: string;
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A flow file's name: never hidden, no separator, bounded whatever the id. */
const FILE_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,200}\.json$/;

export function flowFileName(id: string, rev: number): string {
  const safe = id.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80);
  const hash = createHash('sha256').update(id).digest('hex').slice(0, 8);
  return `${safe || '_'}.${hash}.r${rev}.${randomBytes(4).toString('hex')}.json`;
}

/** Makes `dir` inside its existing parent (EEXIST is fine; a missing parent is an error). */
export function mkdirIn(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
}

/** The parts of the index every version shares; `flows` is checked by the caller. */
function checkCommon(v: Record<string, unknown>): { ok: false; path: string; message: string } | undefined {
  for (const k of ['flows', 'runs', 'settings'] as const)
    if (!isObj(v[k])) return { ok: false, path: `/${k}`, message: 'expected an object' };
  if (v.deletedFlows !== undefined && !Array.isArray(v.deletedFlows))
    return { ok: false, path: '/deletedFlows', message: 'expected an array' };
  for (const [id, rec] of Object.entries(v.runs as Record<string, unknown>)) {
    if (
      !isObj(rec) ||
      rec.id !== id ||
      typeof rec.flowId !== 'string' ||
      !RUN_STATUS_LIST.includes(rec.status as string) ||
      typeof rec.lastSeq !== 'number' ||
      !isObj(rec.counters)
    )
      return {
        ok: false,
        path: `/runs/${id}`,
        message: 'expected { id, flowId, status, lastSeq, counters, … }',
      };
  }
  return undefined;
}

export const RUN_STATUS_LIST: readonly string[] = [
  'pending',
  'running',
  'paused',
  'waiting',
  'completed',
  'failed',
  'cancelled',
  'interrupted',
];

type OnDisk =
  | { version: 1; data: CatalogData }
  | { version: 2; index: Record<string, FlowIndexRecord>; rest: Omit<CatalogData, 'flows'> };

const checkIndex: ShapeCheck<OnDisk> = (v) => {
  if (!isObj(v)) return { ok: false, path: '', message: 'expected an object' };
  if (v.format !== CATALOG_FORMAT)
    return {
      ok: false,
      path: '/format',
      message: `expected "${CATALOG_FORMAT}", found ${JSON.stringify(v.format)}`,
    };
  if (v.version !== 1 && v.version !== 2)
    return {
      ok: false,
      path: '/version',
      message: `unsupported catalog version ${JSON.stringify(v.version)}`,
    };
  const bad = checkCommon(v);
  if (bad) return bad;
  const flows = v.flows as Record<string, unknown>;
  if (v.version === 1) {
    for (const [id, rec] of Object.entries(flows))
      if (!isObj(rec) || !isObj(rec.flow) || rec.flow.id !== id || typeof rec.rev !== 'number')
        return {
          ok: false,
          path: `/flows/${id}`,
          message: 'expected { flow (with this id), rev, createdAt, updatedAt }',
        };
    return { ok: true, value: { version: 1, data: v as unknown as CatalogData } };
  }
  for (const [id, rec] of Object.entries(flows))
    if (!isObj(rec) || typeof rec.rev !== 'number' || typeof rec.file !== 'string' || !FILE_RE.test(rec.file))
      return { ok: false, path: `/flows/${id}`, message: 'expected { rev, createdAt, updatedAt, file }' };
  const { flows: _f, ...rest } = v;
  return {
    ok: true,
    value: {
      version: 2,
      index: flows as Record<string, FlowIndexRecord>,
      rest: rest as unknown as Omit<CatalogData, 'flows'>,
    },
  };
};

const checkFlowFile =
  (id: string): ShapeCheck<Flow> =>
  (v) =>
    isObj(v) && v.id === id
      ? { ok: true, value: v as unknown as Flow }
      : { ok: false, path: '/id', message: `expected the flow ${JSON.stringify(id)}` };

export class CatalogFiles implements Adapter<CatalogData> {
  readonly flowsDir: string;
  /** The record each flow's file was written from, and that file: a changed record is a new object. */
  private readonly written = new Map<string, { rec: FlowRecord; file: string }>();
  /** Files written by a write whose index failed. */
  private readonly orphans = new Set<string>();
  /** Bytes handed to files by the last write (tests check a write's cost with it). */
  lastWriteBytes = 0;

  constructor(readonly file: string) {
    this.flowsDir = join(file, '..', 'flows');
  }

  async read(): Promise<CatalogData | null> {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new StoreError('io', `cannot read ${this.file}: ${(e as Error).message}`, this.file);
    }
    const disk = parseStoreText(text, this.file, checkIndex);
    if (disk.version === 1) {
      // Migrated: every flow goes to its own file, then the index replaces the old catalog.
      const data = normalise(disk.data);
      this.sweep(new Set());
      await this.write(data);
      return data;
    }
    const flows = dict<FlowRecord>();
    for (const [id, r] of Object.entries(disk.index)) {
      const path = join(this.flowsDir, r.file);
      let body: string;
      try {
        body = readFileSync(path, 'utf8');
      } catch (e) {
        throw new StoreError(
          'io',
          `the catalog names ${path} for flow ${JSON.stringify(id)}, which cannot be read: ${(e as Error).message}`,
          path,
        );
      }
      const rec: FlowRecord = {
        flow: parseStoreText(body, path, checkFlowFile(id)),
        rev: r.rev,
        createdAt: r.createdAt,
        updatedAt: r.updatedAt,
      };
      flows[id] = rec;
      this.written.set(id, { rec, file: r.file });
    }
    this.sweep(new Set(Object.values(disk.index).map((r) => r.file)));
    return normalise({ ...disk.rest, format: CATALOG_FORMAT, version: CATALOG_VERSION, flows });
  }

  /** Removes flow files the index does not name (left by an interrupted write). */
  private sweep(keep: Set<string>): void {
    let names: string[];
    try {
      names = readdirSync(this.flowsDir);
    } catch {
      return;
    }
    for (const n of names)
      if (!keep.has(n))
        try {
          unlinkSync(join(this.flowsDir, n));
        } catch {}
  }

  /** Writes the files of changed flows, then the index, then removes files no longer named. */
  async write(data: CatalogData): Promise<void> {
    let bytes = 0;
    const index = dict<FlowIndexRecord>();
    const fresh = new Map<string, { rec: FlowRecord; file: string }>();
    let madeDir = false;
    for (const [id, rec] of Object.entries(data.flows)) {
      let w = this.written.get(id);
      if (!w || w.rec !== rec) {
        if (!madeDir) {
          await faultAsync('mkdir', this.flowsDir);
          // Not recursive: a data directory that vanished (an unmounted volume) is never made
          // again under it, on the wrong disk; the write fails as storage_unavailable.
          mkdirIn(this.flowsDir);
          madeDir = true;
        }
        const file = flowFileName(id, rec.rev);
        const body = JSON.stringify(rec.flow);
        // The directory is fsynced once, with the index's, below.
        await writeFileAtomic(join(this.flowsDir, file), body, { fsync: true, dirSync: false });
        bytes += Buffer.byteLength(body);
        w = { rec, file };
        fresh.set(id, w);
      }
      index[id] = { rev: rec.rev, createdAt: rec.createdAt, updatedAt: rec.updatedAt, file: w.file };
    }
    if (fresh.size > 0) await fsyncDir(this.flowsDir);
    const body = `${JSON.stringify({ ...data, version: CATALOG_VERSION, flows: index }, null, 1)}\n`;
    try {
      await writeFileAtomic(this.file, body);
    } catch (e) {
      // Not named by the index (unless the rename went through and only a later step failed):
      // removed after the next index write that does not name them, or at the next open.
      for (const w of fresh.values()) this.orphans.add(w.file);
      throw e;
    }
    bytes += Buffer.byteLength(body);
    this.lastWriteBytes = bytes;
    const named = new Set(Object.values(index).map((r) => r.file));
    for (const [id, w] of this.written)
      if (!named.has(w.file)) {
        this.unlink(w.file);
        this.written.delete(id);
      }
    for (const [id, w] of fresh) this.written.set(id, w);
    for (const f of this.orphans) if (!named.has(f)) this.unlink(f);
    this.orphans.clear();
  }

  private unlink(file: string): void {
    try {
      unlinkSync(join(this.flowsDir, file));
    } catch {}
  }
}

function normalise(d: CatalogData): CatalogData {
  return {
    format: CATALOG_FORMAT,
    version: CATALOG_VERSION,
    flows: dict(d.flows),
    runs: dict(d.runs),
    settings: dict(d.settings),
    ...(d.deletedFlows ? { deletedFlows: d.deletedFlows } : {}),
  };
}
