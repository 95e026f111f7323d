/**
 * Group commit for one run: when its events and checkpoints reach the OS and the disk.
 *
 * Everything a run hands over during one event-loop turn is written at the end of that turn
 * in two writes — the event log first, then the latest checkpoint (earlier ones of the same
 * turn are superseded), so a checkpoint never points past the log. Handing over returns at
 * once: a killed process loses nothing the OS has.
 *
 * With `fsync`, each file has its own fdatasync running in the background, one at a time: when
 * it ends and more was written meanwhile, the next one starts and covers all of that. Writes
 * never wait for a sync (an append beside a running fdatasync costs what it costs alone), so
 * what a run emits leaves memory at the end of its turn, and the sync that makes the last of
 * it durable starts right after the run's last write — beside a running one if need be, since
 * the clients wait for it. The checkpoint file's sync never holds back the events, and waits
 * a little unless someone waits for it (see CHECKPOINT_SYNC_DELAY_MS).
 *
 * Events become durable — readable, and passed to `onDurable` for the clients — once written
 * (without `fsync`) or once the sync of the log that covers them is done; with `fsync` each
 * write is also passed to `onWritten` at once, for readers that take events before they are
 * durable and learn of their durability later. `durable()` waits for the checkpoint file too,
 * e.g. before a tool call is journaled against the last one.
 */
import type { RunEvent } from '@switchboard/schemas';
import type { RunCheckpoint } from '../engine/types.js';
import type { CheckpointLog } from './checkpoint-log.js';
import { StoreError } from './errors.js';
import type { EventLog, LogLine } from './event-log.js';

interface Waiter {
  gen: number;
  resolve: () => void;
  reject: (e: Error) => void;
}

/**
 * One file's writes and syncs, counted in flushes (`gen`): the last flush that wrote to it,
 * and the last flush all of whose writes to it are known synced.
 */
interface FileState {
  writtenGen: number;
  syncedGen: number;
  running: number;
}

const fileState = (): FileState => ({ writtenGen: 0, syncedGen: 0, running: 0 });

/**
 * How long a written checkpoint may wait for its sync when nobody waits for it: each sync costs
 * the run time (on a small VM the I/O slows the run's CPU too), and until it ends a power loss
 * only sends a resume back to an earlier checkpoint the log covers. A tool call journaled
 * against it (`durable()`) and the run's close sync it at once.
 */
const CHECKPOINT_SYNC_DELAY_MS = 50;

/**
 * How long the log's next sync may wait for more writes when nobody waits for it: a run that
 * never waits writes every slice (2 ms), so consecutive writes share one sync instead of one
 * each. A waiter (`durable()`, a run far ahead of the disk) and the run's close sync at once.
 */
const LOG_SYNC_DELAY_MS = 2;

