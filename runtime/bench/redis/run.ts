/**
 * Scale-out benchmark (`pnpm bench:redis`, a few minutes on 2 cores): a real redis-server
 * (AOF, everysec), one server instance in this process, worker processes (test/redis/worker-main.ts,
 * concurrency 4 each) on the same machine.
 * - throughput: 1,000 short runs (three scripted agents, instant replies) on 1, 2 and 4 workers,
 *   from the first start to the last run recorded by the server;
 * - event latency, engine emit (`ts`) to a WebSocket client of the server, p50/p99, through
 *   Redis against the embedded server (a flow of agents replying every 20 ms);
 * - takeover: a worker killed -9 mid-run; time from the kill to the run's next event at the client.
 * Figures print and go to results.json next to this file. BENCH_RUNS overrides 1,000.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { Redis } from 'ioredis';
import WebSocket from 'ws';
import { type Proc, startWorker } from '../../../test/redis/cluster.js';
import { startRedis } from '../../../test/redis/redis-server.js';
import { agent, edge, flow, node } from '../../src/engine/testing/index.js';
import { createServer, type SwitchboardServer } from '../../src/server/index.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 1000);
const results: Record<string, unknown> = {
  machine: `${cpus().length} cores (${cpus()[0]?.model ?? '?'}), Node ${process.version}; redis-server, server and workers on the same machine`,
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const round = (x: number) => Math.round(x * 10) / 10;
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'sb-bench-redis-'));
  dirs.push(d);
  return d;
};

function chain(n: number, latencyMs: number, id: string): Flow {
  const names = Array.from({ length: n }, (_, i) => `a${i}`);
  const f = flow(
    [node('start', 'start'), ...names.map((a) => agent(a)), node('end', 'end')],
    [
      edge('start', names[0]!),
      ...names.slice(1).map((a, i) => edge(names[i]!, a)),
      edge(names.at(-1)!, 'end'),
    ],
  );
  return {
    ...f,
    id,
    name: id,
    models: {
      default: {
        provider: 'scripted',
        latencyMs,
        script: names.map((a) => ({ node: a, text: `from ${a}` })),
      },
    },
  };
}

async function server(redisUrl?: string): Promise<SwitchboardServer> {
  const s = await createServer({
    dataDir: tmp(),
    port: 0,
    editorDir: false,
    templatesDir: false,
    maxRuns: 100_000,
    logger: false,
    ...(redisUrl ? { redis: { url: redisUrl } } : {}),
  });
  await s.listen();
  return s;
}

async function workers(url: string, n: number, counter: string): Promise<Proc[]> {
  return Promise.all(Array.from({ length: n }, () => startWorker(url, tmp(), counter, 4)));
}

/** `n` workers on Redis at `url`, or (n = 0) the embedded server running the runs itself. */
async function throughput(url: string, n: number): Promise<number> {
  await new Redis(url).flushall();
  const s = await server(n === 0 ? undefined : url);
  const ws = await workers(url, n, join(tmp(), 'count.txt'));
  const f = chain(3, 0, 'short');
  const t0 = performance.now();
  const ids: string[] = [];
  // Started 50 at a time, as concurrent clients would: the start path (spec and index written
  // and synced) is the server's, the same as embedded; what is measured is the workers.
  for (let i = 0; i < RUNS; i += 50) {
    const batch = Array.from({ length: Math.min(50, RUNS - i) }, (_, j) =>
      s.runs.start({ flow: f, input: i + j, source: 'api' }),
    );
    for (const r of await Promise.all(batch)) ids.push(r.id);
  }
  for (const id of ids) await s.runs.settled(id);
  const ms = performance.now() - t0;
  const bad = ids.filter((id) => s.store.catalog.data.runs[id]?.status !== 'completed');
  if (bad.length) throw new Error(`${bad.length} runs did not complete`);
  await Promise.all(ws.map((w) => w.stop()));
  await s.close();
  return (RUNS / ms) * 1000;
}

