/**
 * `switchboard worker`: takes runs from the BullMQ queue and executes them (run-executor.ts).
 * BullMQ's job lock says which worker holds a run; a worker that dies stops renewing it, its
 * job is found stalled within about `lockMs + stalledMs` (7.5 s by default) and goes back to
 * the queue, and another worker continues the run from its last checkpoint. A run whose job
 * failed for good (every try, or stalled too often) gets a `run.failed` event naming why,
 * written by whichever worker sweeps it first, so that no run stays `running` without a worker.
 */

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { type Job, Queue, WaitingError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { RunFlow } from '../engine/types.js';
import type { Logger } from '../server/run-manager.js';
import { QUEUE_NAME, quiet, redisKeys } from './keys.js';
import { type Execution, type ExecutorDeps, executeRun, finishRun } from './run-executor.js';
import { withScripts } from './scripts.js';

export interface WorkerTimings {
  /** BullMQ lock duration: how long a dead worker's run stays held. Default 6 s. */
  lockMs: number;
  /**
   * How often the locks of the runs under way are renewed (BullMQ's lockRenewTime; it checks
   * every half of it). Default 1 s, or half the lock when that is shorter.
   */
  renewMs?: number;
  /** How often stalled runs are looked for. Default 1.5 s. */
  stalledMs: number;
  /** How often a run may be found stalled (its worker died) before it fails. Default 5. */
  maxStalled: number;
  /** Heartbeat period (status, failed-run sweep). Default 1 s. */
  heartbeatMs: number;
}

/**
 * The lock must outlast the longest stall of a live worker's event loop (a long GC, a busy
 * core, a swapped page), or another worker takes a run that is still under way: fencing keeps
 * that safe (scripts.ts: the stalled worker writes nothing more, no tool call runs twice) but
 * not free — the turn is replayed, and a tool call in flight is answered `maybe-executed` to
 * the model. BullMQ renews at half the lock by default, so the former 4 s lock was lost by a
 * stall of about 2 s; worker processes under the scale-out load on a shared 2-core machine
 * were measured stalling up to 1.2 s. A 6 s lock renewed every second is lost only past about
 * 5 s of stall, for a takeover of a dead worker's run within about 7.5 s (lock + stall check).
 */
export const DEFAULT_TIMINGS: WorkerTimings = {
  lockMs: 6000,
  stalledMs: 1500,
  maxStalled: 5,
  heartbeatMs: 1000,
};

export interface RunWorkerOptions extends Omit<ExecutorDeps, 'redis' | 'keys' | 'loadEngine' | 'logger'> {
  url: string;
  concurrency?: number;
  prefix?: string;
  timings?: Partial<WorkerTimings>;
  runFlow?: RunFlow;
  logger?: Logger;
  id?: string;
  /** How long an ended run's events and spec stay in Redis. Default 7 days. */
  retainMs?: number;
}

export const RETAIN_MS = 7 * 24 * 3600_000;

export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  concurrency: number;
  runs: string[];
  startedAt: string;
  seenAt: string;
  /** Runs this worker finished (any end) since it started. */
  done: number;
  /** Resident memory and V8 heap in use, bytes. */
  rss: number;
  heapUsed: number;
}

const silent: Logger = { info() {}, warn() {}, error() {} };

export const RETRIES_EXHAUSTED = 'run_retries_exhausted';

export class RunWorker {
  readonly id: string;
  private readonly redis: ReturnType<typeof withScripts>;
  private readonly queue: Queue;
  /** Connections given to BullMQ (it does not close what it did not open). */
  private readonly conns: Redis[] = [];
  private worker: Worker | undefined;
  private readonly active = new Map<string, Execution>();
  private readonly handingBack = new Set<string>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly timings: WorkerTimings;
  private readonly keys;
  private readonly log: Logger;
  private readonly startedAt = new Date().toISOString();
  private engine: Promise<RunFlow> | undefined;
  private done = 0;

  constructor(private readonly o: RunWorkerOptions) {
    this.id = o.id ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.keys = redisKeys(o.prefix);
    this.timings = { ...DEFAULT_TIMINGS, ...o.timings };
    this.log = o.logger ?? silent;
    const onError = (e: Error) => this.log.warn({ err: e.message }, 'redis connection error (reconnecting)');
    this.redis = withScripts(
      quiet(new Redis(o.url, { maxRetriesPerRequest: null, enableAutoPipelining: true }), onError),
    );
    this.conns.push(
      quiet(this.redis.duplicate(), onError),
      quiet(this.redis.duplicate(), onError),
      quiet(this.redis.duplicate(), onError),
    );
    this.queue = new Queue(QUEUE_NAME, { connection: this.conns[0]!, prefix: this.keys.bull });
  }

  private loadEngine(): Promise<RunFlow> {
    if (this.o.runFlow) return Promise.resolve(this.o.runFlow);
    this.engine ??= import('../engine/index.js').then((m) => (m as { runFlow: RunFlow }).runFlow);
    return this.engine;
  }

