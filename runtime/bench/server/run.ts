/**
 * Server benchmarks (`pnpm bench:server`): WebSocket event latency and throughput to 50
 * clients, what a run pays per logged event with and without fsync (and whether it grows with
 * the log), a chain of 100 streamed to a loopback client against a plain `ws` reference that
 * coalesces the same way, and fastify routes against a bare `http` server.
 * Each section runs in a fresh process (`run.ts SECTION` runs one alone); the figures print
 * and are written to results.json next to this file.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Flow, RunEvent } from '@switchboard/schemas';
import WebSocket, { WebSocketServer } from 'ws';
import { runFlow } from '../../src/engine/index.js';
import { chain } from '../../src/engine/testing/index.js';
import type { RunFlow } from '../../src/engine/types.js';
import { createServer } from '../../src/server/index.js';
import { Store } from '../../src/store/store.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const results: Record<string, unknown> = {};
const now = () => performance.now();
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const r3 = (x: number) => Math.round(x * 1000) / 1000;

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'sb-bench-'));
}

/** A server whose engine records when each event was emitted. */
async function timedServer(dir: string) {
  const emitted = new Map<string, number>();
  const timed: RunFlow = (flow, input, options = {}) => {
    const inner = options.onEvent;
    return runFlow(flow, input, {
      ...options,
      onEvent: (e) => {
        emitted.set(`${e.runId}/${e.seq}`, now());
        inner?.(e);
      },
    });
  };
  const s = await createServer({ dataDir: dir, port: 0, editorDir: false, runs: { runFlow: timed } });
  const { port } = await s.listen();
  return { s, port, emitted };
}

function client(
  port: number,
  onEvents: (runId: string, events: RunEvent[], at: number) => void,
): Promise<WebSocket> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/api/ws`, { origin: `http://127.0.0.1:${port}` });
  ws.on('message', (d) => {
    const at = now();
    const m = JSON.parse(String(d));
    if (m.type === 'events') onEvents(m.runId, m.events, at);
  });
  return new Promise((r) => ws.once('open', () => r(ws)));
}

/**
 * Latency from emit to receipt by 50 clients, and throughput, for clients that take only
 * durable events or for live views (`provisional`, as the editor subscribes).
 */

async function latencyAndThroughputOf(provisional: boolean): Promise<void> {
  const dir = tmp();
  const { s, port, emitted } = await timedServer(dir);
  const N = 50;
  const lat: number[] = [];
  let done = 0;
  let finish!: () => void;
  const allDone = new Promise<void>((r) => {
    finish = r;
  });
  let totalEvents = 0;
  const clients = await Promise.all(
    Array.from({ length: N }, () =>
      client(port, (runId, events, at) => {
        for (const e of events) {
          const t = emitted.get(`${runId}/${e.seq}`);
          if (t !== undefined) lat.push(at - t);
          totalEvents++;
          if (e.type === 'run.completed' && e.runId === runId && ++done === N) finish();
        }
      }),
    ),
  );
  for (const c of clients) c.send(JSON.stringify({ type: 'subscribe', flowId: 'bench', provisional }));
  await new Promise((r) => setTimeout(r, 100));
  const flow: Flow = { ...chain(300), id: 'bench', name: 'bench' };
  const t0 = now();
  const rec = await s.runs.start({ flow, input: 'go', source: 'api' });
  await allDone;
  const ms = now() - t0;
  const perRun = s.store.catalog.data.runs[rec.id]!.lastSeq;
  const suffix = provisional ? 'Live' : '';
  results[`wsLatency50Clients${suffix}`] = {
    events: perRun,
    p50ms: r3(pct(lat, 50)),
    p99ms: r3(pct(lat, 99)),
    maxms: r3(Math.max(...lat)),
  };
  results[`wsThroughput50Clients${suffix}`] = {
    eventsPerSecondPerRun: Math.round(perRun / (ms / 1000)),
    deliveriesPerSecond: Math.round(totalEvents / (ms / 1000)),
  };
  for (const c of clients) c.close();
  await s.close();
  rmSync(dir, { recursive: true, force: true });
}

async function logAppendBench(): Promise<void> {
  results.logAppend = {};
  const mk = (seq: number): RunEvent =>
    ({
      runId: 'r',
      seq,
      ts: Date.now(),
      type: 'model.completed',
      nodeId: 'a1',
      text: 'x'.repeat(120),
    }) as RunEvent;
  // What a run pays: appends, a turn end (the group commit's write) every 10 events, and the
  // background fsync in the durable mode; the clock stops once everything is durable.
  for (const withFsync of [false, true]) {
    const dir = tmp();
    const store = await Store.open(dir, { durability: withFsync ? 'fsync' : 'os' });
    const { commit } = store.openLog('r');
    const batches: number[] = [];
    let seq = 0;
    const t0 = now();
    for (let b = 0; b < 10; b++) {
      const tb = now();
      for (let i = 0; i < 1000; i++) {
        commit.append(mk(++seq));
        if (seq % 10 === 0) commit.flush();
      }
      batches.push(now() - tb);
    }
    await commit.durable();
    const ms = now() - t0;
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    (results.logAppend as Record<string, unknown>)[withFsync ? 'withTurnFsync' : 'withoutFsync'] = {
      events: 10_000,
      eventsPerSecond: Math.round(10_000 / (ms / 1000)),
      usPerAppendFirst1000: r3(batches[0]!),
      usPerAppendLast1000: r3(batches[9]!),
    };
  }
}

