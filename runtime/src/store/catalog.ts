/**
 * The catalog: flows, the run index and settings, a lowdb document kept in memory and written
 * atomically with fsync — the index in `catalog.json`, each flow in its own file (see
 * catalog-files.ts), so a write costs what it changes. Writes are serialised and coalesced:
 * while one write is in flight, later saves fold into the next one, so 20 runs changing status
 * at once cost two writes, not twenty.
 */
import { type Dict, dict, type Flow } from '@switchboard/schemas/core';
import { Low } from 'lowdb';
import type { RunStatus } from '../engine/types.js';
import { CATALOG_FORMAT, CATALOG_VERSION, CatalogFiles, RUN_STATUS_LIST } from './catalog-files.js';
import { removeStaleTemps } from './json-file.js';

export { CATALOG_FORMAT, CATALOG_VERSION } from './catalog-files.js';

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

/** Why a run stopped that its process did not decide to stop: the disk refused a write. */
export interface RunStop {
  code: string;
  message: string;
  path?: string;
  at: string;
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
  /** Counted from the log's durable events (a replayed turn or tool call counts once). */
  counters: RunCounters;
  /** How many times this run was resumed after its process stopped. */
  resumes: number;
  /** Where it was started from. */
  source: 'api' | 'cli' | 'mcp' | 'attach';
  /**
   * Who started it, as the starter named themselves (an editor's display name, cleaned and at
   * most 40 characters): a label, never an identity. Absent when the request named nobody.
   */
  startedBy?: string;
  scripted?: boolean;
  /** A fork: the run it started from, and where (its recorded state up to that node's turn). */
  parentRunId?: string;
  forkedAt?: { nodeId: string; turn: number };
  /** Set while the run is paused because its log or checkpoint could not be written. */
  pausedBy?: RunStop;
  /** A run another process hosts and streams here (`switchboard run --attach`). */
  attached?: AttachInfo;
}

/**
 * An attached run's link to its process: `connected` (streaming, takes commands), `detached`
 * (its process went away; it may reconnect within the grace period), `abandoned` (it did not:
 * the run was interrupted by that name), `ended` (its final event arrived).
 */
export interface AttachInfo {
  /** The host the process said it runs on, and the address it connected from. */
  host: string;
  address: string;
  state: 'connected' | 'detached' | 'abandoned' | 'ended';
  /** When the state last changed. */
  since: string;
  /** Whether the server held a flow with this id when the run attached. */
  flowKnown: boolean;
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
  return {
    format: CATALOG_FORMAT,
    version: CATALOG_VERSION,
    flows: dict(),
    runs: dict(),
    settings: dict(),
  };
}

/** Every status a run record may hold (the API's run filter accepts exactly these). */
export const RUN_STATUSES: ReadonlySet<string> = new Set<RunStatus>(RUN_STATUS_LIST as RunStatus[]);

export class Catalog {
  private readonly db: Low<CatalogData>;
  private readonly files: CatalogFiles;
  private writing: Promise<void> | undefined;
  private again: Promise<void> | undefined;
  /** Told of every failed write (the store's health). */
  onError?: (e: unknown, file: string) => void;
  /** Told of every write that succeeded. */
  onWritten?: () => void;

  private constructor(readonly file: string) {
    this.files = new CatalogFiles(file);
    this.db = new Low(this.files, emptyCatalog());
  }

  /** Opens the catalog (migrating an older layout); throws a StoreError when a file is damaged. */
  static async open(file: string): Promise<Catalog> {
    await removeStaleTemps(file);
    const c = new Catalog(file);
    await c.db.read();
    return c;
  }

  get data(): CatalogData {
    return this.db.data;
  }

  /** Bytes the last write handed to files (index and changed flows). */
  get lastWriteBytes(): number {
    return this.files.lastWriteBytes;
  }

  /**
   * Writes the current data. Resolves when a write that started after this call is durable.
   * Concurrent callers share one pending write.
   */
  save(): Promise<void> {
    if (!this.writing) {
      this.writing = this.db
        .write()
        .then(
          () => this.onWritten?.(),
          (e: unknown) => {
            this.onError?.(e, this.file);
            throw e;
          },
        )
        .finally(() => {
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
