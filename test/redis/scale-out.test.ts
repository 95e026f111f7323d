/**
 * Scale-out under worker deaths, on real processes: a redis-server (AOF), 2 server instances
 * and 3 workers; runs of the kill battery's flow (scripted models, a non-idempotent counting
 * tool) started on both servers while a random worker is killed -9 again and again (and
 * replaced). Every run must end completed with the undisturbed output, its events contiguous
 * and identical on both servers, and no tool call executed twice.
 *
 * Default size: 40 runs, 6 kills. SWITCHBOARD_FULL=1: 200 runs, 20 kills (the size).
 * The seed is logged; SWITCHBOARD_SEED=n replays a failing schedule.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { afterAll, describe, expect, it } from 'vitest';
import { batteryFlow, FINAL_OUTPUT } from '../crash/fixture.js';
import { type Proc, seeded, startServer, startWorker } from './cluster.js';
import { startRedis, type TestRedis } from './redis-server.js';

const FULL = process.env.SWITCHBOARD_FULL === '1';
const RUNS = FULL ? 200 : 40;
const KILLS = FULL ? 20 : 6;
const SEED = Number(process.env.SWITCHBOARD_SEED ?? Date.now() % 1_000_000);

const cleanup: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'sb-scale-'));
  cleanup.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
};

interface RunView {
  id: string;
  status: string;
  output?: unknown;
  error?: { code: string; message: string };
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

async function allEvents(base: string, id: string): Promise<RunEvent[]> {
  return (await getJson<{ events: RunEvent[] }>(`${base}/api/runs/${id}/events?limit=10000`)).events;
}

describe('scale-out: 2 servers, 3 workers, workers killed -9', () => {
  it(`${RUNS} runs, ${KILLS} kills: none lost or stuck, seq contiguous, no tool call twice, outputs as undisturbed`, async () => {
    console.log(`scale-out seed ${SEED} (SWITCHBOARD_SEED=${SEED} to replay), ${RUNS} runs, ${KILLS} kills`);
    const rnd = seeded(SEED);
    const redis: TestRedis = await startRedis({ appendonly: true });
    cleanup.push(() => redis.stop());
    const counter = join(tmp(), 'count.txt');
    const servers = [await startServer(redis.url, tmp()), await startServer(redis.url, tmp())];
    for (const s of servers) cleanup.push(() => s.kill9());
    const workers: Proc[] = [];
    const all: Proc[] = [];
    const spawnWorker = async () => {
      const w = await startWorker(redis.url, tmp(), counter);
      all.push(w);
      cleanup.push(() => w.kill9());
      return w;
    };
    for (let i = 0; i < 3; i++) workers.push(await spawnWorker());

    const flow = batteryFlow(25);
    const ids: string[] = [];
    const starting = (async () => {
      for (let i = 0; i < RUNS; i++) {
        const s = servers[i % 2]!;
        const res = await fetch(`${s.url}/api/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ flow, input: `run ${i}` }),
        });
        expect(res.status).toBe(201);
        ids.push(((await res.json()) as { run: { id: string } }).run.id);
        // Spread over the kill schedule, so that kills land on busy workers.
        await new Promise((r) => setTimeout(r, 20 + rnd() * 80));
      }
    })();
    const kills: string[] = [];
    const replacing: Promise<unknown>[] = [];
    const t0 = Date.now();
    const killing = (async () => {
      for (let k = 0; k < KILLS; k++) {
        await new Promise((r) => setTimeout(r, 250 + rnd() * 500));
        // At least one worker stays up; replacements join when they are ready.
        while (workers.length < 2) await new Promise((r) => setTimeout(r, 50));
        const i = Math.floor(rnd() * workers.length);
        const victim = workers.splice(i, 1)[0]!;
        await victim.kill9();
        kills.push(`kill ${k + 1} at ${Date.now() - t0} ms: ${victim.ready}`);
        replacing.push(spawnWorker().then((w) => workers.push(w)));
      }
    })();
    await Promise.all([starting, killing]).catch((e: Error) => {
      const why = servers.map(
        (x) => `server ${x.url} exit ${x.child.exitCode ?? x.child.signalCode}: ${x.stderr().slice(-3000)}`,
      );
      throw new Error(`${e.message} (${String((e as { cause?: unknown }).cause)})\n${why.join('\n')}`);
    });
    console.log(kills.join('\n'));

    // Every run ends, on both servers.
    const deadline = Date.now() + 120_000;
    const final = new Set(['completed', 'failed', 'cancelled', 'interrupted']);
    for (const s of servers)
      for (;;) {
        const { runs } = await getJson<{ runs: RunView[] }>(`${s.url}/api/runs?limit=1000`);
        const left = ids.filter((id) => !runs.some((r) => r.id === id && final.has(r.status)));
        if (left.length === 0) break;
        if (Date.now() > deadline)
          throw new Error(
            `runs not ended on ${s.url}: ${left.join(' ')}\n${all.map((w) => w.stderr()).join('\n')}`,
          );
        await new Promise((r) => setTimeout(r, 250));
      }

    const counts = new Map<string, number>();
    for (const line of readFileSync(counter, 'utf8').trim().split('\n'))
      counts.set(line, (counts.get(line) ?? 0) + 1);
    const duplicates = [...counts].filter(([, n]) => n > 1);
    expect(duplicates).toEqual([]);

    let replayed = 0;
    for (const id of ids) {
      const [a, b] = await Promise.all(
        servers.map((s) => getJson<{ run: RunView }>(`${s.url}/api/runs/${id}`)),
      );
      expect(a!.run.status, `${id}: ${JSON.stringify(a!.run.error)}`).toBe('completed');
      expect(a!.run.output).toBe(FINAL_OUTPUT);
      expect(b!.run).toMatchObject({ status: 'completed', output: FINAL_OUTPUT });
      const [ea, eb] = await Promise.all(servers.map((s) => allEvents(s.url, id)));
      expect(ea!.map((e) => e.seq)).toEqual(ea!.map((_, i) => i + 1));
      expect(eb).toEqual(ea);
      expect(ea!.at(-1)?.type).toBe('run.completed');
      if (ea!.some((e) => (e as { replayed?: boolean }).replayed)) replayed++;
    }
    await Promise.all(replacing);
    const lines = all.flatMap((w) => w.stderr().split('\n'));
    const fromCheckpoint = lines.filter((l) => l.includes('run taken over')).length;
    const restarted = lines.filter((l) => l.includes('run started again')).length;
    console.log(
      `${ids.length} runs completed; taken over after a worker died: ${fromCheckpoint} from a checkpoint, ${restarted} from the start (before their first checkpoint); ${replayed} runs with replayed events`,
    );
    expect(fromCheckpoint).toBeGreaterThan(0);
    expect(kills).toHaveLength(KILLS);
  }, 300_000);
});
