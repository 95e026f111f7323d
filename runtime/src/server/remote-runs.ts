/**
 * Runs executed elsewhere (workers on a queue): this server records them in its catalog as it
 * does its own runs, and follows each one's events from the executor into its own event log,
 * in seq order with no gap and no duplicate, so that its REST routes and WebSocket clients see
 * them exactly as they see a local run's. Every server instance follows every run — also the
 * ones another instance started (`announced`) — so a client can move to any instance and ask
 * for the events after the last seq it has.
 */
import type { RunEvent } from '@switchboard/schemas';
import type { RunCommand } from '../engine/types.js';
import type { RunRecord } from '../store/catalog.js';
import type { EventLog } from '../store/event-log.js';
import type { GroupCommit } from '../store/group-commit.js';
import type { RunSpec } from '../store/run-files.js';
import type { Store } from '../store/store.js';
import { HttpError } from './errors.js';
import { FINAL, zeroCounters } from './run-counters.js';

/** Where runs execute and where their events and commands go, when not in this process. */
export interface RunExecutor {
  /** Hands a recorded run to the executors (its spec, its breakpoints as first commands). */
  enqueue(record: RunRecord, spec: RunSpec, breakpoints: string[]): Promise<void>;
  /** The run's events with seq > after, in order, at most `limit`. */
  eventsAfter(runId: string, after: number, limit: number): Promise<RunEvent[]>;
  /**
   * Sends a command to the run, unless the run has ended: then it resolves to the status it
   * ended with and nothing is sent.
   */
  command(runId: string, cmd: RunCommand): Promise<string | undefined>;
  /** Whether the executor has this run (started by any instance, not yet expired). */
  knows(runId: string): Promise<boolean>;
  /** Reads the announcements now rather than on the next notification or tick. */
  poke(): void;
  /**
   * Tells `grew` when a run's events may have grown and `announced` of runs started anywhere
   * (every one known so far first, then new ones as they come).
   */
  watch(h: {
    grew(runId: string): void;
    announced(record: RunRecord, spec: () => Promise<RunSpec | undefined>): void;
  }): Promise<void>;
  close(): Promise<void>;
  /** How long a start waits for the executor to take the run. Default 10 s. */
  readonly enqueueTimeoutMs?: number;
}

interface Followed {
  rec: RunRecord;
  log: EventLog;
  commit: GroupCommit;
  busy: boolean;
  again: boolean;
  ended: boolean;
  /** The status the run's own final event names, once copied here. */
  endedAs: string | undefined;
  done: Promise<void>;
  resolve: () => void;
}

export interface RemoteRunsHooks {
  store: Store;
  executor: RunExecutor;
  /** Publishes and tracks a run's durable events (RunManager.watch). */
  watch(runId: string, commit: GroupCommit, rec: RunRecord): void;
  log: { warn(obj: object, msg: string): void };
  /** How often every followed run is polled, in case a notification was lost. Default 1 s. */
  pollMs?: number;
}

const BATCH = 1000;
const FINAL_EVENTS: ReadonlySet<string> = new Set([
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.interrupted',
]);

export class RemoteRuns {
  private readonly followed = new Map<string, Followed>();
  /** Runs announced by another instance being recorded here (announcements may repeat). */
  private readonly adopting = new Set<string>();
  /** Announced runs whose recording failed (a storage fault): tried again on every tick. */
  private readonly retrying = new Map<string, () => void>();
  /** Callers waiting for a run to be recorded here (`arrived`). */
  private readonly arrivals = new Map<string, Set<() => void>>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private closed = false;

  constructor(private readonly h: RemoteRunsHooks) {}

  has(runId: string): boolean {
    return this.followed.has(runId);
  }

  get size(): number {
    return this.followed.size;
  }

  async settled(runId: string): Promise<void> {
    await this.followed.get(runId)?.done;
  }

