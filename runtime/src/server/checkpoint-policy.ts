/**
 * Which of a run's checkpoints its host writes, and when the run lets the event loop turn.
 *
 * The engine hands a checkpoint over after every turn and waits for it; serialising the whole
 * run state each time would cost more than the turn itself when turns need no I/O (the state
 * only changes in memory between them). So a checkpoint is written when a crash could find
 * the run stopped there for a while, and the quick turns in between are replayed after a
 * crash, as cheaply as they ran:
 *
 *  - the loop turned since the last one: this run waits for I/O, so each of its turns counts;
 *  - it asked a person or paused since the last one (it is about to wait, maybe for long);
 *  - it called a tool since the last one: every call is journaled against the last checkpoint
 *    written (journaled-tools.ts), so the calls named by one checkpoint all belong to the one
 *    turn that follows the stretch of replayable turns after it;
 *  - it is the first one of this process;
 *  - at the end of a slice (below), once the last one written is `replayMs` old — or twenty
 *    times as old as its serialisation took, so a big state costs a CPU-bound run at most
 *    about 5% — bounding what a crash replays.
 *
 * A run that never waits would hold the event loop to its end: nothing sent, no other run or
 * socket served. It lets the loop turn at a hand-over once it held it for `ms` or emitted
 * `events` since the last time: its events go out then, so a client sees them within about
 * a slice, and the last slice — what is left to deliver when the run ends — stays small.
 */
import type { RunEvent } from '@switchboard/schemas';
import { afterPoll, loopTurn, loopTurnStart } from './loop-turn.js';

export interface CheckpointDecision {
  /** Serialise and write this checkpoint. */
  write: boolean;
  /** Let the event loop turn before the run goes on. */
  yield: boolean;
}

/** Events a run may be ahead of the disk when nobody watches it. */
export const AHEAD_EVENTS = 8192;

export interface SliceOptions {
  /** How long a run may hold the event loop before it lets it turn. */
  ms: number;
  /** How many events it may emit before it lets the loop turn (with one client watching). */
  events: number;
  /** A slice end writes its checkpoint once the last one written is this old (ms). */
  replayMs: number;
  /** Events a run may be ahead of the disk when nobody watches it (default 8,192). */
  aheadEvents?: number;
}

export class CheckpointPolicy {
  private lastTurn = -1;
  private waits = false;
  private called = false;
  private events = 0;
  private writtenAt = Number.NEGATIVE_INFINITY;
  private costMs = 0;
  private maxEvents: number;
  private watchers = 1;
  /** Clients watching as last told (0: nobody, or not told yet). */
  private clients = 0;

  constructor(private readonly o: SliceOptions) {
    this.maxEvents = o.events;
  }

  /** Sees every event of the run. */
  onEvent(ev: RunEvent): void {
    this.events++;
    if (ev.type === 'input.requested' || ev.type === 'run.paused') this.waits = true;
  }

  /** A tool was called (replayed or not). */
  onToolCall(): void {
    this.called = true;
  }

  /** How long serialising the last written checkpoint took. */
  serialised(ms: number): void {
    this.costMs = ms;
  }

  /**
   * How many clients watch the run. Every event goes out once to each, so the slice holds
   * fewer events when many watch: what a slice sends stays about the same, and so does the
   * time until its last watcher has it.
   */
  watchedBy(clients: number): void {
    this.clients = Math.max(0, clients);
    this.watchers = Math.max(1, clients);
    this.maxEvents = Math.max(8, Math.floor(this.o.events / this.watchers));
  }

  /**
   * How many events the run may be ahead of the disk (written, not yet synced) before it
   * waits for it. While clients watch: four slices for one, fewer per watcher when many watch
   * (at least two slices) — the disk then paces a run that would otherwise fill its watchers'
   * sockets faster than they read (or, for those that take durable events only, publish a
   * pile at once after a slow sync). Nobody watching, what is not durable only costs memory:
   * `aheadEvents` bounds it.
   */
  get aheadLimit(): number {
    if (this.clients === 0) return this.o.aheadEvents ?? AHEAD_EVENTS;
    const w = this.watchers;
    return Math.max(2 * this.maxEvents, Math.floor((4 * this.o.events) / w / w));
  }

  /** At a hand-over: what to do with it. Resets what it saw since the previous one. */
  decide(): CheckpointDecision & { afterToolCall: boolean } {
    const turn = loopTurn();
    const now = performance.now();
    const slice = this.events >= this.maxEvents || now - loopTurnStart() >= this.o.ms;
    const afterToolCall = this.called;
    const write =
      turn !== this.lastTurn ||
      this.waits ||
      afterToolCall ||
      (slice && now - this.writtenAt >= Math.max(this.o.replayMs, 20 * this.costMs));
    if (write) this.writtenAt = now;
    if (slice) this.events = 0;
    this.lastTurn = turn;
    this.waits = false;
    this.called = false;
    return { write, yield: slice, afterToolCall };
  }

  /**
   * Lets the loop turn — through a poll phase, so sockets are served before the run goes on —
   * then notes the new turn as the run's own (it is not an I/O wait).
   */
  async yieldNow(): Promise<void> {
    await afterPoll();
    this.lastTurn = loopTurn();
  }
}
