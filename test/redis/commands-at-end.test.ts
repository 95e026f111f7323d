/**
 * `serve --redis` with a worker, on a real redis-server: a command to a run that has ended on
 * its worker is refused by name (409 `not-live`, the status it ended with) rather than answered
 * 202 and left in a command stream no worker reads. Redis itself says so, in one atomic step
 * with the command, while the server has not copied the run's final event yet (held open here:
 * the server's reads stop short of it); once it has, the server says so itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../runtime/src/redis/keys.js';
import { QueueExecutor } from '../../runtime/src/redis/queue-executor.js';
import { FINAL_TYPES, sendCommand } from '../../runtime/src/redis/run-state.js';
import { RunWorker } from '../../runtime/src/redis/worker.js';
import { createServer, type SwitchboardServer } from '../../runtime/src/server/index.js';
import { batteryFlow, countingTools, FINAL_OUTPUT } from '../crash/fixture.js';
import { startRedis, type TestRedis } from './redis-server.js';

let redis: TestRedis;
let server: SwitchboardServer;
let worker: RunWorker;
let url: string;
let conn: Redis;
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'sb-qend-'));
  dirs.push(d);
  return d;
};
let release: () => void = () => {};

beforeAll(async () => {
  redis = await startRedis();
  server = await createServer({
    dataDir: tmp(),
    port: 0,
    editorDir: false,
    templatesDir: false,
    redis: { url: redis.url },
  });
  url = (await server.listen()).url;
  worker = new RunWorker({ url: redis.url, dataDir: tmp(), tools: countingTools(join(tmp(), 'c'), 4) });
  worker.start();
  conn = new Redis(redis.url);
});

afterAll(async () => {
  release();
  conn?.disconnect();
  await worker?.close();
  await server?.close();
  await redis?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

// A test that failed leaves nothing held for the next.
afterEach(() => release());

const command = (id: string, body: object) =>
  fetch(`${url}/api/runs/${id}/commands`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const until = async (pred: () => boolean | Promise<boolean>, what: string) => {
  for (let i = 0; i < 400; i++) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
};

async function start(body: object): Promise<string> {
  const res = await fetch(`${url}/api/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { run: { id: string } }).run.id;
}

describe('commands to a run that ended on its worker', () => {
  it('are refused by name when the worker has ended the run and the server has not copied its end yet', async () => {
    // The server's reads of a run's events from Redis stop short of its final event until released.
    let holding = true;
    let heldFinal = false;
    const eventsAfter = QueueExecutor.prototype.eventsAfter;
    QueueExecutor.prototype.eventsAfter = async function (this: QueueExecutor, runId, after, limit) {
      const events = await eventsAfter.call(this, runId, after, limit);
      const end = events.findIndex((e) => e.runId === runId && FINAL_TYPES.has(e.type));
      if (!holding || end < 0) return events;
      heldFinal = true;
      return events.slice(0, end);
    };
    release = () => {
      holding = false;
      QueueExecutor.prototype.eventsAfter = eventsAfter;
    };
    const id = await start({ flow: batteryFlow(2), input: 'go' });
    await until(() => heldFinal, 'the worker to end the run');
    // The server still follows it as running; Redis has its end.
    expect(server.store.catalog.data.runs[id]?.status).toBe('running');
    expect(server.runs.isLive(id)).toBe(true);
    for (const cmd of [
      { type: 'pause' },
      { type: 'resume' },
      { type: 'step' },
      { type: 'cancel', reason: 'late' },
      { type: 'inject', text: 'late' },
      { type: 'answer', nodeId: 'closer', answer: 'late' },
    ]) {
      const res = await command(id, cmd);
      expect({ cmd: cmd.type, status: res.status }).toEqual({ cmd: cmd.type, status: 409 });
      expect(((await res.json()) as { error: unknown }).error).toEqual({
        code: 'not-live',
        message: `run ${id} is completed, not live`,
      });
    }
    release();
    const rec = await server.runs.settled(id);
    expect(rec).toMatchObject({ status: 'completed', output: FINAL_OUTPUT });
    expect(rec?.pausedBy).toBeUndefined();
    const evs = server.store.readEvents(id);
    expect(evs.at(-1)?.type).toBe('run.completed');
    expect(evs.filter((e) => /^run\.(paused|resumed|cancelled|failed)$/.test(e.type))).toEqual([]);
    const after = await command(id, { type: 'pause' });
    expect(after.status).toBe(409);
    expect(((await after.json()) as { error: { code: string } }).error.code).toBe('not-live');
  });

  it('Redis refuses a command to a run whose final event it has, atomically, and keeps nothing of it', async () => {
    const k = redisKeys();
    // A run no worker has started yet takes commands (its breakpoints are sent this way).
    expect(await sendCommand(conn, k, 'r_notyet', { type: 'pause' })).toBeUndefined();
    expect(await conn.xlen(k.commands('r_notyet'))).toBe(1);

    const id = await start({ flow: batteryFlow(2), input: 'go' });
    expect((await server.runs.settled(id))?.status).toBe('completed');
    // The worker retired the run: its command stream is gone.
    await until(async () => (await conn.exists(k.checkpoint(id), k.commands(id))) === 0, 'the run retired');
    // As a server that has not copied the final event yet would send it.
    expect(await sendCommand(conn, k, id, { type: 'pause' })).toBe('completed');
    expect(await conn.exists(k.commands(id))).toBe(0);
  });
});