/** Emit-to-client latency of every event of `runs` runs, watched over the server's WebSocket. */
async function latency(s: SwitchboardServer, runs: number): Promise<number[]> {
  const addr = s.app.server.address() as { port: number };
  const ws = new WebSocket(`ws://127.0.0.1:${addr.port}/api/ws`);
  await new Promise((r) => ws.once('open', r));
  const lat: number[] = [];
  const ended = new Set<string>();
  ws.on('message', (d) => {
    const m = JSON.parse(String(d)) as { type: string; runId: string; events?: RunEvent[] };
    const t = Date.now();
    for (const e of m.events ?? []) {
      lat.push(t - e.ts);
      if (e.type === 'run.completed') ended.add(e.runId);
    }
  });
  const f = chain(10, 20, 'paced');
  for (let i = 0; i < runs; i++) {
    const { id } = await s.runs.start({ flow: f, input: i, source: 'api' });
    ws.send(JSON.stringify({ type: 'subscribe', runId: id, after: 0 }));
    while (!ended.has(id)) await sleep(20);
  }
  ws.close();
  return lat;
}

async function takeover(url: string, rounds: number): Promise<number[]> {
  await new Redis(url).flushall();
  const s = await server(url);
  const counter = join(tmp(), 'count.txt');
  const ws = await workers(url, 2, counter);
  const addr = s.app.server.address() as { port: number };
  const out: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const client = new WebSocket(`ws://127.0.0.1:${addr.port}/api/ws`);
    await new Promise((res) => client.once('open', res));
    let last = 0;
    let lastAt = 0;
    client.on('message', (d) => {
      const m = JSON.parse(String(d)) as { events?: RunEvent[] };
      for (const e of m.events ?? []) {
        last = e.seq;
        lastAt = performance.now();
      }
    });
    const { id } = await s.runs.start({ flow: chain(40, 100, 'slow'), input: r, source: 'api' });
    client.send(JSON.stringify({ type: 'subscribe', runId: id, after: 0 }));
    while (last < 15) await sleep(10);
    const st = await (await import('../../src/redis/status.js')).clusterStatus(url);
    const holder = st.workers.find((w) => w.runs.includes(id));
    const victim = ws.find((w) => holder && w.ready === holder.id);
    if (!victim) throw new Error('no worker holds the run');
    const killedAt = performance.now();
    const seqAtKill = last;
    await victim.kill9();
    ws.splice(ws.indexOf(victim), 1);
    // The next event after the kill that the dead worker could not have written.
    while (!(last > seqAtKill && lastAt > killedAt + 50)) await sleep(5);
    out.push(Math.round(lastAt - killedAt));
    ws.push(...(await workers(url, 1, counter)));
    await s.runs.settled(id);
    client.close();
  }
  await Promise.all(ws.map((w) => w.stop()));
  await s.close();
  return out;
}

const redis = await startRedis({ appendonly: true, appendfsync: 'everysec' });
try {
  const tp: Record<string, number> = {};
  tp.embedded = round(await throughput(redis.url, 0));
  console.log(`throughput, embedded server: ${tp.embedded} runs/s`);
  for (const n of [1, 2, 4]) {
    tp[`${n} worker${n > 1 ? 's' : ''}`] = round(await throughput(redis.url, n));
    console.log(`throughput, ${n} worker(s) × concurrency 4: ${tp[`${n} worker${n > 1 ? 's' : ''}`]} runs/s`);
  }
  results.throughput = {
    runs: RUNS,
    flow: 'start → 3 scripted agents (instant) → end',
    runsPerSecond: tp,
    scaling2vs1: round(tp['2 workers']! / tp['1 worker']!),
    scaling4vs1: round(tp['4 workers']! / tp['1 worker']!),
  };

  const embedded = await server();
  const le = await latency(embedded, 5);
  await embedded.close();
  await new Redis(redis.url).flushall();
  const rs = await server(redis.url);
  const rw = await workers(redis.url, 1, join(tmp(), 'count.txt'));
  const lr = await latency(rs, 5);
  await Promise.all(rw.map((w) => w.stop()));
  await rs.close();
  results.eventLatencyMs = {
    note: 'engine emit (event ts) → WebSocket client of the server, durable events (server fsync on), 5 runs of 10 agents replying every 20 ms',
    embedded: { p50: pct(le, 50), p99: pct(le, 99), events: le.length },
    redis: { p50: pct(lr, 50), p99: pct(lr, 99), events: lr.length },
  };
  console.log('event latency (ms):', JSON.stringify(results.eventLatencyMs));

  const to = await takeover(redis.url, 3);
  results.takeoverMs = {
    note: 'worker killed -9 mid-run (lock 4 s, stall check 1.5 s in the bench workers: 2 s / 1 s) → next event at the client, from the new worker',
    each: to,
  };
  console.log('takeover (ms):', to.join(', '));
  writeFileSync(join(HERE, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
} finally {
  await redis.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  process.exit(0);
}
