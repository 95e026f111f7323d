/**
 * Worker memory over many runs (`pnpm bench:redis-memory`; BENCH_RUNS, default 10,000): one
 * worker process (concurrency 4) takes short runs enqueued straight on Redis (no server, so
 * the worker is what is measured); its RSS and heap, from its heartbeat, are sampled every
 * tenth of the runs. Figures go to memory.json next to this file.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Flow } from '@switchboard/schemas';
import { startWorker } from '../../../test/redis/cluster.js';
import { startRedis } from '../../../test/redis/redis-server.js';
import { agent, edge, flow, node } from '../../src/engine/testing/index.js';
import { QueueExecutor } from '../../src/redis/queue-executor.js';
import { clusterStatus } from '../../src/redis/status.js';
import { zeroCounters } from '../../src/server/run-counters.js';
import { newRunId } from '../../src/server/run-manager.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 10_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const f: Flow = {
  ...flow(
    [node('start', 'start'), agent('a'), agent('b'), agent('c'), node('end', 'end')],
    [edge('start', 'a'), edge('a', 'b'), edge('b', 'c'), edge('c', 'end')],
  ),
  id: 'short',
  name: 'short',
  models: {
    default: {
      provider: 'scripted',
      script: [
        { node: 'a', text: 'x'.repeat(2000) },
        { node: 'b', text: 'y'.repeat(2000) },
        { node: 'c', text: 'done' },
      ],
    },
  },
};

const dir = mkdtempSync(join(tmpdir(), 'sb-bench-mem-'));
const redis = await startRedis({ appendonly: false });
try {
  const w = await startWorker(redis.url, join(dir, 'w'), join(dir, 'count.txt'), 4);
  const q = new QueueExecutor({ url: redis.url });
  const samples: Array<{ runs: number; rssMiB: number; heapMiB: number }> = [];
  const step = Math.max(1, Math.floor(RUNS / 10));
  const t0 = performance.now();
  let enqueued = 0;
  const sample = async (): Promise<number> => {
    const s = await clusterStatus(redis.url);
    const me = s.workers[0];
    if (!me) return 0;
    if (samples.length === 0 || me.done >= samples.at(-1)!.runs + step)
      samples.push({
        runs: me.done,
        rssMiB: Math.round(me.rss / 104857.6) / 10,
        heapMiB: Math.round(me.heapUsed / 104857.6) / 10,
      });
    return me.done;
  };
  while (enqueued < RUNS) {
    // Keep a few hundred queued: the queue is not what is measured.
    const c = await q.counts();
    if ((c.waiting ?? 0) < 200) {
      for (let i = 0; i < 200 && enqueued < RUNS; i++, enqueued++) {
        const id = newRunId();
        const t = new Date().toISOString();
        await q.enqueue(
          {
            id,
            flowId: f.id,
            flowName: f.name,
            status: 'pending',
            createdAt: t,
            updatedAt: t,
            lastSeq: 0,
            counters: zeroCounters(),
            resumes: 0,
            source: 'api',
          },
          { version: 1, runId: id, flow: f, input: i, createdAt: t },
          [],
        );
      }
    }
    await sample();
    await sleep(200);
  }
  while ((await sample()) < RUNS) await sleep(300);
  const secs = (performance.now() - t0) / 1000;
  const out = {
    runs: RUNS,
    seconds: Math.round(secs),
    runsPerSecond: Math.round((RUNS / secs) * 10) / 10,
    note: 'one worker process, concurrency 4; RSS and heap from its heartbeat (after ~N runs)',
    samples,
  };
  console.log(JSON.stringify(out, null, 2));
  writeFileSync(join(HERE, 'memory.json'), `${JSON.stringify(out, null, 2)}\n`);
  await q.close();
  await w.stop();
} finally {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
