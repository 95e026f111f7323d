/**
 * Which of a run's checkpoints its host writes. The engine hands one over after every turn and
 * waits for it; serialising the whole run state each time would cost more than the turn itself
 * when turns need no I/O (the state only changes in memory between them). So a checkpoint is
 * written when the run is about to give up the event loop — which is when a crash can find it
 * stopped — and the turns in between are replayed after a crash, as cheaply as they ran:
 *
 *  - the slice is over: the host lets the loop turn right here, with the run parked on it;
 *  - the loop turned since the last one: this run waits for I/O, so each of its turns counts;
 *  - it asked a person or paused since the last one (it is about to wait, maybe for long);
 *  - it called a tool since the last one: every call is journaled against the checkpoint
 *    before it (journaled-tools.ts), so the calls named by one checkpoint all belong to the
 *    one turn that follows the stretch of replayable turns after it;
 *  - it is the first one of this process.
 */
import type { RunEvent } from '@switchboard/schemas';
import { afterPoll, heldMs, loopTurn } from './loop-turn.js';

export interface CheckpointDecision {
  /** Serialise and write this checkpoint. */
  write: boolean;
  /** Let the event loop turn before the run goes on. */
  yield: boolean;
}

export class CheckpointPolicy {
  private lastTurn = -1;
  private waits = false;
  private called = false;

  /** @param sliceMs how long a run may hold the event loop before it lets it turn. */
  constructor(private readonly sliceMs: number) {}

  /** Sees every event of the run. */
  onEvent(ev: RunEvent): void {
    if (ev.type === 'input.requested' || ev.type === 'run.paused') this.waits = true;
  }

  /** A tool was called (replayed or not). */
  onToolCall(): void {
    this.called = true;
  }

  /** At a hand-over: what to do with it. Resets what it saw since the previous one. */
  decide(): CheckpointDecision & { afterToolCall: boolean } {
    const turn = loopTurn();
    const slice = heldMs() >= this.sliceMs;
    const afterToolCall = this.called;
    const write = slice || turn !== this.lastTurn || this.waits || afterToolCall;
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