  private deps(): ExecutorDeps {
    const {
      url: _u,
      concurrency: _c,
      prefix: _p,
      timings: _t,
      runFlow: _r,
      logger: _l,
      id: _i,
      retainMs: _m,
      ...rest
    } = this.o;
    return {
      ...rest,
      redis: this.redis,
      keys: this.keys,
      loadEngine: () => this.loadEngine(),
      logger: this.log,
    };
  }

  start(): void {
    const t = this.timings;
    const deps = this.deps();
    this.worker = new Worker(
      QUEUE_NAME,
      async (job: Job, token?: string) => {
        const runId = job.id!;
        const ex = await executeRun(deps, runId, token!, job.attemptsMade > 0 || job.stalledCounter > 0);
        this.active.set(runId, ex);
        try {
          const r = await ex.result;
          if (this.handingBack.has(runId)) {
            // Back to the queue for another worker, which continues from the checkpoint.
            await job.moveToWait(token);
            throw new WaitingError();
          }
          await this.retire(runId);
          this.done++;
          return r === 'ended' ? 'ended' : r.status;
        } finally {
          this.active.delete(runId);
          this.handingBack.delete(runId);
        }
      },
      {
        connection: this.conns[1]!,
        prefix: this.keys.bull,
        concurrency: this.o.concurrency ?? 1,
        lockDuration: t.lockMs,
        lockRenewTime: t.renewMs ?? Math.min(1000, t.lockMs / 2),
        stalledInterval: t.stalledMs,
        maxStalledCount: t.maxStalled,
      },
    );
    this.worker.on('error', (e) => this.log.warn({ err: String(e) }, 'worker error'));
    this.worker.on('failed', (job, e) =>
      this.log.warn({ runId: job?.id, err: e.message }, 'run attempt failed on this worker'),
    );
    // Commands: one subscription for all the runs held here, and a poll for notices lost.
    const sub = this.conns[2]!;
    sub.on('message', (_channel: string, runId: string) => this.active.get(runId)?.poke());
    void sub
      .subscribe(this.keys.cmdChannel)
      .catch((e: unknown) => this.log.warn({ err: String(e) }, 'subscribe failed'));
    void this.beat();
    this.timer = setInterval(() => void this.beat(), t.heartbeatMs);
    this.timer.unref();
  }

  /**
   * An ended run needs no checkpoint, journal or commands any more; its spec and events stay
   * for `retainMs` (every server has copied them into its own log long before).
   */
  private async retire(runId: string): Promise<void> {
    const k = this.keys;
    const ms = this.o.retainMs ?? RETAIN_MS;
    await this.redis
      .multi()
      .del(k.checkpoint(runId), k.journal(runId), k.commands(runId))
      .pexpire(k.events(runId), ms)
      .pexpire(k.spec(runId), ms)
      .exec();
  }

  /** Says the worker is alive (for `status`) and ends runs whose job failed for good. */
  private async beat(): Promise<void> {
    for (const ex of this.active.values()) ex.poke();
    try {
      const info: WorkerInfo = {
        id: this.id,
        host: hostname(),
        pid: process.pid,
        concurrency: this.o.concurrency ?? 1,
        runs: [...this.active.keys()],
        startedAt: this.startedAt,
        seenAt: new Date().toISOString(),
        done: this.done,
        rss: process.memoryUsage.rss(),
        heapUsed: process.memoryUsage().heapUsed,
      };
      await this.redis.set(
        this.keys.worker(this.id),
        JSON.stringify(info),
        'PX',
        this.timings.heartbeatMs * 3 + 1000,
      );
      for (const job of await this.queue.getFailed(0, 99)) {
        if (!job?.id) continue;
        await finishRun({ redis: this.redis, keys: this.keys }, job.id, {
          code: RETRIES_EXHAUSTED,
          message: `no worker could finish run ${job.id} after ${job.attemptsMade} tries: ${job.failedReason ?? 'unknown'}`,
        });
        await job.remove().catch(() => {});
        await this.retire(job.id);
      }
    } catch (e) {
      this.log.warn({ err: String(e) }, 'heartbeat failed');
    }
  }

  get running(): string[] {
    return [...this.active.keys()];
  }

  /**
   * Stops taking runs; waits up to `graceMs` for the runs under way to end, then hands the
   * others back to the queue (they continue elsewhere from their last checkpoint).
   */
  async close(graceMs = 10_000): Promise<void> {
    clearInterval(this.timer);
    const w = this.worker;
    if (w) {
      const closing = w.close();
      const timedOut = await Promise.race([
        closing.then(() => false),
        new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref()),
      ]);
      if (timedOut) {
        for (const [runId, ex] of this.active) {
          this.handingBack.add(runId);
          ex.detach();
        }
        await closing;
      }
    }
    await this.redis.del(this.keys.worker(this.id)).catch(() => {});
    await this.queue.close();
    for (const c of this.conns) c.disconnect();
    this.redis.disconnect();
  }
}
