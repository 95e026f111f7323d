/**
 * A run leaves its worker while a model call is in flight, on real worker processes and a real
 * redis-server, and another worker process finishes it: after a pause that landed during the
 * call and a graceful stop (SIGTERM: the run is handed back), after a graceful stop alone, and
 * after a kill -9. Each time the run completes with the undisturbed output, every seq once and
 * in order, each scripted reply asked for once (the replayed turn's requests are marked
 * `replayed`) and each tool call executed once (the fixture's counter file). Issue 18: a pause
 * landing mid-turn once left a checkpoint from after the turn's model call, and the next worker
 * failed the replayed turn with model_script_exhausted.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterStatus } from '../../runtime/src/redis/status.js';
import { createServer, type SwitchboardServer } from '../../runtime/src/server/index.js';
import { FINAL_OUTPUT, parallelSlowFlow, slowReply } from '../crash/fixture.js';
import { type Proc, startWorker } from './cluster.js';
import { startRedis, type TestRedis } from './redis-server.js';

let redis: TestRedis;
let server: SwitchboardServer;
let url: string;
const dirs: string[] = [];
const procs: Proc[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'sb-hb-'));
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
  for (const p of procs) await p.kill9();
  await server?.close();
  await redis?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(pred: () => boolean, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

async function post(path: string, body: object): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function worker(counter: string, env: NodeJS.ProcessEnv = {}): Promise<Proc> {
  const p = await startWorker(redis.url, tmp(), counter, 1, env);
  procs.push(p);
  return p;
}

/**
 * Two worker processes; starts a run whose k-th reply takes 3 s (the others 50 ms), finds
 * which worker holds it and waits until that call is in flight. `holder` stops with `graceMs`
 * of grace on SIGTERM.
 */
async function runUntilCall(
  counter: string,
  k: number,
  graceMs: number,
  more: NodeJS.ProcessEnv = {},
  /** Another flow: waits for its k-th model call, however many are in flight. */
  flow?: Flow,
) {
  const env = { GRACE_MS: String(graceMs), ...more };
  const both = await Promise.all([worker(counter, env), worker(counter, env)]);
  const res = await post('/api/runs', { flow: flow ?? slowReply(50, k, 3000), input: 'go' });
  expect(res.status).toBe(201);
  const id = ((await res.json()) as { run: { id: string } }).run.id;
  let holderId: string | undefined;
  for (let i = 0; i < 100 && !holderId; i++) {
    holderId = (await clusterStatus(redis.url)).workers.find((w) => w.runs.includes(id))?.id;
    if (!holderId) await sleep(50);
  }
  const holder = both.find((p) => p.ready === holderId);
  const other = both.find((p) => p.ready !== holderId);
  if (!holder || !other) throw new Error(`no worker process holds run ${id}`);
  const requests = () => server.store.readEvents(id).filter((e) => e.type === 'model.request').length;
  await until(() => requests() >= k, `model call ${k}`);
  if (!flow) expect(requests()).toBe(k);
  return { holder, other, id, requests, status: () => server.store.catalog.data.runs[id]?.status };
}

/** The run ends well: output, seq, each reply asked for once, each tool call executed once. */
async function expectClean(id: string, counter: string): Promise<void> {
  const rec = await server.runs.settled(id);
  expect(rec, JSON.stringify(rec?.error)).toMatchObject({ status: 'completed', output: FINAL_OUTPUT });
  const evs = server.store.readEvents(id);
  expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
  expect(evs.filter((e) => e.type === 'model.request' && !e.replayed)).toHaveLength(9);
  const lines = readFileSync(counter, 'utf8').trim().split('\n');
  expect(lines.sort()).toEqual([`${id} alice`, `${id} closer`, `${id} planner`]);
}

describe('parallel branches: a run leaves its worker while one branch is inside its turn', () => {
  it("killed -9 after one branch's turn, during the other's model call: the next worker completes it, each reply and tool call once", async () => {
    const counter = join(tmp(), 'count.txt');
    // Call 2 is p1's reply after its tool ran (3 s); p2's turn (tool, reply) ends meanwhile,
    // and a checkpoint cut then once held p1's reply served (model_script_exhausted for p1).
    const { holder: a, other: b, id } = await runUntilCall(counter, 2, 100, {}, parallelSlowFlow(3000));
    try {
      const ended = (n: string) =>
        server.store.readEvents(id).some((e) => e.type === 'turn.completed' && e.nodeId === n);
      await until(() => ended('p2'), "p2's turn");
      await sleep(300);
      expect(ended('p1')).toBe(false);
      await a.kill9();
      await until(() => /run taken over/.test(b.stderr()), 'worker B to take the run');
      const rec = await server.runs.settled(id);
      expect(rec, JSON.stringify(rec?.error)).toMatchObject({ status: 'completed', output: 'joined' });
      const evs = server.store.readEvents(id);
      expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
      expect(evs.filter((e) => e.type === 'model.request' && !e.replayed)).toHaveLength(5);
      const lines = readFileSync(counter, 'utf8').trim().split('\n');
      expect(lines.sort()).toEqual([`${id} p1`, `${id} p2`]);
    } finally {
      await b.stop();
    }
  });
});

