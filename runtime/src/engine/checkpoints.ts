/**
 * Checkpoints: the run's position handed to the host's `options.checkpoint` after every turn
 * (and on a pause between steps — not on one inside a step, see control.ts — and on a wait), in
 * order. A host that returns nothing lets the turn go on at once; one that returns a promise
 * holds the next checkpoint (not the run) until it settles.
 */
import type { Ctx, RunCore } from './context.js';
import type { RunCheckpoint } from './types.js';

const SETTLED: Promise<void> = Promise.resolve();

export class Checkpoints {
  private chain: Promise<void> = SETTLED;
  /** No checkpoint is being saved: the next one may be handed over at once. */
  private idle = true;

  constructor(
    private readonly run: RunCore,
    /** The run's position as plain data, valid until its next turn. */
    private readonly snapshot: () => RunCheckpoint,
  ) {}

  /**
   * Hands the run's position to the host, in order: at once when no earlier one is still being
   * saved (most turns: a host that is done with it returns nothing and the turn goes on
   * without a microtask), else after the earlier one. Nested runs are not checkpointed.
   */
  save(cx: Ctx): Promise<void> | undefined {
    const save = this.run.options.checkpoint;
    if (!save || cx.depth > 0) return undefined;
    if (this.idle) {
      if (this.run.stop) return undefined;
      const saving = save(this.snapshot());
      if (saving === undefined) return undefined;
      return this.track(saving);
    }
    return this.track(this.chain.then(() => (this.run.stop ? undefined : save(this.snapshot()))));
  }

  /** The checkpoint being saved; the next one waits for it. */
  private track(saving: Promise<void>): Promise<void> {
    this.idle = false;
    const p: Promise<void> = saving.then(() => {
      if (this.chain === p) this.idle = true;
    });
    this.chain = p;
    return p;
  }
}
