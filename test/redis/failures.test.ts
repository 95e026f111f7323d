/**
 * Scale-out failures other than a worker's death, on real processes: a server instance killed
 * -9 (its client moves to the other instance and misses nothing), and Redis itself killed -9
 * and restarted mid-run with AOF (runs continue, or fail by name; nothing silently dropped).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { afterAll, describe, expect, it } from 'vitest';
import { batteryFlow, FINAL_OUTPUT } from '../crash/fixture.js';
import { EventsClient, isFinal } from '../server/helpers.js';
import { startServer, startWorker } from './cluster.js';
import { startRedis } from './redis-server.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'sb-fail-'));
  cleanup.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
};

async function startRun(base: string, body: object): Promise<string> {
  const res = await fetch(`${base}/api/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`start: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { run: { id: string } }).run.id;
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return (await res.json()) as T;
}

const wsOf = (base: string) => `${base.replace('http', 'ws')}/api/ws`;

/** Redis (AOF), two server instances A and B, one worker process; all stopped after the file. */
async function twoServersOneWorker() {
  const redis = await startRedis({ appendonly: true });
  cleanup.push(() => redis.stop());
  const counter = join(tmp(), 'count.txt');
  const a = await startServer(redis.url, tmp());
  const b = await startServer(redis.url, tmp());
  cleanup.push(
    () => a.kill9(),
    () => b.kill9(),
  );
  const w = await startWorker(redis.url, tmp(), counter);
  cleanup.push(() => w.kill9());
  return { a, b };
}

describe('scale-out failures', () => {
  it('a server instance killed -9: its client resubscribes on the other with its last seq and misses nothing', async () => {
    const { a, b } = await twoServersOneWorker();

    const id = await startRun(a.url, { flow: batteryFlow(120), input: 'go' });
    const ca = new EventsClient(wsOf(a.url), a.url);
    await ca.open();
    ca.subscribeAfter(id, 0);
    await ca.until(() => (ca.events.get(id)?.length ?? 0) >= 4, 'some events on A', 60_000);
    await a.kill9();
    const got = [...(ca.events.get(id) ?? [])];
    expect(isFinal(got.at(-1), id)).toBe(false);

    const cb = new EventsClient(wsOf(b.url), b.url);
    await cb.open();
    cb.subscribeAfter(id, got.at(-1)!.seq);
    await cb.until(
      () => isFinal(cb.events.get(id)?.at(-1), id) || cb.problems.length > 0,
      'the end of the run on B',
      60_000,
    );
    expect(cb.problems).toEqual([]);
    const all = [...got, ...cb.events.get(id)!];
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    expect(all.at(-1)?.type).toBe('run.completed');
    const onB = (await getJson<{ events: RunEvent[] }>(`${b.url}/api/runs/${id}/events?limit=10000`)).events;
    expect(all).toEqual(onB);
    expect(ca.problems).toEqual([]);
    expect(cb.problems).toEqual([]);
    await cb.close();
  }, 120_000);

  it('a client that moves to an instance which has not recorded the run yet is answered once it has, not told "no run"', async () => {
    const { a, b } = await twoServersOneWorker();

    // B is stopped while the run starts, so the announcement is still unread when the client comes.
    b.child.kill('SIGSTOP');
    let stopped = true;
    cleanup.push(() => {
      if (stopped) b.child.kill('SIGCONT');
    });
    const id = await startRun(a.url, { flow: batteryFlow(120), input: 'go' });
    const ca = new EventsClient(wsOf(a.url), a.url);
    await ca.open();
    ca.subscribeAfter(id, 0);
    await ca.until(() => (ca.events.get(id)?.length ?? 0) >= 4, 'some events on A', 60_000);
    await a.kill9();
    const got = [...(ca.events.get(id) ?? [])];
    b.child.kill('SIGCONT');
    stopped = false;

    const [run, cb] = await Promise.all([
      fetch(`${b.url}/api/runs/${id}`),
      (async () => {
        const cb = new EventsClient(wsOf(b.url), b.url);
        await cb.open();
        cb.subscribeAfter(id, got.at(-1)!.seq);
        return cb;
      })(),
    ]);
    expect(run.status).toBe(200);
    await cb.until(
      () => isFinal(cb.events.get(id)?.at(-1), id) || cb.problems.length > 0,
      'the end of the run on B',
      60_000,
    );
    expect(cb.problems).toEqual([]);
    const all = [...got, ...cb.events.get(id)!];
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    expect(all.at(-1)?.type).toBe('run.completed');
    await cb.close();
  }, 120_000);

  it('Redis killed -9 and restarted mid-run (AOF): every run continues or fails by name; seq contiguous; no tool call twice', async () => {
    const redis = await startRedis({ appendonly: true });
    cleanup.push(() => redis.stop());
    const counter = join(tmp(), 'count.txt');
    const s = await startServer(redis.url, tmp());
    cleanup.push(() => s.kill9());
    for (let i = 0; i < 2; i++) {
      const w = await startWorker(redis.url, tmp(), counter);
      cleanup.push(() => w.kill9());
    }
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await startRun(s.url, { flow: batteryFlow(60), input: `run ${i}` }));
    // Mid-run: some events are out for every run.
    const deadline0 = Date.now() + 60_000;
    for (;;) {
      const { runs } = await getJson<{ runs: Array<{ id: string; lastSeq: number }> }>(`${s.url}/api/runs`);
      if (runs.filter((r) => r.lastSeq > 0).length >= 2 || Date.now() > deadline0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await redis.restart({ hard: true, downMs: 1000 });

    const final = new Set(['completed', 'failed', 'cancelled', 'interrupted']);
    const deadline = Date.now() + 90_000;
    let runs: Array<{ id: string; status: string; output?: unknown; error?: { code: string } }> = [];
    for (;;) {
      runs = (await getJson<{ runs: typeof runs }>(`${s.url}/api/runs?limit=100`)).runs;
      if (ids.every((id) => runs.some((r) => r.id === id && final.has(r.status)))) break;
      if (Date.now() > deadline) throw new Error(`runs not ended: ${JSON.stringify(runs)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    for (const id of ids) {
      const r = runs.find((x) => x.id === id)!;
      if (r.status === 'completed') expect(r.output).toBe(FINAL_OUTPUT);
      else {
        expect(r.status).toBe('failed');
        expect(r.error?.code).toMatch(/^[a-z_]+$/);
      }
      const evs = (await getJson<{ events: RunEvent[] }>(`${s.url}/api/runs/${id}/events?limit=10000`))
        .events;
      expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
    }
    const counts = new Map<string, number>();
    for (const line of readFileSync(counter, 'utf8').trim().split('\n'))
      counts.set(line, (counts.get(line) ?? 0) + 1);
    expect([...counts].filter(([, n]) => n > 1)).toEqual([]);
    console.log(
      `after the Redis restart: ${runs
        .filter((r) => ids.includes(r.id))
        .map((r) => r.status)
        .join(', ')}`,
    );
  }, 150_000);
});