  /**
   * Records nothing itself: the run is in the catalog and its spec written (RunManager.start).
   * Followed once enqueued; an executor that does not take it in time is refused by name.
   */
  async start(rec: RunRecord, spec: RunSpec, breakpoints: string[]): Promise<void> {
    const ms = this.h.executor.enqueueTimeoutMs ?? 10_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new HttpError(
              503,
              'redis_unavailable',
              `the run queue (Redis) did not take run ${rec.id} within ${ms} ms; it was not recorded here, and starts only if Redis took it after all`,
            ),
          ),
        ms,
      );
    });
    try {
      await Promise.race([this.h.executor.enqueue(rec, spec, breakpoints), late]);
    } catch (e) {
      if (e instanceof HttpError) throw e;
      throw new HttpError(
        503,
        'redis_unavailable',
        `the run queue (Redis) refused run ${rec.id}: ${String(e)}`,
      );
    } finally {
      clearTimeout(timer);
    }
    this.follow(rec);
  }

  /**
   * Resolves to the status the run ended with when it has ended (nothing is sent then), to
   * undefined once the executor has the command; a 503 by name when it did not confirm it in
   * time or refused it.
   */
  async command(runId: string, cmd: RunCommand): Promise<string | undefined> {
    // Its final event is here already, while its log and entry close.
    const endedAs = this.followed.get(runId)?.endedAs;
    if (endedAs !== undefined) return endedAs;
    const ms = this.h.executor.enqueueTimeoutMs ?? 10_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new HttpError(
              503,
              'redis_unavailable',
              `the run queue (Redis) did not confirm the ${cmd.type} command to run ${runId} within ${ms} ms; it takes effect only if Redis took it after all`,
            ),
          ),
        ms,
      );
    });
    try {
      return await Promise.race([this.h.executor.command(runId, cmd), late]);
    } catch (e) {
      if (e instanceof HttpError) throw e;
      throw new HttpError(
        503,
        'redis_unavailable',
        `the run queue (Redis) refused the ${cmd.type} command to run ${runId}: ${String(e)}`,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /** On start: follows every run the catalog has live, and every run announced anywhere. */
  async recover(): Promise<string[]> {
    const runs = this.h.store.catalog.data.runs;
    const out: string[] = [];
    for (const rec of Object.values(runs)) {
      if (FINAL.has(rec.status)) continue;
      this.follow(rec);
      out.push(rec.id);
    }
    await this.h.executor.watch({
      grew: (runId) => this.pull(runId),
      announced: (rec, spec) => this.adoptOnce(rec, spec),
    });
    this.timer = setInterval(() => {
      for (const id of this.followed.keys()) this.pull(id);
      for (const again of [...this.retrying.values()]) again();
    }, this.h.pollMs ?? 1000);
    this.timer.unref();
    return out;
  }

  /**
   * Resolves true once a run is recorded here, when the executor has it but its announcement
   * has not been recorded yet — a client that moved here from a dead instance asks for a run
   * this instance may learn of a moment later. False at once for a run the executor does not
   * have, and after `ms` if it is still not recorded.
   */
  async arrived(runId: string, ms = 10_000): Promise<boolean> {
    const recorded = () => this.h.store.catalog.data.runs[runId] !== undefined;
    if (recorded()) return true;
    if (this.closed || !(await this.h.executor.knows(runId).catch(() => false))) return false;
    if (recorded()) return true;
    return new Promise<boolean>((resolve) => {
      const waiters = this.arrivals.get(runId) ?? new Set<() => void>();
      this.arrivals.set(runId, waiters);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0) this.arrivals.delete(runId);
        resolve(recorded());
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
      this.h.executor.poke();
    });
  }

  private adoptOnce(rec: RunRecord, spec: () => Promise<RunSpec | undefined>): void {
    if (this.adopting.has(rec.id)) return;
    this.adopting.add(rec.id);
    this.retrying.delete(rec.id);
    this.adopt(rec, spec)
      .catch((e: unknown) => {
        this.h.log.warn({ runId: rec.id, err: String(e) }, 'could not record a run; trying again');
        if (!this.closed) this.retrying.set(rec.id, () => this.adoptOnce(rec, spec));
      })
      .finally(() => this.adopting.delete(rec.id));
  }

  /** A run another instance started: recorded here too, then followed. */
  private async adopt(announced: RunRecord, specOf: () => Promise<RunSpec | undefined>): Promise<void> {
    const { store } = this.h;
    const runs = store.catalog.data.runs;
    if (this.closed || runs[announced.id]) return;
    const spec = await specOf();
    // Gone from Redis (expired long after it ended): nothing to follow.
    if (!spec || this.closed) return;
    const rec: RunRecord = { ...announced, status: 'pending', lastSeq: 0, counters: zeroCounters() };
    await store.writeSpec(spec);
    if (runs[rec.id]) return;
    runs[rec.id] = rec;
    await store.catalog.save();
    this.follow(rec);
  }

  private follow(rec: RunRecord): void {
    if (this.followed.has(rec.id) || this.closed) return;
    const { log, commit } = this.h.store.openLog(rec.id);
    commit.prepare();
    this.h.watch(rec.id, commit, rec);
    let resolve!: () => void;
    const done = new Promise<void>((r) => {
      resolve = r;
    });
    const f: Followed = {
      rec,
      log,
      commit,
      busy: false,
      again: false,
      ended: false,
      endedAs: undefined,
      done,
      resolve,
    };
    this.followed.set(rec.id, f);
    for (const done of [...(this.arrivals.get(rec.id) ?? [])]) done();
    this.pull(rec.id);
  }

  /** Copies what the executor has after the last event here, in order; one copy at a time per run. */
  private pull(runId: string): void {
    const f = this.followed.get(runId);
    if (!f || f.ended) return;
    if (f.busy) {
      f.again = true;
      return;
    }
    f.busy = true;
    void (async () => {
      try {
        do {
          f.again = false;
          for (;;) {
            const events = await this.h.executor.eventsAfter(runId, f.log.lastSeq, BATCH);
            for (const ev of events) {
              if (ev.seq !== f.log.lastSeq + 1) continue;
              f.commit.append(ev);
              // The run's own end; a delegated (nested) run's end in its log is not.
              if (FINAL_EVENTS.has(ev.type) && ev.runId === runId) {
                f.ended = true;
                f.endedAs = ev.type.slice('run.'.length);
              }
            }
            if (events.length < BATCH || f.ended) break;
          }
        } while (f.again && !f.ended);
      } catch (e) {
        if (!this.closed)
          this.h.log.warn({ runId, err: String(e) }, 'could not read the run’s events; retrying');
      } finally {
        f.busy = false;
      }
      if (f.ended) await this.end(f);
    })();
  }

  private async end(f: Followed): Promise<void> {
    if (!this.followed.has(f.rec.id)) return;
    this.followed.delete(f.rec.id);
    try {
      await this.h.store.closeLog(f.rec.id);
      await this.h.store.catalog.save();
    } catch (e) {
      this.h.log.warn({ runId: f.rec.id, err: String(e) }, 'could not record the end of a run');
    } finally {
      f.resolve();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.retrying.clear();
    for (const waiters of [...this.arrivals.values()]) for (const done of [...waiters]) done();
    await this.h.executor.close();
    for (const f of this.followed.values()) {
      await this.h.store.closeLog(f.rec.id).catch(() => {});
      f.resolve();
    }
    this.followed.clear();
  }
}
