/**
 * The writes of a run on Redis are fenced (runtime/src/redis/scripts.ts), against a real
 * redis-server: only the holder of the run's job lock appends events, checkpoints and journal
 * entries; a seq that does not follow the stream's last is refused (no gap, no duplicate);
 * a final event for a run no worker can finish is written once.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../runtime/src/redis/keys.js';
import { finishRun } from '../../runtime/src/redis/run-executor.js';
import { eventsAfter, readJournal } from '../../runtime/src/redis/run-state.js';
import { LOST_LOCK, SEQ_GAP, withScripts } from '../../runtime/src/redis/scripts.js';
import { startRedis, type TestRedis } from './redis-server.js';

let redis: TestRedis;
let r: ReturnType<typeof withScripts>;
const k = redisKeys('fence');

beforeAll(async () => {
  redis = await startRedis();
  r = withScripts(new Redis(redis.url));
});
afterAll(async () => {
  r?.disconnect();
  await redis?.stop();
});

const ev = (runId: string, seq: number, type = 'node.started') => JSON.stringify({ runId, seq, ts: 1, type });
const append = (runId: string, token: string, cp: string, ...pairs: (string | number)[]) =>
  r.sbAppend(k.lock(runId), k.events(runId), k.checkpoint(runId), token, runId, k.evChannel, cp, ...pairs);

describe('fenced run writes', () => {
  it('only the lock holder appends; a stale worker is refused by name and writes nothing', async () => {
    await r.set(k.lock('r1'), 'tok-A');
    expect(await append('r1', 'tok-A', '', 1, ev('r1', 1, 'run.started'), 2, ev('r1', 2))).toBe(2);
    // Taken over: the lock now holds another worker's token.
    await r.set(k.lock('r1'), 'tok-B');
    await expect(append('r1', 'tok-A', '{"cp":1}', 3, ev('r1', 3))).rejects.toThrow(LOST_LOCK);
    await expect(
      r.sbJournal(
        k.lock('r1'),
        k.journal('r1'),
        'tok-A',
        'r1',
        '{"k":"intent","n":1,"tool":"t","args":"x","cp":2}',
      ),
    ).rejects.toThrow(LOST_LOCK);
    expect((await eventsAfter(r, k, 'r1', 0)).map((e) => e.seq)).toEqual([1, 2]);
    expect(await r.get(k.checkpoint('r1'))).toBeNull();
    expect(await readJournal(r, k, 'r1')).toEqual([]);
    // No lock at all (expired): refused too.
    await r.del(k.lock('r1'));
    await expect(append('r1', 'tok-B', '', 3, ev('r1', 3))).rejects.toThrow(LOST_LOCK);
  });

  it('refuses a gap or a repeated seq, atomically (nothing of the batch is written)', async () => {
    await r.set(k.lock('r2'), 't');
    await append('r2', 't', '', 1, ev('r2', 1), 2, ev('r2', 2));
    await expect(append('r2', 't', '', 2, ev('r2', 2), 3, ev('r2', 3))).rejects.toThrow(SEQ_GAP);
    await expect(append('r2', 't', '', 4, ev('r2', 4))).rejects.toThrow(SEQ_GAP);
    await expect(append('r2', 't', '', 3, ev('r2', 3), 5, ev('r2', 5))).rejects.toThrow(SEQ_GAP);
    expect((await eventsAfter(r, k, 'r2', 0)).map((e) => e.seq)).toEqual([1, 2]);
    // A checkpoint alone (no events) is written with its fence.
    expect(await append('r2', 't', '{"cp":{"seq":2},"cmd":"0"}')).toBe(2);
    expect(JSON.parse((await r.get(k.checkpoint('r2')))!)).toEqual({ cp: { seq: 2 }, cmd: '0' });
  });

  it('a run no worker can finish gets one final event, after the last one, never two', async () => {
    await r.set(k.lock('r3'), 't');
    await append('r3', 't', '', 1, ev('r3', 1, 'run.started'));
    const err = { code: 'run_retries_exhausted', message: 'no worker could finish run r3' };
    expect(await finishRun({ redis: r, keys: k }, 'r3', err)).toBe(true);
    expect(await finishRun({ redis: r, keys: k }, 'r3', err)).toBe(false);
    const evs = await eventsAfter(r, k, 'r3', 0);
    expect(evs.map((e) => [e.seq, e.type])).toEqual([
      [1, 'run.started'],
      [2, 'run.failed'],
    ]);
    expect(evs[1]).toMatchObject({ runId: 'r3', error: err });
  });
});