describe('a run leaves its worker process during a model call', () => {
  it('paused during the call, then its worker stopped (SIGTERM): the next worker keeps it paused, then completes it', async () => {
    const counter = join(tmp(), 'count.txt');
    // Call 4 is alice's reply after her tool ran: the pause holds the run as the team picks
    // the next speaker, after the reply was served.
    const { holder: a, other: b, id, requests, status } = await runUntilCall(counter, 4, 200);
    try {
      expect((await post(`/api/runs/${id}/commands`, { type: 'pause' })).status).toBe(202);
      await until(() => status() === 'paused', 'the pause');
      expect(requests()).toBe(4);
      await a.stop();
      expect(a.stderr()).not.toMatch(/ERROR/);
      await until(() => /run taken over/.test(b.stderr()), 'worker B to take the run');
      await sleep(500);
      expect(status()).toBe('paused');
      expect((await post(`/api/runs/${id}/commands`, { type: 'resume' })).status).toBe(202);
      await expectClean(id, counter);
    } finally {
      await a.kill9();
      await b.stop();
    }
  });

  it('stopped (SIGTERM) with a short grace during the call: handed back mid-call, the next worker completes it', async () => {
    const counter = join(tmp(), 'count.txt');
    // Call 2 is the planner's reply after its tool ran: the hand-back cuts it short.
    const { holder: a, other: b, id, status } = await runUntilCall(counter, 2, 100);
    try {
      await a.stop();
      expect(status()).toBe('running');
      await until(() => /run taken over/.test(b.stderr()), 'worker B to take the run');
      await expectClean(id, counter);
    } finally {
      await a.kill9();
      await b.stop();
    }
  });

  it('killed -9 during the call: the next worker takes the run once its lock lapses and completes it', async () => {
    const counter = join(tmp(), 'count.txt');
    // Call 3 is alice's call that asks for her tool.
    const { holder: a, other: b, id } = await runUntilCall(counter, 3, 100);
    try {
      await a.kill9();
      await until(() => /run taken over/.test(b.stderr()), 'worker B to take the run');
      await expectClean(id, counter);
    } finally {
      await b.stop();
    }
  });

  it('stalled past its job lock (event loop blocked 6 s, lock 2 s): the other worker takes the run, the stalled one writes nothing more when it wakes', async () => {
    const counter = join(tmp(), 'count.txt');
    // Call 3 is alice's call that asks for her tool: when the stalled worker wakes, its reply
    // comes and the tool call it asks for is refused at the journal (fenced), never made.
    const { holder: a, other: b, id } = await runUntilCall(counter, 3, 100);
    try {
      const seqBefore = server.store.readEvents(id).length;
      a.child.kill('SIGUSR2');
      await until(() => /run taken over/.test(b.stderr()), 'worker B to take the run');
      // Taken while A is still stalled: two workers ran the run at once.
      expect(a.stderr()).not.toMatch(/STALLED/);
      await until(() => /STALLED/.test(a.stderr()), 'worker A to wake', 30_000);
      await expectClean(id, counter);
      // Woken, A found its run taken at its next write and stopped it without writing.
      await until(() => /run stopped on this worker/.test(a.stderr()), 'worker A to stop the run');
      expect(a.stderr()).toMatch(/LOSTLOCK/);
      expect(server.store.readEvents(id).length).toBeGreaterThan(seqBefore);
      // B holds no run any more and the run stays completed (A's failure is not the run's).
      await sleep(1500);
      expect(server.store.catalog.data.runs[id]?.status).toBe('completed');
      expect(server.store.readEvents(id).filter((e) => e.type === 'run.completed')).toHaveLength(1);
    } finally {
      await a.kill9();
      await b.stop();
    }
  });

  it('stalled 4 s with the default timings: the worker keeps its run (no takeover) and completes it', async () => {
    const counter = join(tmp(), 'count.txt');
    const {
      holder: a,
      other: b,
      id,
    } = await runUntilCall(counter, 3, 100, {
      WORKER_TIMINGS: 'default',
      STALL_MS: '4000',
    });
    try {
      a.child.kill('SIGUSR2');
      await until(() => /STALLED/.test(a.stderr()), 'worker A to wake', 30_000);
      await expectClean(id, counter);
      expect(b.stderr()).not.toMatch(/run taken over/);
      expect(a.stderr()).not.toMatch(/LOSTLOCK|could not renew lock/);
    } finally {
      await a.kill9();
      await b.stop();
    }
  });
});
