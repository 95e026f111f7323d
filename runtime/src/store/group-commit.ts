/**
 * Group commit for one run: when its events and checkpoints reach the OS and the disk.
 *
 * Everything a run hands over during one event-loop turn goes to the OS at the end of that
 * turn in two writes — the event log first, then the latest checkpoint (earlier ones of the
 * same turn are superseded), so a checkpoint that reached the OS never points past the log.
 * Handing over returns at once: a killed process loses nothing the OS has.
 *
 * With `fsync`, one background fdatasync of both files covers everything written while the
 * previous one ran, so the run never waits for the disk and a slow disk costs fewer, larger
 * syncs rather than a stall per turn. Events become durable — readable, and passed to
 * `onDurable` for the clients — only once a sync that covers them is done (without `fsync`,
 * once they are written). `durable()` lets a caller wait for that, e.g. before recording a
 * tool call against the current checkpoint.
 */
import type { RunEvent } from '@switchboard/schemas';
import type { RunCheckpoint } from '../engine/types.js';
import type { CheckpointLog } from './checkpoint-log.js';
import { StoreError } from './errors.js';
import type { EventLog } from './event-log.js';

/** fdatasyncs of one run that may overlap. */
const MAX_SYNCS = 2;

interface Waiter {
  gen: number;
  resolve: () => void;
  reject: (e: Error) => void;
}

export class GroupCommit {
  /** Receives the events that just became durable, with their bytes as written (JSON lines). */
  onDurable?: (events: RunEvent[], jsonl: Buffer[]) => void;
  /** Told once when a write or sync fails; nothing is durable after that. */
  onError?: (e: Error) => void;
  private failure: Error | undefined;
  private scheduled = false;
  /** The latest checkpoint handed over and not yet written. */
  private cpLine: string | undefined;
  /** The last checkpoint written, and the last one synced with the log under it. */
  private cpWritten: string | undefined;
  private cpDurable: string | undefined;
  private checkpoints: CheckpointLog | undefined;
  /** Flushes that wrote something, and the last of them known durable. */
  private flushedGen = 0;
  private durableGen = 0;
  /** Syncs running, and whether a flush came while the most allowed were. */
  private inFlight = 0;
  private readonly syncs = new Set<Promise<unknown>>();
  private resync = false;
  private waiters: Waiter[] = [];
  private closed = false;

  constructor(
    readonly log: EventLog,
    private readonly openCheckpoints: () => CheckpointLog,
    readonly fsync: boolean,
  ) {}

  /** Set once a write or sync failed. */
  get failed(): Error | undefined {
    return this.failure;
  }

  append(event: RunEvent): void {
    if (this.failure) throw this.failure;
    if (this.closed) throw new StoreError('io', `append to closed log ${this.log.file}`, this.log.file);
    this.log.append(event);
    this.schedule();
  }

  /** Takes a checkpoint; serialised at once, since the engine's snapshot changes with its next step. */
  checkpoint(cp: RunCheckpoint): void {
    if (this.failure) throw this.failure;
    if (this.closed) throw new StoreError('io', `checkpoint after close of ${this.log.file}`, this.log.file);
    this.cpLine = `${JSON.stringify(cp)}\n`;
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    setImmediate(this.atTurnEnd);
  }

  private readonly atTurnEnd = (): void => {
    if (this.scheduled) this.flush();
  };

  /**
   * Hands everything pending to the OS now (log, then checkpoint) and starts its sync; the
   * `last` flush of a run starts its sync at once, however many are running.
   */
  flush(last = false): void {
    this.scheduled = false;
    if (this.closed || this.failure) return;
    try {
      const wroteLog = this.log.write();
      let wroteCp = false;
      if (this.cpLine !== undefined) {
        this.checkpoints ??= this.openCheckpoints();
        this.checkpoints.append(this.cpLine, this.fsync ? this.cpDurable : undefined);
        this.cpWritten = this.cpLine;
        this.cpLine = undefined;
        wroteCp = true;
      }
      if (!wroteLog && !wroteCp) return;
    } catch (e) {
      this.fail(e as Error);
      return;
    }
    this.flushedGen++;
    if (this.fsync) this.sync(last);
    else this.reached(this.flushedGen, this.log.written);
  }

  private sync(last = false): void {
    if (this.inFlight >= MAX_SYNCS && !last) {
      this.resync = true;
      return;
    }
    // An fdatasync covers every page written before it began, even pages another sync is
    // already writing back, so a second one may start while the first runs: the last flush of
    // a run then waits for one sync, not for the end of the previous one and then its own.
    const gen = this.flushedGen;
    const count = this.log.written;
    const cp = this.cpWritten;
    this.inFlight++;
    // Events count once the log is synced; the checkpoint file's sync (for `durable()`) may
    // finish later without holding them back.
    const logSynced = this.log.sync().then(() => this.eventsReached(count));
    const p = Promise.all([logSynced, this.checkpoints?.sync()]).then(
      () => {
        this.inFlight--;
        if (gen > this.durableGen) {
          this.cpDurable = cp;
          this.reached(gen, count);
        }
        if (this.resync && this.inFlight < MAX_SYNCS) {
          this.resync = false;
          this.sync();
        }
      },
      (e: unknown) => {
        this.inFlight--;
        this.fail(e as Error);
      },
    );
    this.syncs.add(p);
    void p.finally(() => this.syncs.delete(p));
  }

  /** The first `count` events are durable: readable, and passed on. */
  private eventsReached(count: number): void {
    if (this.failure) return;
    const { events, jsonl } = this.log.markDurable(count);
    if (events.length > 0) this.onDurable?.(events, jsonl);
  }

  /** Flush `gen` (log and checkpoint, the first `count` events) is durable. */
  private reached(gen: number, count: number): void {
    this.durableGen = gen;
    this.eventsReached(count);
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (w.gen <= gen) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  private fail(e: Error): void {
    if (this.failure) return;
    this.failure = e;
    for (const w of this.waiters.splice(0)) w.reject(e);
    this.onError?.(e);
  }

  /** Resolves once everything handed over so far is durable; rejects if that can no longer be. */
  durable(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const gen = this.scheduled ? this.flushedGen + 1 : this.flushedGen;
    if (gen <= this.durableGen) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ gen, resolve, reject }));
  }

  /** Flushes, waits until it is durable, and closes both files. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.flush(true);
    this.closed = true;
    try {
      await this.durable();
    } catch {
      // Reported through onError; the files are closed all the same.
    }
    while (this.syncs.size > 0) await Promise.allSettled([...this.syncs]);
    this.log.closeFd();
    this.checkpoints?.close();
  }
}