export class GroupCommit {
  /** Receives the events that just became durable, with the lines they were written in. */
  onDurable?: (events: RunEvent[], lines: LogLine[]) => void;
  /**
   * With `fsync`: receives the events of each write as soon as the OS has them (they survive
   * the process dying, not yet a power loss), before `onDurable` has them.
   */
  onWritten?: (events: RunEvent[], lines: LogLine[]) => void;
  /** Told once when a write or sync fails; nothing is durable after that. */
  onError?: (e: Error) => void;
  private failure: Error | undefined;
  private scheduled = false;
  /** The latest checkpoint handed over and not yet written. */
  private cpLine: string | undefined;
  /** Checkpoints written but not yet known durable with the log under them, oldest first. */
  private cpPending: Array<{ gen: number; line: string }> = [];
  /** The newest checkpoint synced together with the log under it (a compaction keeps it). */
  private cpDurable: string | undefined;
  private checkpoints: CheckpointLog | undefined;
  /** Flushes that wrote something. */
  private flushedGen = 0;
  private readonly logFile = fileState();
  private readonly cpFile = fileState();
  /** The syncs running (fsync mode). */
  private readonly syncs = new Set<Promise<void>>();
  private closing = false;
  private waiters: Waiter[] = [];
  private closed = false;
  /** A checkpoint sync due later (nobody waits for it yet). */
  private cpTimer: ReturnType<typeof setTimeout> | undefined;
  /** A log sync due shortly (more writes may join it). */
  private logTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly log: EventLog,
    private readonly openCheckpoints: () => CheckpointLog,
    readonly fsync: boolean,
  ) {}

  /**
   * Creates the checkpoint file now, before the run starts, rather than at its first
   * checkpoint: creating a file waits for the file system's journal.
   */
  prepare(): void {
    this.checkpoints ??= this.openCheckpoints();
  }

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

  /** Writes everything pending now (log, then checkpoint) and starts the syncs it needs. */
  flush(): void {
    this.scheduled = false;
    if (!this.closed) this.write();
  }

  private write(): void {
    if (this.failure) return;
    const cp = this.cpLine;
    let wroteLog: boolean;
    let cpWrite: 'appended' | 'compacted' | undefined;
    try {
      wroteLog = this.log.write();
      if (cp !== undefined) {
        this.checkpoints ??= this.openCheckpoints();
        cpWrite = this.checkpoints.append(cp, this.fsync ? this.cpDurable : undefined);
        this.cpLine = undefined;
      }
    } catch (e) {
      this.fail(e as Error);
      return;
    }
    if (!wroteLog && cpWrite === undefined) return;
    const gen = ++this.flushedGen;
    if (wroteLog) this.logFile.writtenGen = gen;
    if (cpWrite !== undefined) {
      this.cpFile.writtenGen = gen;
      // A compaction replaced the file durably: nothing of it is left to sync.
      if (cpWrite === 'compacted' || !this.fsync) this.cpFile.syncedGen = gen;
      if (this.fsync) this.cpPending.push({ gen, line: cp! });
    }
    if (!this.fsync) {
      this.logFile.syncedGen = gen;
      this.eventsReached(this.log.written);
    } else {
      this.syncLogWhenDue();
      this.syncCheckpointsWhenDue();
      if (wroteLog && this.onWritten) {
        const { events, lines } = this.log.lastWritten();
        this.onWritten(events, lines);
      }
    }
    this.settle();
  }

  /**
   * Starts the log's next fdatasync when something was written since the last one began and
   * none runs — or beside a running one once the run is closing, so the clients wait for one
   * sync after the last write and not for the end of an earlier one too.
   */
  private syncLog(): void {
    const f = this.logFile;
    if (!this.log.needsSync || (f.running > 0 && !this.closing)) return;
    if (this.logTimer) {
      clearTimeout(this.logTimer);
      this.logTimer = undefined;
    }
    const gen = this.flushedGen;
    const count = this.log.written;
    this.track(
      f,
      gen,
      this.log.sync(),
      () => this.eventsReached(count),
      () => this.syncLogWhenDue(),
    );
  }

  /** The log's sync: now when someone waits or the run closes, else after a short delay. */
  private syncLogWhenDue(): void {
    if (this.closing || this.waiters.length > 0) {
      this.syncLog();
      return;
    }
    if (this.logTimer || !this.log.needsSync || this.logFile.running > 0) return;
    this.logTimer = setTimeout(() => {
      this.logTimer = undefined;
      this.syncLog();
    }, LOG_SYNC_DELAY_MS);
  }

  /** Starts the syncs that are due later now (a run that got far ahead of the disk waits for them). */
  hurry(): void {
    if (this.fsync) this.syncLog();
  }

  /**
   * Syncs the checkpoint file now when someone waits, else within a delay — or, once the run
   * closes, after the log's last sync (close() does it).
   */
  private syncCheckpointsWhenDue(): void {
    if (this.waiters.length > 0) {
      this.syncCheckpoints();
      return;
    }
    if (this.closing || this.cpTimer || !this.checkpoints?.needsSync) return;
    this.cpTimer = setTimeout(() => {
      this.cpTimer = undefined;
      this.syncCheckpoints();
    }, CHECKPOINT_SYNC_DELAY_MS);
    // A pending sync never holds the process open; close() syncs what is left.
    this.cpTimer.unref?.();
  }

  private syncCheckpoints(): void {
    const f = this.cpFile;
    const cps = this.checkpoints;
    if (!cps?.needsSync || (f.running > 0 && !this.closing)) return;
    if (this.cpTimer) {
      clearTimeout(this.cpTimer);
      this.cpTimer = undefined;
    }
    this.track(
      f,
      this.flushedGen,
      cps.sync(),
      () => {},
      () => this.syncCheckpointsWhenDue(),
    );
  }

  /** Follows one sync covering the writes of flushes up to `gen`. */
  private track(f: FileState, gen: number, sync: Promise<void>, reached: () => void, next: () => void): void {
    f.running++;
    const p: Promise<void> = sync.then(
      () => {
        f.running--;
        this.syncs.delete(p);
        if (gen > f.syncedGen) f.syncedGen = gen;
        reached();
        this.settle();
        // What was written while it ran.
        next();
      },
      (e: unknown) => {
        f.running--;
        this.syncs.delete(p);
        this.fail(e as Error);
      },
    );
    this.syncs.add(p);
  }

  /** Whether all writes of flushes up to `gen` (a flush that happened) to one file are on disk. */
  private covered(f: FileState, gen: number): boolean {
    return gen <= this.flushedGen && (f.syncedGen >= gen || f.writtenGen <= f.syncedGen);
  }

  /** Notes the checkpoints now durable with their log and releases the waiters that can go. */
  private settle(): void {
    while (this.cpPending.length > 0) {
      const { gen, line } = this.cpPending[0]!;
      if (!this.covered(this.logFile, gen) || !this.covered(this.cpFile, gen)) break;
      this.cpDurable = line;
      this.cpPending.shift();
    }
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (this.covered(this.logFile, w.gen) && this.covered(this.cpFile, w.gen)) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  /** The first `count` events are durable: readable, and passed on. */
  private eventsReached(count: number): void {
    if (this.failure) return;
    const { events, lines } = this.log.markDurable(count);
    if (events.length > 0) this.onDurable?.(events, lines);
  }

  private fail(e: Error): void {
    if (this.failure) return;
    this.failure = e;
    for (const w of this.waiters.splice(0)) w.reject(e);
    this.onError?.(e);
  }

  /** Resolves once the syncs running now are done (at once if none is): what is written is durable. */
  synced(): Promise<void> {
    if (this.syncs.size === 0) return Promise.resolve();
    return Promise.allSettled([...this.syncs]).then(() => undefined);
  }

  /** Resolves once everything handed over so far is durable; rejects if that can no longer be. */
  durable(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    // What is not written yet goes in the next write.
    const pending = this.log.hasPending || this.cpLine !== undefined;
    const gen = pending ? this.flushedGen + 1 : this.flushedGen;
    if (this.covered(this.logFile, gen) && this.covered(this.cpFile, gen)) return Promise.resolve();
    const p = new Promise<void>((resolve, reject) => this.waiters.push({ gen, resolve, reject }));
    // Someone waits: what is already written is synced now, not after the delays.
    if (this.fsync) {
      this.syncLog();
      this.syncCheckpoints();
    }
    return p;
  }

  /** Writes what is pending, waits until it is durable, and closes both files. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closing = true;
    this.flush();
    // Written earlier, its sync not started yet (delayed): now.
    this.syncLog();
    this.closed = true;
    if (this.fsync) {
      // The clients wait for the log's last sync: the checkpoint file's (whatever is unsynced
      // of it) comes after it rather than beside it, where the two would slow each other.
      await this.synced();
      this.syncCheckpoints();
    }
    for (const t of [this.logTimer, this.cpTimer]) if (t) clearTimeout(t);
    this.logTimer = this.cpTimer = undefined;
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
