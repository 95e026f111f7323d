/**
 * Writing flows to the catalog, for the REST routes and for co-editing rooms alike, so that both
 * count revisions the same way: every write of a flow is its revision plus one, and names who
 * made it.
 *
 * A delete leaves a tombstone (who, when) in the catalog: a co-editing room never brings that
 * id back (its saves are refused, its socket is refused), whatever an editor still holds. Only
 * a deliberate REST write of that id (create, replace, import) revives it.
 */
import type { Dict, Flow } from '@switchboard/schemas';
import type { Catalog, FlowRecord, FlowTombstone } from '../store/catalog.js';
import { HttpError } from './errors.js';

export type WriteMode = 'create' | 'replace' | 'upsert';

/** Who writes when the writer did not say (a script, curl, the CLI on this machine). */
export const LOCAL_USER = 'local user';
/** Tombstones kept; the oldest go first (a very old deleted id may be reused by a room). */
export const MAX_TOMBSTONES = 10_000;

export interface WriteOptions {
  /** Who made this revision (default: `LOCAL_USER`). */
  by?: string;
  /** A deliberate write of a deleted id brings it back; a room's save never does. */
  revive?: boolean;
  /** Who asks: a co-editing room's save, or (default) the API. Told to the observer. */
  source?: 'room' | 'api';
}

/** Told of every write made here (not of adopted ones): scale-out shares them (redis/flow-sync.ts). */
export interface FlowRecordsObserver {
  put(rec: FlowRecord, source: 'room' | 'api'): void;
  removed(tomb: FlowTombstone): void;
}

export class FlowRecords {
  /** Tombstones by id (the catalog keeps them as an array: data never becomes an object key). */
  private readonly tombstones = new Map<string, FlowTombstone>();
  observer: FlowRecordsObserver | undefined;

  constructor(private readonly catalog: Catalog) {
    for (const t of catalog.data.deletedFlows ?? [])
      if (t && typeof t.id === 'string') this.tombstones.set(t.id, t);
  }

  private get flows(): Dict<FlowRecord> {
    return this.catalog.data.flows;
  }

  get(id: string): FlowRecord | undefined {
    return Object.hasOwn(this.flows, id) ? this.flows[id] : undefined;
  }

  all(): FlowRecord[] {
    return Object.values(this.flows);
  }

  /** Who deleted flow `id` and when, if it was deleted (and not written again since). */
  deleted(id: string): FlowTombstone | undefined {
    return this.tombstones.get(id);
  }

  /** Whether `id` is free for a new flow: no flow and no tombstone holds it. */
  isFree(id: string): boolean {
    return !this.get(id) && !this.tombstones.has(id);
  }

  private syncTombstones(): void {
    const list = [...this.tombstones.values()];
    this.catalog.data.deletedFlows = list.length ? list : undefined;
  }

  /**
   * Stores a flow (already validated) as the next revision; resolves once the catalog is on disk.
   * `create` refuses an existing id (409), `replace` a missing one (404); a deleted id is
   * refused (410) unless the write is a deliberate one (`revive`).
   */
  async put(
    flow: Flow,
    mode: WriteMode,
    options: WriteOptions = {},
  ): Promise<{ rec: FlowRecord; created: boolean }> {
    const old = this.get(flow.id);
    if (old && mode === 'create')
      throw new HttpError(409, 'exists', `a flow with id ${flow.id} exists already`);
    if (!old && mode === 'replace') throw new HttpError(404, 'not-found', `no flow ${flow.id}`);
    const tomb = this.tombstones.get(flow.id);
    if (tomb && !options.revive) throw goneError(tomb);
    const t = new Date().toISOString();
    const rec: FlowRecord = {
      flow,
      rev: (old?.rev ?? 0) + 1,
      createdAt: old?.createdAt ?? t,
      updatedAt: t,
      updatedBy: options.by ?? LOCAL_USER,
    };
    this.flows[flow.id] = rec;
    if (tomb) {
      this.tombstones.delete(flow.id);
      this.syncTombstones();
    }
    try {
      await this.catalog.save();
    } catch (e) {
      // Keep memory and disk in agreement when the write fails (unless a later write replaced it).
      if (this.flows[flow.id] === rec) {
        if (old) this.flows[flow.id] = old;
        else delete this.flows[flow.id];
        if (tomb) {
          this.tombstones.set(flow.id, tomb);
          this.syncTombstones();
        }
      }
      throw e;
    }
    this.observer?.put(rec, options.source ?? 'api');
    return { rec, created: !old };
  }

  /**
   * Takes a flow record written by another server instance as it is (its revision included);
   * the observer is not told. Resolves once the catalog is on disk.
   */
  async adopt(rec: FlowRecord): Promise<void> {
    this.flows[rec.flow.id] = rec;
    if (this.tombstones.delete(rec.flow.id)) this.syncTombstones();
    await this.catalog.save();
  }

  /** Takes a delete made by another server instance; the observer is not told. */
  async adoptTombstone(tomb: FlowTombstone): Promise<void> {
    if (this.get(tomb.id)) Reflect.deleteProperty(this.flows, tomb.id);
    this.tombstones.delete(tomb.id);
    this.tombstones.set(tomb.id, tomb);
    while (this.tombstones.size > MAX_TOMBSTONES)
      this.tombstones.delete(this.tombstones.keys().next().value as string);
    this.syncTombstones();
    await this.catalog.save();
  }

  /**
   * Deletes a flow and leaves its tombstone; false when there was no flow. `force` leaves the
   * tombstone even then (a room that was never saved, deleted by the people in it).
   */
  async remove(id: string, by = LOCAL_USER, force = false): Promise<FlowTombstone | undefined> {
    const old = this.get(id);
    if (!old && !force) return undefined;
    const tomb: FlowTombstone = { id, deletedAt: new Date().toISOString(), deletedBy: by };
    const before = this.tombstones.get(id);
    if (old) delete this.flows[id];
    this.tombstones.delete(id);
    this.tombstones.set(id, tomb);
    while (this.tombstones.size > MAX_TOMBSTONES)
      this.tombstones.delete(this.tombstones.keys().next().value as string);
    this.syncTombstones();
    try {
      await this.catalog.save();
    } catch (e) {
      if (old && !this.get(id)) this.flows[id] = old;
      if (this.tombstones.get(id) === tomb) {
        this.tombstones.delete(id);
        if (before) this.tombstones.set(id, before);
        this.syncTombstones();
      }
      throw e;
    }
    this.observer?.removed(tomb);
    return tomb;
  }
}

/** The answer for a deleted flow: 410, with who deleted it and when. */
export function goneError(t: FlowTombstone): HttpError {
  return new HttpError(410, 'deleted', `flow ${t.id} was deleted by ${t.deletedBy} at ${t.deletedAt}`, {
    deletedBy: t.deletedBy,
    deletedAt: t.deletedAt,
  });
}
