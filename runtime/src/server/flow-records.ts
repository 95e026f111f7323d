/**
 * Writing flows to the catalog, for the REST routes and for co-editing rooms alike, so that both
 * count revisions the same way: every write of a flow is its revision plus one.
 */
import type { Dict, Flow } from '@switchboard/schemas';
import type { Catalog, FlowRecord } from '../store/catalog.js';
import { HttpError } from './errors.js';

export type WriteMode = 'create' | 'replace' | 'upsert';

export class FlowRecords {
  constructor(private readonly catalog: Catalog) {}

  private get flows(): Dict<FlowRecord> {
    return this.catalog.data.flows;
  }

  get(id: string): FlowRecord | undefined {
    return Object.hasOwn(this.flows, id) ? this.flows[id] : undefined;
  }

  all(): FlowRecord[] {
    return Object.values(this.flows);
  }

  /**
   * Stores a flow (already validated) as the next revision; resolves once the catalog is on disk.
   * `create` refuses an existing id (409), `replace` a missing one (404).
   */
  async put(flow: Flow, mode: WriteMode): Promise<{ rec: FlowRecord; created: boolean }> {
    const old = this.get(flow.id);
    if (old && mode === 'create')
      throw new HttpError(409, 'exists', `a flow with id ${flow.id} exists already`);
    if (!old && mode === 'replace') throw new HttpError(404, 'not-found', `no flow ${flow.id}`);
    const t = new Date().toISOString();
    const rec: FlowRecord = { flow, rev: (old?.rev ?? 0) + 1, createdAt: old?.createdAt ?? t, updatedAt: t };
    this.flows[flow.id] = rec;
    try {
      await this.catalog.save();
    } catch (e) {
      // Keep memory and disk in agreement when the write fails (unless a later write replaced it).
      if (this.flows[flow.id] === rec) {
        if (old) this.flows[flow.id] = old;
        else delete this.flows[flow.id];
      }
      throw e;
    }
    return { rec, created: !old };
  }

  /** Deletes a flow; false when there was none. */
  async remove(id: string): Promise<boolean> {
    const old = this.get(id);
    if (!old) return false;
    delete this.flows[id];
    try {
      await this.catalog.save();
    } catch (e) {
      if (!this.get(id)) this.flows[id] = old;
      throw e;
    }
    return true;
  }
}
