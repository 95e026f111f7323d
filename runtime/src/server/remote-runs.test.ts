/**
 * RemoteRuns with an in-process executor on a real store: a run another instance announced is
 * waited for (`arrived`) instead of being "not found", and an announcement whose recording
 * failed is recorded on a later tick rather than lost.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunRecord } from '../store/catalog.js';
import type { RunSpec } from '../store/run-files.js';
import { Store } from '../store/store.js';
import { RemoteRuns, type RunExecutor } from './remote-runs.js';
import { zeroCounters } from './run-counters.js';

type Announce = (record: RunRecord, spec: () => Promise<RunSpec | undefined>) => void;

/** What Redis holds, as far as a server instance sees it; announcements are sent by the test. */
class FakeExecutor implements RunExecutor {
  readonly specs = new Map<string, RunSpec>();
  readonly events = new Map<string, RunEvent[]>();
  announce: Announce = () => {};
  pokes = 0;
  async enqueue(): Promise<void> {}
  async eventsAfter(runId: string, after: number, limit: number): Promise<RunEvent[]> {
    return (this.events.get(runId) ?? []).filter((e) => e.seq > after).slice(0, limit);
  }
  async command(): Promise<string | undefined> {
    return undefined;
  }
  async knows(runId: string): Promise<boolean> {
    return this.specs.has(runId);
  }
  poke(): void {
    this.pokes++;
  }
  async watch(h: { announced: Announce }): Promise<void> {
    this.announce = h.announced;
  }
  async close(): Promise<void> {}
}

const dirs: string[] = [];
const stores: Store[] = [];
const remotes: RemoteRuns[] = [];
afterEach(async () => {
  for (const r of remotes.splice(0)) await r.close();
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'sb-remote-'));
  dirs.push(dir);
  const store = await Store.open(dir, { durability: 'os' });
  stores.push(store);
  const executor = new FakeExecutor();
  const warnings: string[] = [];
  const remote = new RemoteRuns({
    store,
    executor,
    watch: () => {},
    log: { warn: (_o, msg) => warnings.push(msg) },
    pollMs: 20,
  });
  remotes.push(remote);
  await remote.recover();
  return { store, executor, remote, warnings };
}

function runOf(id: string): { record: RunRecord; spec: RunSpec } {
  const now = new Date().toISOString();
  const flow = { version: 1, id: 'f', name: 'F', nodes: [], edges: [] } as unknown as RunSpec['flow'];
  return {
    record: {
      id,
      flowId: 'f',
      flowName: 'F',
      status: 'running',
      createdAt: now,
      updatedAt: now,
      lastSeq: 0,
      counters: zeroCounters(),
      resumes: 0,
      source: 'api',
    },
    spec: { version: 1, runId: id, flow, input: 'x', createdAt: now },
  };
}

describe('RemoteRuns', () => {
  it('answers at once that a run no instance has does not exist', async () => {
    const { remote, executor } = await setup();
    const t = Date.now();
    expect(await remote.arrived('r-nowhere')).toBe(false);
    expect(Date.now() - t).toBeLessThan(1000);
    expect(executor.pokes).toBe(0);
  });

  it('waits for a run the executor has until its announcement is recorded here', async () => {
    const { remote, executor, store } = await setup();
    const { record, spec } = runOf('r-late');
    executor.specs.set(record.id, spec);
    const waiting = remote.arrived(record.id, 5000);
    await new Promise((r) => setTimeout(r, 50));
    expect(executor.pokes).toBe(1);
    executor.announce(record, async () => spec);
    expect(await waiting).toBe(true);
    expect(store.catalog.data.runs[record.id]?.flowId).toBe('f');
    expect(remote.has(record.id)).toBe(true);
  });

  it('gives up after its limit when the announcement never comes', async () => {
    const { remote, executor } = await setup();
    const { record, spec } = runOf('r-lost');
    executor.specs.set(record.id, spec);
    expect(await remote.arrived(record.id, 100)).toBe(false);
  });

  it('records an announced run on a later tick when reading its spec failed the first time', async () => {
    const { remote, executor, store, warnings } = await setup();
    const { record, spec } = runOf('r-retry');
    executor.specs.set(record.id, spec);
    let reads = 0;
    executor.announce(record, async () => {
      reads++;
      if (reads === 1) throw new Error('Connection is closed.');
      return spec;
    });
    expect(await remote.arrived(record.id, 5000)).toBe(true);
    expect(reads).toBe(2);
    expect(warnings).toContain('could not record a run; trying again');
    expect(store.catalog.data.runs[record.id]).toBeDefined();
  });

  it("follows a run past a delegated run's end in its log, to its own end", async () => {
    const { remote, executor, store } = await setup();
    const { record, spec } = runOf('r-parent');
    executor.specs.set(record.id, spec);
    const ts = new Date().toISOString();
    const ev = (seq: number, type: string, runId: string) =>
      ({ seq, ts, type, runId }) as unknown as RunEvent;
    // The delegate's end is read first; the parent's own events come later.
    executor.events.set(record.id, [ev(1, 'run.started', record.id), ev(2, 'run.completed', 'r-parent~1')]);
    executor.announce(record, async () => spec);
    expect(await remote.arrived(record.id, 5000)).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    executor.events.get(record.id)!.push(ev(3, 'node.started', record.id), ev(4, 'run.completed', record.id));
    await remote.settled(record.id);
    expect(store.readEvents(record.id).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(remote.has(record.id)).toBe(false);
  });
});
