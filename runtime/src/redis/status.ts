/**
 * What `switchboard status --redis URL` shows: the workers alive (each refreshes its entry
 * every heartbeat; a dead one's entry expires within a few), the runs each holds, and the
 * queue's depth by state.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { QUEUE_NAME, redisKeys } from './keys.js';
import type { WorkerInfo } from './worker.js';

export interface ClusterStatus {
  workers: WorkerInfo[];
  queue: { waiting: number; active: number; delayed: number; failed: number };
}

export async function clusterStatus(url: string, prefix?: string): Promise<ClusterStatus> {
  const keys = redisKeys(prefix);
  const r = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true, retryStrategy: () => null });
  r.on('error', () => {});
  await r.connect();
  const qc = r.duplicate();
  qc.on('error', () => {});
  const queue = new Queue(QUEUE_NAME, { connection: qc, prefix: keys.bull });
  try {
    const names: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await r.scan(cursor, 'MATCH', keys.workerPattern, 'COUNT', 500);
      cursor = next;
      names.push(...batch);
    } while (cursor !== '0');
    const values = names.length ? await r.mget(...names) : [];
    const workers = values
      .filter((v): v is string => v !== null)
      .map((v) => JSON.parse(v) as WorkerInfo)
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    const c = await queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed');
    return {
      workers,
      queue: {
        waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
        active: c.active ?? 0,
        delayed: c.delayed ?? 0,
        failed: c.failed ?? 0,
      },
    };
  } finally {
    await queue.close().catch(() => {});
    qc.disconnect();
    r.disconnect();
  }
}

export function formatStatus(s: ClusterStatus): string {
  const lines = [
    `queue: ${s.queue.waiting} waiting, ${s.queue.active} running, ${s.queue.delayed} delayed (retry), ${s.queue.failed} failed`,
    `workers: ${s.workers.length}`,
  ];
  for (const w of s.workers)
    lines.push(
      `  ${w.id}  ${w.host} pid ${w.pid}  ${w.runs.length}/${w.concurrency} runs${w.runs.length ? `: ${w.runs.join(' ')}` : ''}  (${w.done} done, ${Math.round(w.rss / 1048576)} MiB)`,
    );
  return `${lines.join('\n')}\n`;
}
