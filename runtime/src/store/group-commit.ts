/**
 * Group commit for one run: when its events and checkpoints reach the OS and the disk.
 *
 * Everything a run hands over during one event-loop turn is written at the end of that turn
 * in two writes — the event log first, then the latest checkpoint (earlier ones of the same
 * turn are superseded), so a checkpoint never points past the log. Handing over returns at
 * once: a killed process loses nothing the OS has.
 *
 * With `fsync`, one fdatasync of both files runs in the background after a write, and what
 * the run hands over meanwhile waits in memory and is written when it is done (then synced
 * in turn): a slow disk costs fewer, larger syncs rather than a stall per turn, and nothing
 * is appended to a file while it syncs — on ext4 such a write waits for the journal commit,
 * and the run would wait with it. Only the last write of a run, at close, goes ahead at once,
 * its sync overlapping the running one (an fdatasync covers every page written before it
 * began, even pages another one is writing back).
 *
 * Events become durable — readable, and passed to `onDurable` for the clients — once written
 * (without `fsync`) or once the sync of the log that covers them is done. `durable()` waits
 * for the checkpoint file too, e.g. before a tool call is journaled against the last one.
 */
import type { RunEvent } from '@switchboard/schemas';
import type { RunCheckpoint } from '../engine/types.js';
import type { CheckpointLog } from './checkpoint-log.js';
import { StoreError } from './errors.js';
import type { EventLog } from './event-log.js';

/**
 * fdatasyncs of one run at a time (the last write of a run, at close, may add one): measured
 * on ext4, letting a second one start while the first runs costs the run more in stalled
 * writes than it saves in latency.
 */
const MAX_SYNCS = 1;

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
  /** The syncs running (fsync mode), and whether a flush came while the most allowed did. */
  private readonly syncs = new Set<Promise<void>>();
  private again = false;
  private closing = false;
  private waiters: Waiter[] = [];
  private closed = false;

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

  /** Writes everything pending now (log, then checkpoint) — with `fsync`, once no sync runs. */
  flush(): void {
    this.scheduled = false;
    if (!this.closed) this.write();
  }

  private write(): void {
    if (this.failure) return;
    // The last write of a run does not wait: nothing is left to stall, and the clients wait.
    if (this.syncs.size >= MAX_SYNCS && !this.closing) {
      this.again = true;
      return;
    }
    const cp = this.cpLine;
    try {
      const wroteLog = this.log.write();
      if (cp !== undefined) {
        this.checkpoints ??= this.openCheckpoints();
        this.checkpoints.append(cp, this.fsync ? this.cpDurable : undefined);
        this.cpLine = undefined;
      }
      if (!wroteLog && cp === undefined) return;
    } catch (e) {
      this.fail(e as Error);
      return;
    }
    const gen = ++this.flushedGen;
    if (this.fsync) this.sync(gen, cp ?? this.cpWritten);
    else this.reached(gen, this.log.written);
    if (cp !== undefined) this.cpWritten = cp;
  }

  private sync(gen: number, cp: string | undefined): void {
    const count = this.log.written;
    // Events count once the log is synced; the checkpoint file's sync (for `durable()`) may
    // finish later without holding them back.
    const logSynced = this.log.sync().then(() => this.eventsReached(count));
    const p: Promise<void> = Promise.all([logSynced, this.checkpoints?.sync()]).then(
      () => {
        this.syncs.delete(p);
        if (gen > this.durableGen) {
          this.cpDurable = cp;
          this.reached(gen, count);
        }
        if (this.again && this.syncs.size < MAX_SYNCS) {
          this.again = false;
          this.write();
        }
      },
      (e: unknown) => {
        this.syncs.delete(p);
        this.fail(e as Error);
      },
    );
    this.syncs.add(p);
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
    if (gen <= this.durableGen) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ gen, resolve, reject }));
  }

  /** Writes what is pending, waits until it is durable, and closes both files. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closing = true;
    this.flush();
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