/**
 * A chain of 100 streamed to one loopback client: our server vs a plain ws reference. The
 * reference, the engine alone and our server in both durability modes are measured in turn
 * within each repetition (after warm-up rounds), so machine load drifting during the bench
 * weighs on all of them alike. What a run costs once at its admission — checking the flow
 * (the server does it before it records the run), recording it — is left out on both sides:
 * the clock runs from the engine's start to the client's receipt of the last event.
 */
async function chainVsReference(): Promise<void> {
  // Other lengths put the end of the run elsewhere in a slice (e.g. 133: a nearly full last one).
  const STEPS = Number(process.env.BENCH_CHAIN_STEPS ?? 100);
  const flow: Flow = { ...chain(STEPS), id: 'chain', name: 'chain' };
  const warmup = 3;
  const reps = 41;

  // Reference: the engine's events batched per event-loop turn and sent over a bare ws server.
  const referenceOnce = async (): Promise<{ perStep: number; lag: number }> => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((r) => wss.once('listening', r));
    const port = (wss.address() as { port: number }).port;
    const conn = new Promise<WebSocket>((r) => wss.once('connection', (ws) => r(ws)));
    let ended = 0;
    const got = new Promise<void>((res) => {
      const c = new WebSocket(`ws://127.0.0.1:${port}`);
      c.on('message', (d) => {
        const m = JSON.parse(String(d));
        if ((m.events as RunEvent[]).some((e) => e.type === 'run.completed')) {
          ended = now();
          c.close();
          res();
        }
      });
    });
    const server = await conn;
    let batch: RunEvent[] = [];
    let scheduled = false;
    const t0 = now();
    const h = runFlow(flow, 'go', {
      validate: false,
      onEvent: (e) => {
        batch.push(e);
        if (!scheduled) {
          scheduled = true;
          setImmediate(() => {
            scheduled = false;
            const b = batch;
            batch = [];
            server.send(JSON.stringify({ type: 'events', runId: e.runId, events: b }));
          });
        }
      },
    });
    await h.result;
    const runEnd = now();
    await got;
    wss.close();
    return { perStep: (ended - t0) / STEPS, lag: ended - runEnd };
  };

  const engineOnce = async (): Promise<number> => {
    const t0 = now();
    await runFlow(flow, 'go', { validate: false }).result;
    return (now() - t0) / STEPS;
  };

  // Ours: the real server (log writes, per-turn checkpoint, catalog, hub). The client is a
  // live view like the editor's (`provisional`: events once the OS has them, durability told
  // after), or one that takes only events already on disk.
  const oursOnce = async (
    durability: 'os' | 'fsync',
    provisional: boolean,
  ): Promise<{ perStep: number; lag: number }> => {
    const dir = tmp();
    let runEnd = 0;
    let runStart = 0;
    const wrapped: RunFlow = (f, input, options = {}) => {
      runStart = now();
      const h = runFlow(f, input, options);
      void h.result.then(() => {
        runEnd = now();
      });
      return h;
    };
    const s = await createServer({
      dataDir: dir,
      port: 0,
      editorDir: false,
      durability,
      runs: { runFlow: wrapped },
    });
    const { port } = await s.listen();
    let ended = 0;
    const got = new Promise<void>((res) => {
      void client(port, (_runId, events) => {
        if (events.some((e) => e.type === 'run.completed')) {
          ended = now();
          res();
        }
      }).then((ws) => ws.send(JSON.stringify({ type: 'subscribe', flowId: 'chain', provisional })));
    });
    await new Promise((r) => setTimeout(r, 50));
    await s.runs.start({ flow, input: 'go', source: 'api' });
    await got;
    await s.close();
    rmSync(dir, { recursive: true, force: true });
    // From the engine's start to the client's receipt of the last event, like the reference:
    // the run's recording at start (catalog, spec) is left out, per-turn work is in.
    return { perStep: (ended - runStart) / STEPS, lag: ended - runEnd };
  };

  const ref: number[] = [];
  const refLag: number[] = [];
  const engineOnly: number[] = [];
  const configs = {
    os: { durability: 'os', provisional: true, key: 'serverNoFsync' },
    fsync: { durability: 'fsync', provisional: true, key: 'serverTurnFsync' },
    fsyncDurableOnly: { durability: 'fsync', provisional: false, key: 'serverTurnFsyncDurableClient' },
  } as const;
  type Config = keyof typeof configs;
  const ours: Record<Config, number[]> = { os: [], fsync: [], fsyncDurableOnly: [] };
  const oursLag: Record<Config, number[]> = { os: [], fsync: [], fsyncDurableOnly: [] };
  for (let k = 0; k < warmup + reps; k++) {
    const keep = k >= warmup;
    // Rotate the order so that none of them always runs first (or right after a server closed).
    const order = ['ref', 'os', 'fsync', 'fsyncDurableOnly', 'engine'] as const;
    for (let i = 0; i < order.length; i++) {
      const what = order[(i + k) % order.length]!;
      if (what === 'engine') {
        const x = await engineOnce();
        if (keep) engineOnly.push(x);
      } else if (what === 'ref') {
        const x = await referenceOnce();
        if (keep) {
          ref.push(x.perStep);
          refLag.push(x.lag);
        }
      } else {
        const x = await oursOnce(configs[what].durability, configs[what].provisional);
        if (keep) {
          ours[what].push(x.perStep);
          oursLag[what].push(x.lag);
        }
      }
    }
  }
  const med = (xs: number[]) => pct(xs, 50);
  const out: Record<string, unknown> = {
    engineOnlyMsPerStep: r3(med(engineOnly)),
    referenceWsMsPerStep: r3(med(ref)),
    referenceDeliveredAfterEndMs: r3(med(refLag)),
  };
  for (const c of Object.keys(configs) as Config[]) {
    out[configs[c].key] = {
      msPerStep: r3(med(ours[c])),
      ratioToReference: r3(med(ours[c]) / med(ref)),
      deliveredAfterRunEndMs: r3(med(oursLag[c])),
      deliveredAfterRunEndP90Ms: r3(pct(oursLag[c], 90)),
    };
  }
  results.chain100 = out;
}

