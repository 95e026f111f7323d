/**
 * What the run history shows of each run beyond its index entry: the path it took (the nodes of
 * the run itself, in the order they started) and its cost (the node summaries' priced calls, the
 * same numbers as `GET /api/runs/:id/nodes`). Computed from the run's log on first ask and then
 * only from the events after the last one read, so listing a flow's runs again costs what their
 * logs grew by; a finished run's digest is computed once per process.
 */
import { NodeSummaries, type PricedModel, type RunEvent } from '@switchboard/schemas';
import type { RunRecord } from '../store/catalog.js';
import type { Store } from '../store/store.js';

/** Nodes of a path listed; a longer path says how many more it took (`pathMore`). */
export const MAX_PATH = 40;
/** Digests remembered (the oldest asked is forgotten first). */
const MAX_DIGESTS = 2000;

export interface RunDigest {
  /** Nodes of the run (not of a delegated one) in the order they started, repeats in a row merged. */
  path: string[];
  /** Steps of the path beyond `MAX_PATH`. */
  pathMore?: number;
  /** Cost of its priced model calls; absent when none of its models has a price. */
  cost?: number;
}

interface Acc {
  /** Last seq folded. */
  seq: number;
  summaries: NodeSummaries;
  path: string[];
  more: number;
}

export class RunDigests {
  private readonly cache = new Map<string, Acc>();

  constructor(private readonly store: Store) {}

  /** The digest of `rec` as of its log now. */
  async of(rec: RunRecord): Promise<RunDigest> {
    let acc = this.cache.get(rec.id);
    if (!acc) {
      const spec = await this.store.readSpec(rec.id).catch(() => undefined);
      const models: Readonly<Record<string, PricedModel>> = spec?.flow.models ?? {};
      // Another request may have started the same digest meanwhile: one copy wins.
      acc = this.cache.get(rec.id) ?? { seq: 0, summaries: new NodeSummaries(models), path: [], more: 0 };
    } else this.cache.delete(rec.id);
    this.cache.set(rec.id, acc);
    if (this.cache.size > MAX_DIGESTS) this.cache.delete(this.cache.keys().next().value!);
    if (rec.lastSeq > acc.seq) {
      let events: RunEvent[] = [];
      try {
        events = this.store.readEvents(rec.id, acc.seq);
      } catch {
        // An unreadable log: the entry says so elsewhere; the digest is what was read.
      }
      for (const e of events) fold(acc, rec.id, e);
    }
    return digestOf(acc);
  }

  /** A deleted run's digest goes with it. */
  forget(runId: string): void {
    this.cache.delete(runId);
  }
}

function fold(acc: Acc, runId: string, e: RunEvent): void {
  if (e.seq <= acc.seq) return;
  acc.seq = e.seq;
  acc.summaries.add(e);
  if (e.type !== 'node.started' || e.runId !== runId || e.replayed || e.nodeId === undefined) return;
  if (acc.path.at(-1) === e.nodeId && acc.more === 0) return;
  if (acc.path.length < MAX_PATH) acc.path.push(e.nodeId);
  else acc.more++;
}

function digestOf(acc: Acc): RunDigest {
  const d: RunDigest = { path: [...acc.path] };
  if (acc.more > 0) d.pathMore = acc.more;
  let cost: number | undefined;
  for (const n of acc.summaries.list()) if (n.cost !== undefined) cost = (cost ?? 0) + n.cost;
  if (cost !== undefined) d.cost = cost;
  return d;
}
