/**
 * The server's side of scale-out: runs go to the BullMQ queue, their events are read from
 * each run's Redis stream, their commands go to each run's command stream, and runs started
 * by any server instance are announced to all of them (remote-runs.ts follows them).
 */
import type { RunEvent } from '@switchboard/schemas';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { RunCommand } from '../engine/types.js';
import type { RunExecutor } from '../server/remote-runs.js';
import type { RunRecord } from '../store/catalog.js';
import type { RunSpec } from '../store/run-files.js';
import { QUEUE_NAME, quiet, type RedisKeys, redisKeys } from './keys.js';
import { eventsAfter, readSpec, sendCommand } from './run-state.js';

export interface QueueExecutorOptions {
  url: string;
  prefix?: string;
  /** Tries of a run whose worker failed it (not counting takeovers after a worker died). Default 3. */
  attempts?: number;
  /** How many announcements the stream keeps. Default 100,000. */
  keepAnnounced?: number;
  /** How long a start waits for Redis to take the run before it is refused. Default 10 s. */
  enqueueTimeoutMs?: number;
}

type StreamEntry = [id: string, fields: string[]];

export class QueueExecutor implements RunExecutor {
  readonly keys: RedisKeys;
  readonly redis: Redis;
  private readonly sub: Redis;
  private readonly queue: Queue;
  private readonly queueConn: Redis;
  private lastAnnounced = '0';
  private readingAnnounced = false;
  private againAnnounced = false;
  private announced?: (record: RunRecord, spec: () => Promise<RunSpec | undefined>) => void;
  private timer: ReturnType<typeof setInterval> | undefined;

  readonly enqueueTimeoutMs: number;

  constructor(private readonly o: QueueExecutorOptions) {
    this.keys = redisKeys(o.prefix);
    this.enqueueTimeoutMs = o.enqueueTimeoutMs ?? 10_000;
    this.redis = quiet(new Redis(o.url, { maxRetriesPerRequest: null, enableAutoPipelining: true }));
    this.sub = quiet(new Redis(o.url, { maxRetriesPerRequest: null }));
    this.queueConn = quiet(this.redis.duplicate());
    this.queue = new Queue(QUEUE_NAME, { connection: this.queueConn, prefix: this.keys.bull });
  }

  async enqueue(record: RunRecord, spec: RunSpec, breakpoints: string[]): Promise<void> {
    const k = this.keys;
    const m = this.redis.multi();
    m.set(k.spec(record.id), JSON.stringify(spec));
    for (const nodeId of breakpoints)
      m.xadd(k.commands(record.id), '*', 'c', JSON.stringify({ type: 'breakpoint', nodeId, on: true }));
    m.xadd(
      k.runs,
      'MAXLEN',
      '~',
      this.o.keepAnnounced ?? 100_000,
      '*',
      'id',
      record.id,
      'record',
      JSON.stringify(record),
    );
    m.publish(k.newChannel, record.id);
    await m.exec();
    await this.queue.add(
      'run',
      { runId: record.id },
      {
        jobId: record.id,
        attempts: this.o.attempts ?? 3,
        backoff: { type: 'fixed', delay: 500 },
        removeOnComplete: true,
        removeOnFail: false,
      },
    );
  }

  eventsAfter(runId: string, after: number, limit: number): Promise<RunEvent[]> {
    return eventsAfter(this.redis, this.keys, runId, after, limit);
  }

  async knows(runId: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.spec(runId))) === 1;
  }

  poke(): void {
    this.readAnnounced();
  }

  command(runId: string, cmd: RunCommand): Promise<string | undefined> {
    return sendCommand(this.redis, this.keys, runId, cmd);
  }

  async watch(h: {
    grew(runId: string): void;
    announced(record: RunRecord, spec: () => Promise<RunSpec | undefined>): void;
  }): Promise<void> {
    this.announced = h.announced;
    this.sub.on('message', (channel: string, message: string) => {
      if (channel === this.keys.evChannel) h.grew(message);
      else this.readAnnounced();
    });
    // Not waited for: a server starts while Redis is down (and follows once it is back).
    this.sub.subscribe(this.keys.evChannel, this.keys.newChannel).catch(() => {});
    this.readAnnounced();
    // Announcements missed while the subscription was down are read on the next tick.
    this.timer = setInterval(() => this.readAnnounced(), 1000);
    this.timer.unref();
  }

  private readAnnounced(): void {
    if (this.readingAnnounced) {
      this.againAnnounced = true;
      return;
    }
    this.readingAnnounced = true;
    void this.readAnnouncedNow()
      .catch(() => {})
      .finally(() => {
        this.readingAnnounced = false;
        if (this.againAnnounced) {
          this.againAnnounced = false;
          this.readAnnounced();
        }
      });
  }

  private async readAnnouncedNow(): Promise<void> {
    for (;;) {
      const entries = (await this.redis.xrange(
        this.keys.runs,
        `(${this.lastAnnounced}`,
        '+',
        'COUNT',
        500,
      )) as StreamEntry[];
      for (const [id, fields] of entries) {
        this.lastAnnounced = id;
        const record = JSON.parse(fields[3]!) as RunRecord;
        this.announced?.(record, () => readSpec(this.redis, this.keys, record.id));
      }
      if (entries.length < 500) return;
    }
  }

  /** Jobs by state and the workers that said they are alive. */
  counts(): Promise<Record<string, number>> {
    return this.queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized');
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.queue.close().catch(() => {});
    this.queueConn.disconnect();
    this.sub.disconnect();
    this.redis.disconnect();
  }
}