async function httpCompare(): Promise<void> {
  const load = async (port: number, ms: number): Promise<number> => {
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    let n = 0;
    const end = now() + ms;
    const worker = async () => {
      while (now() < end) {
        await new Promise<void>((res, rej) => {
          const req = request(
            { host: '127.0.0.1', port, path: '/api/health', agent, headers: { host: `127.0.0.1:${port}` } },
            (r) => {
              r.resume();
              r.on('end', () => {
                if (r.statusCode === 200) n++;
                res();
              });
            },
          );
          req.on('error', rej);
          req.end();
        });
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
    agent.destroy();
    return n / (ms / 1000);
  };
  const out: Record<string, number> = {};
  for (const kind of ['bare', 'fastify', 'bare', 'fastify']) {
    const dir = tmp();
    const child = spawn(
      process.execPath,
      ['--conditions=source', '--import', 'tsx', join(HERE, 'http-target.ts'), kind, dir],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const port = await new Promise<number>((res) => {
      let buf = '';
      child.stdout!.on('data', (d) => {
        buf += d;
        const m = /PORT (\d+)/.exec(buf);
        if (m) res(Number(m[1]));
      });
    });
    await load(port, 500); // warm-up
    const rps = await load(port, 3000);
    out[kind] = Math.max(out[kind] ?? 0, rps);
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
  results.http = {
    bareReqPerSec: Math.round(out.bare!),
    fastifyReqPerSec: Math.round(out.fastify!),
    ratio: r3(out.fastify! / out.bare!),
  };
}

const only = process.argv[2];
const sections: Array<[string, () => Promise<void>]> = [
  ['latency', () => latencyAndThroughputOf(false)],
  ['latencyLive', () => latencyAndThroughputOf(true)],
  ['log', logAppendBench],
  ['chain', chainVsReference],
  ['http', httpCompare],
];
const RESULT = 'RESULT ';

if (only) {
  // One section in this process; its figures go to stdout for the parent (and for people).
  const section = sections.find(([name]) => name === only);
  if (!section) throw new Error(`no section ${only}: ${sections.map(([n]) => n).join(', ')}`);
  await section[1]();
  console.log(`${RESULT}${JSON.stringify(results)}`);
} else {
  // Each section in a fresh process: what one leaves behind (garbage, a warm or cold heap, open
  // sockets) would otherwise land on the next one's figures, e.g. a major GC in its middle.
  for (const [name] of sections) {
    const out = await new Promise<string>((res, rej) => {
      const child = spawn(
        process.execPath,
        ['--conditions=source', '--import', 'tsx', fileURLToPath(import.meta.url), name],
        { stdio: ['ignore', 'pipe', 'inherit'], env: process.env },
      );
      let buf = '';
      child.stdout!.on('data', (d) => {
        buf += d;
      });
      child.on('error', rej);
      child.on('exit', (code) =>
        code === 0 ? res(buf) : rej(new Error(`section ${name} exited with ${code}`)),
      );
    });
    const line = out.split('\n').find((l) => l.startsWith(RESULT));
    if (!line) throw new Error(`section ${name} printed no result`);
    const got = JSON.parse(line.slice(RESULT.length)) as Record<string, unknown>;
    Object.assign(results, got);
    console.log(name, JSON.stringify(got));
  }
  results.machine = {
    node: process.version,
    cpus: (await import('node:os')).cpus().length,
    at: new Date().toISOString(),
  };
  writeFileSync(join(HERE, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  console.log(JSON.stringify(results, null, 2));
}
