/**
 * `serve --redis` with one worker, both in this process, on a real redis-server: a run is
 * enqueued, executed by the worker, followed into the server's log with every seq once, in
 * order; commands reach the worker; without a worker a run waits in the queue.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../runtime/src/cli/main.js';
import { clusterStatus } from '../../runtime/src/redis/status.js';
import { RETRIES_EXHAUSTED, RunWorker } from '../../runtime/src/redis/worker.js';
import { createServer, type SwitchboardServer } from '../../runtime/src/server/index.js';
import { batteryFlow, countingTools, FINAL_OUTPUT, slowReply } from '../crash/fixture.js';
import { freePort, startRedis, type TestRedis } from './redis-server.js';

let redis: TestRedis;
let server: SwitchboardServer;
let url: string;
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'sb-q-'));
  dirs.push(d);
  return d;
};

beforeAll(async () => {
  redis = await startRedis({ appendonly: true });
  server = await createServer({
    dataDir: tmp(),
    port: 0,
    editorDir: false,
    templatesDir: false,
    redis: { url: redis.url },
  });
  url = (await server.listen()).url;
});

afterAll(async () => {
  await server?.close();
  await redis?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function start(body: object): Promise<string> {
  const res = await fetch(`${url}/api/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { run: { id: string } }).run.id;
}

async function events(runId: string): Promise<Array<{ seq: number; type: string }>> {
  const res = await fetch(`${url}/api/runs/${runId}/events?limit=10000`);
  return ((await res.json()) as { events: Array<{ seq: number; type: string }> }).events;
}

describe('serve --redis and a worker', () => {
  it('runs a flow on the worker: completed, seq contiguous, each tool call once', async () => {
    const counter = join(tmp(), 'count.txt');
    const w = new RunWorker({ url: redis.url, dataDir: tmp(), tools: countingTools(counter, 4) });
    w.start();
    try {
      const id = await start({ flow: batteryFlow(2), input: 'go' });
      const rec = await server.runs.settled(id);
      expect(rec?.status).toBe('completed');
      expect(rec?.output).toBe(FINAL_OUTPUT);
      const evs = await events(id);
      expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
      expect(evs.at(-1)?.type).toBe('run.completed');
      const lines = readFileSync(counter, 'utf8').trim().split('\n');
      expect(lines.sort()).toEqual([`${id} alice`, `${id} closer`, `${id} planner`]);
    } finally {
      await w.close();
    }
  });

  it('a run waits in the queue while no worker runs, and its breakpoint and commands reach the worker', async () => {
    const counter = join(tmp(), 'count.txt');
    const id = await start({ flow: batteryFlow(2), input: 'go', breakpoints: ['closer'] });
    await new Promise((r) => setTimeout(r, 300));
    expect(server.store.catalog.data.runs[id]?.status).toBe('pending');
    expect(server.runs.isLive(id)).toBe(true);
    const w = new RunWorker({ url: redis.url, dataDir: tmp(), tools: countingTools(counter, 4) });
    w.start();
    try {
      // The breakpoint (sent before any worker had the run) pauses it before the closer.
      for (let i = 0; i < 200 && server.store.catalog.data.runs[id]?.status !== 'paused'; i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(server.store.catalog.data.runs[id]?.status).toBe('paused');
      const res = await fetch(`${url}/api/runs/${id}/commands`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'resume' }),
      });
      expect(res.status).toBe(202);
      const rec = await server.runs.settled(id);
      expect(rec?.status).toBe('completed');
      const evs = await events(id);
      expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
      expect(evs.filter((e) => e.type === 'run.paused')).toHaveLength(1);
    } finally {
      await w.close();
    }
  });
});

describe('operations', () => {
  it('status lists the workers and their runs; a worker shut down hands its paused run back and another finishes it', async () => {
    const counter = join(tmp(), 'count.txt');
    const w1 = new RunWorker({
      url: redis.url,
      dataDir: tmp(),
      tools: countingTools(counter, 4),
      id: 'w-one',
    });
    w1.start();
    const id = await start({ flow: batteryFlow(2), input: 'go', breakpoints: ['closer'] });
    for (let i = 0; i < 200 && server.store.catalog.data.runs[id]?.status !== 'paused'; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(server.store.catalog.data.runs[id]?.status).toBe('paused');
    // The heartbeat names the run.
    let s = await clusterStatus(redis.url);
    for (let i = 0; i < 40 && !s.workers.some((x) => x.runs.includes(id)); i++) {
      await new Promise((r) => setTimeout(r, 100));
      s = await clusterStatus(redis.url);
    }
    expect(s.workers.map((x) => x.id)).toEqual(['w-one']);
    expect(s.workers[0]!.runs).toEqual([id]);
    expect(s.queue.active).toBe(1);
    let out = '';
    const code = await main(['node', 'switchboard', 'status', '--redis', redis.url], {
      out: (t) => {
        out += t;
      },
    });
    expect(code).toBe(0);
    expect(out).toContain('w-one');
    expect(out).toContain(id);
    expect(out).toMatch(/queue: 0 waiting, 1 running/);

    // Paused, the run cannot finish within the grace: it goes back to the queue.
    await w1.close(300);
    expect((await clusterStatus(redis.url)).workers).toEqual([]);
    const w2 = new RunWorker({
      url: redis.url,
      dataDir: tmp(),
      tools: countingTools(counter, 4),
      id: 'w-two',
    });
    w2.start();
    try {
      for (let i = 0; i < 100 && !w2.running.includes(id); i++) await new Promise((r) => setTimeout(r, 50));
      expect(w2.running).toEqual([id]);
      await fetch(`${url}/api/runs/${id}/commands`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'resume' }),
      });
      const rec = await server.runs.settled(id);
      expect(rec).toMatchObject({ status: 'completed', output: FINAL_OUTPUT });
      const evs = await events(id);
      expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
      const lines = readFileSync(counter, 'utf8').trim().split('\n');
      expect(lines.filter((l) => l.startsWith(id)).sort()).toEqual([
        `${id} alice`,
        `${id} closer`,
        `${id} planner`,
      ]);
    } finally {
      await w2.close();
    }
  });

  it('a run paused at a turn boundary stays paused when another worker takes it over, and resumes on command', async () => {
    // Paused by a breakpoint (between turns); the next test pauses it inside a turn.
    const counter = join(tmp(), 'count.txt');
    const timings = { lockMs: 20_000, stalledMs: 5_000 };
    const w1 = new RunWorker({ url: redis.url, dataDir: tmp(), tools: countingTools(counter, 4), timings });
    w1.start();
    const id = await start({ flow: batteryFlow(60), input: 'go', breakpoints: ['closer'] });
    const status = () => server.store.catalog.data.runs[id]?.status;
    try {
      for (let i = 0; i < 400 && status() !== 'paused'; i++) await new Promise((r) => setTimeout(r, 25));
      expect(status()).toBe('paused');
    } finally {
      // A worker left running would take the next test's runs.
      await w1.close(200);
    }
    const w2 = new RunWorker({ url: redis.url, dataDir: tmp(), tools: countingTools(counter, 4), timings });
    w2.start();
    try {
      for (let i = 0; i < 100 && !w2.running.includes(id); i++) await new Promise((r) => setTimeout(r, 50));
      expect(w2.running).toEqual([id]);
      await new Promise((r) => setTimeout(r, 1500));
      expect(status()).toBe('paused');
      expect(server.store.readEvents(id).some((e) => e.type === 'run.completed')).toBe(false);
      await fetch(`${url}/api/runs/${id}/commands`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'resume' }),
      });
      const rec = await server.runs.settled(id);
      expect(rec, JSON.stringify(rec?.error)).toMatchObject({ status: 'completed', output: FINAL_OUTPUT });
      const evs = await events(id);
      expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
    } finally {
      await w2.close();
    }
  });

  // The pause lands while the k-th model call is in flight (3 s; the others 50 ms): 1, the planner's call
  // that asks for its tool (the pause holds the run before the tool runs); 4, alice's reply after
  // her tool ran (the pause holds it as the team picks the next speaker). A checkpoint taken
  // there once held the script served past the turn the next worker replays: the planner's tool
  // was skipped, or alice's turn failed with model_script_exhausted (issue 18).
  for (const k of [1, 4])
    it(`a pause that lands during model call ${k}, then a hand-back: the next worker replays the turn once, each reply and tool call once`, async () => {
      const counter = join(tmp(), 'count.txt');
      const timings = { lockMs: 20_000, stalledMs: 5_000 };
      const w1 = new RunWorker({ url: redis.url, dataDir: tmp(), tools: countingTools(counter, 4), timings });
      w1.start();
      const id = await start({ flow: slowReply(50, k, 3000), input: 'go' });
      const status = () => server.store.catalog.data.runs[id]?.status;
      const requests = () => server.store.readEvents(id).filter((e) => e.type === 'model.request').length;
      try {
        for (let i = 0; i < 600 && requests() < k; i++) await new Promise((r) => setTimeout(r, 10));
        expect(requests()).toBe(k);
        const res = await fetch(`${url}/api/runs/${id}/commands`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'pause' }),
        });
        expect(res.status).toBe(202);
        for (let i = 0; i < 400 && status() !== 'paused'; i++) await new Promise((r) => setTimeout(r, 25));
        expect(status()).toBe('paused');
        // Paused inside the turn: the model call had been made.
        expect(requests()).toBe(k);
      } finally {
        await w1.close(200);
      }
      const w2 = new RunWorker({ url: redis.url, dataDir: tmp(), tools: countingTools(counter, 4), timings });
      w2.start();
      try {
        for (let i = 0; i < 100 && !w2.running.includes(id); i++) await new Promise((r) => setTimeout(r, 50));
        expect(w2.running).toEqual([id]);
        // Paused again on the next worker, until told to resume.
        for (let i = 0; i < 100 && status() !== 'paused'; i++) await new Promise((r) => setTimeout(r, 50));
        await new Promise((r) => setTimeout(r, 500));
        expect(status()).toBe('paused');
        await fetch(`${url}/api/runs/${id}/commands`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'resume' }),
        });
        const rec = await server.runs.settled(id);
        expect(rec, JSON.stringify(rec?.error)).toMatchObject({ status: 'completed', output: FINAL_OUTPUT });
        const evs = await events(id);
        expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
        const lines = readFileSync(counter, 'utf8').trim().split('\n');
        expect(lines.sort()).toEqual([`${id} alice`, `${id} closer`, `${id} planner`]);
        // Nine replies in the script, each asked for once (the replayed turn's calls are marked).
        const asked = server.store.readEvents(id).filter((e) => e.type === 'model.request' && !e.replayed);
        expect(asked).toHaveLength(9);
      } finally {
        await w2.close();
      }
    });

  it('handed back again while the next worker replays that turn: a third worker still gets its tool call from the journal', async () => {
    const counter = join(tmp(), 'count.txt');
    const timings = { lockMs: 20_000, stalledMs: 5_000 };
    const worker = () => {
      const w = new RunWorker({ url: redis.url, dataDir: tmp(), tools: countingTools(counter, 4), timings });
      w.start();
      return w;
    };
    const command = (type: string) =>
      fetch(`${url}/api/runs/${id}/commands`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type }),
      });
    const wait = async (pred: () => boolean, what: string) => {
      for (let i = 0; i < 600 && !pred(); i++) await new Promise((r) => setTimeout(r, 10));
      if (!pred()) throw new Error(`timed out waiting for ${what}`);
    };
    const status = () => server.store.catalog.data.runs[id]?.status;
    const requests = () => server.store.readEvents(id).filter((e) => e.type === 'model.request').length;
    // Call 4 (alice's reply after her tool ran) takes 3 s each time it is asked for.
    const w1 = worker();
    const id = await start({ flow: slowReply(50, 4, 3000), input: 'go' });
    try {
      await wait(() => requests() >= 4, 'model call 4');
      await command('pause');
      await wait(() => status() === 'paused', 'the pause');
    } finally {
      await w1.close(200);
    }
    // Paused again at the step before alice's turn, then resumed: her turn replays (her tool
    // call answered from the journal), and this worker too stops during her slow reply.
    const w2 = worker();
    try {
      await wait(() => w2.running.includes(id), 'the second worker to take the run');
      await new Promise((r) => setTimeout(r, 300));
      expect(status()).toBe('paused');
      await command('resume');
      await wait(() => requests() >= 6, 'the replayed call 4');
    } finally {
      await w2.close(200);
    }
    const w3 = worker();
    try {
      const rec = await server.runs.settled(id);
      expect(rec, JSON.stringify(rec?.error)).toMatchObject({ status: 'completed', output: FINAL_OUTPUT });
      const evs = server.store.readEvents(id);
      expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
      expect(evs.filter((e) => e.type === 'model.request' && !e.replayed)).toHaveLength(9);
      const lines = readFileSync(counter, 'utf8').trim().split('\n');
      expect(lines.sort()).toEqual([`${id} alice`, `${id} closer`, `${id} planner`]);
    } finally {
      await w3.close();
    }
  });

  it('a run that fails on every worker stops after bounded tries with a named error', async () => {
    const id = await start({ flow: batteryFlow(2), input: 'go' });
    let tries = 0;
    const w = new RunWorker({
      url: redis.url,
      dataDir: tmp(),
      runFlow: () => {
        tries++;
        throw new Error('engine crashed on this machine');
      },
      timings: { heartbeatMs: 200 },
    });
    w.start();
    try {
      const rec = await server.runs.settled(id);
      expect(rec?.status).toBe('failed');
      expect(rec?.error?.code).toBe(RETRIES_EXHAUSTED);
      expect(rec?.error?.message).toContain('engine crashed on this machine');
      expect(tries).toBe(3);
      const evs = await events(id);
      expect(evs.map((e) => e.type)).toEqual(['run.failed']);
    } finally {
      await w.close();
    }
  });
});

describe('two server instances', () => {
  it('a run started on one is recorded and followed by the other, which takes its commands (pause, resume, cancel)', async () => {
    const other = await createServer({
      dataDir: tmp(),
      port: 0,
      editorDir: false,
      templatesDir: false,
      redis: { url: redis.url },
    });
    const otherUrl = (await other.listen()).url;
    const w = new RunWorker({
      url: redis.url,
      dataDir: tmp(),
      tools: countingTools(join(tmp(), 'c.txt'), 4),
    });
    w.start();
    const command = (base: string, id: string, body: object) =>
      fetch(`${base}/api/runs/${id}/commands`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const statusOn = (s: SwitchboardServer, id: string) => s.store.catalog.data.runs[id]?.status;
    const until = async (pred: () => boolean, what: string) => {
      for (let i = 0; i < 300 && !pred(); i++) await new Promise((r) => setTimeout(r, 50));
      if (!pred()) throw new Error(`timed out waiting for ${what}`);
    };
    try {
      const id = await start({ flow: batteryFlow(80), input: 'go' });
      await until(() => statusOn(other, id) === 'running', 'the other instance to follow the run');
      expect((await command(otherUrl, id, { type: 'pause' })).status).toBe(202);
      await until(
        () => statusOn(server, id) === 'paused' && statusOn(other, id) === 'paused',
        'paused on both',
      );
      expect((await command(url, id, { type: 'resume' })).status).toBe(202);
      const rec = await server.runs.settled(id);
      expect(rec).toMatchObject({ status: 'completed', output: FINAL_OUTPUT });
      const onOther = await other.runs.settled(id);
      expect(onOther).toMatchObject({ status: 'completed', output: FINAL_OUTPUT });
      expect(other.store.readEvents(id)).toEqual(server.store.readEvents(id));

      const id2 = await start({ flow: batteryFlow(80), input: 'go' });
      await until(() => statusOn(other, id2) === 'running', 'the second run on the other instance');
      expect((await command(otherUrl, id2, { type: 'cancel', reason: 'enough' })).status).toBe(202);
      expect(await server.runs.settled(id2)).toMatchObject({ status: 'cancelled' });
      expect(await other.runs.settled(id2)).toMatchObject({ status: 'cancelled' });
      expect((await command(otherUrl, id2, { type: 'pause' })).status).toBe(409);
    } finally {
      await w.close();
      await other.close();
    }
  });
});

describe('Redis unreachable', () => {
  it('the server starts anyway; a run start is refused with 503 redis_unavailable and nothing is recorded', async () => {
    const dead = `redis://127.0.0.1:${await freePort()}`;
    const s = await createServer({
      dataDir: tmp(),
      port: 0,
      editorDir: false,
      templatesDir: false,
      redis: { url: dead, enqueueTimeoutMs: 500 },
    });
    try {
      const base = (await s.listen()).url;
      const res = await fetch(`${base}/api/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ flow: batteryFlow(2), input: 'go' }),
      });
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('redis_unavailable');
      expect(body.error.message).toMatch(/did not take run r_\S+ within 500 ms/);
      expect(Object.keys(s.store.catalog.data.runs)).toEqual([]);
    } finally {
      await s.close();
    }
  });
});
