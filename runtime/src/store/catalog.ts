/**
 * The catalog: flows, the run index and settings, in one lowdb document written atomically
 * with fsync. Writes are serialised and coalesced: while one write is in flight, later saves
 * fold into the next one, so 20 runs changing status at once cost two writes, not twenty.
 */
import { type Dict, dict, type Flow } from '@switchboard/schemas/core';
import { Low } from 'lowdb';
import type { RunStatus } from '../engine/types.js';
import { DurableJSONFile, removeStaleTemps, type ShapeCheck } from './json-file.js';

export const CATALOG_FORMAT = 'switchboard-catalog';
export const CATALOG_VERSION = 1;

export interface FlowRecord {
  flow: Flow;
  /** Increases by one with every write of this flow. */
  rev: number;
  createdAt: string;
  updatedAt: string;
  /** Who wrote this revision, as the writer named themselves (an editor's display name). */
  updatedBy?: string;
}

/** A deleted flow: its id is never brought back by a co-editing room (flow-records.ts). */
export interface FlowTombstone {
  id: string;
  deletedAt: string;
  deletedBy: string;
}

export interface RunCounters {
  turns: number;
  promptTokens: number;
  completionTokens: number;
  toolCalls: number;
}

export interface RunRecord {
  id: string;
  flowId: string;
  flowName: string;
  status: RunStatus;
  createdAt: string;
  updatedAt: string;
  endedAt?: string;
  /** Last seq known to be in the event log. */
  lastSeq: number;
  output?: unknown;
  error?: { code: string; message: string };
  counters: RunCounters;
  /** How many times this run was resumed after its process stopped. */
  resumes: number;
  /** Where it was started from. */
  source: 'api' | 'cli' | 'mcp';
  scripted?: boolean;
}

export interface CatalogData {
  format: typeof CATALOG_FORMAT;
  version: number;
  /** Null-prototype tables (`dict()`): ids come from requests, and `runs["__proto__"]` must be nothing. */
  flows: Dict<FlowRecord>;
  runs: Dict<RunRecord>;
  settings: Dict<unknown>;
  /** Deleted flows, oldest first (absent in catalogs written before deletes were remembered). */
  deletedFlows?: FlowTombstone[];
}

export function emptyCatalog(): CatalogData {
  return { format: CATALOG_FORMAT, version: CATALOG_VERSION, flows: dict(), runs: dict(), settings: dict() };
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every status a run record may hold (the API's run filter accepts exactly these). */
export const RUN_STATUSES: ReadonlySet<string> = new Set<RunStatus>([
  'pending',
  'running',
  'paused',
  'waiting',
  'completed',
  'failed',
  'cancelled',
  'interrupted',
]);

export const checkCatalog: ShapeCheck<CatalogData> = (v) => {
  if (!isObj(v)) return { ok: false, path: '', message: 'expected an object' };
  if (v.format !== CATALOG_FORMAT)
    return {
      ok: false,
      path: '/format',
      message: `expected "${CATALOG_FORMAT}", found ${JSON.stringify(v.format)}`,
    };
  if (v.version !== CATALOG_VERSION)
    return {
      ok: false,
      path: '/version',
      message: `unsupported catalog version ${JSON.stringify(v.version)}`,
    };
  for (const k of ['flows', 'runs', 'settings'] as const)
    if (!isObj(v[k])) return { ok: false, path: `/${k}`, message: 'expected an object' };
  if (v.deletedFlows !== undefined && !Array.isArray(v.deletedFlows))
    return { ok: false, path: '/deletedFlows', message: 'expected an array' };
  for (const [id, rec] of Object.entries(v.flows as Record<string, unknown>)) {
    if (!isObj(rec) || !isObj(rec.flow) || rec.flow.id !== id || typeof rec.rev !== 'number')
      return {
        ok: false,
        path: `/flows/${id}`,
        message: 'expected { flow (with this id), rev, createdAt, updatedAt }',
      };
  }
  for (const [id, rec] of Object.entries(v.runs as Record<string, unknown>)) {
    if (
      !isObj(rec) ||
      rec.id !== id ||
      typeof rec.flowId !== 'string' ||
      !RUN_STATUSES.has(rec.status as string) ||
      typeof rec.lastSeq !== 'number' ||
      !isObj(rec.counters)
    )
      return {
        ok: false,
        path: `/runs/${id}`,
        message: 'expected { id, flowId, status, lastSeq, counters, … }',
      };
  }
  // Parsed JSON has Object.prototype: the tables become null-prototype, as `emptyCatalog` makes them.
  const data = v as unknown as CatalogData;
  return {
    ok: true,
    value: { ...data, flows: dict(data.flows), runs: dict(data.runs), settings: dict(data.settings) },
  };
};

export class Catalog {
  private readonly db: Low<CatalogData>;
  private writing: Promise<void> | undefined;
  private again: Promise<void> | undefined;

  private constructor(readonly file: string) {
    this.db = new Low(new DurableJSONFile(file, checkCatalog), emptyCatalog());
  }

  /** Opens the catalog; throws a StoreError when the file exists but is damaged. */
  static async open(file: string): Promise<Catalog> {
    await removeStaleTemps(file);
    const c = new Catalog(file);
    await c.db.read();
    return c;
  }

  get data(): CatalogData {
    return this.db.data;
  }

  /**
   * Writes the current data. Resolves when a write that started after this call is durable.
   * Concurrent callers share one pending write.
   */
  save(): Promise<void> {
    if (!this.writing) {
      this.writing = this.db.write().finally(() => {
        this.writing = undefined;
      });
      return this.writing;
    }
    if (!this.again) {
      const after = this.writing;
      this.again = after
        .catch(() => {})
        .then(() => {
          this.again = undefined;
          return this.save();
        });
    }
    return this.again;
  }

  /** Waits for every write in flight. */
  async flush(): Promise<void> {
    while (this.writing || this.again) await (this.again ?? this.writing)?.catch(() => {});
  }
}
