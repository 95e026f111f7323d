/**
 * Checkpoints: the run's position handed to the host's `options.checkpoint` after every turn
 * (and on a pause between steps — not on one inside a step, see control.ts — and on a human
 * node's wait), in order. A host that returns nothing lets the turn go on at once; one that
 * returns a promise holds the next checkpoint (not the run) until it settles.
 *
 * A checkpoint is cut only when no step of the run is open. Inside a step (a model or tool
 * call under way) the run's position still names the step's node while the model provider has
 * served the step's replies and its tool calls are journaled under the checkpoint before it:
 * a resumed run replays the step whole, so a checkpoint cut then — by a parallel branch whose
 * turn ended, a pause, a wait — would make it replay against a script moved past it
 * (`model_script_exhausted`) and run its tool calls again. So the drive loop opens a step
 * (`enter`) after its boundary gate and closes it (`leave`) at the next boundary; a checkpoint
 * asked for while another branch's step is open is cut when the last open step closes, and
 * until then no branch opens a new step: a long step delays the checkpoint by its own length,
 * never for good. A run without parallel branches has at most one step open, closed before
 * its checkpoint: nothing waits. A person asked inside a step (an MCP elicitation during a tool
 * call) keeps it open and may take hours: while one is asked, the other branches' steps open
 * (the checkpoint could not be cut before that step closes anyway), and once no one is asked
 * any more, no step opens until the checkpoint is cut.
 */
import type { Ctx, RunCore } from './context.js';
import type { RunCheckpoint } from './types.js';

const SETTLED: Promise<void> = Promise.resolve();

export class Checkpoints {
  private chain: Promise<void> = SETTLED;
  /** No checkpoint is being saved: the next one may be handed over at once. */
  private idle = true;
  /** Steps of the run open now (a branch between its boundary gate and the next). */
  private open = 0;
  /** Open steps (any depth) waiting for a person inside: steps open while there is one. */
  private asking = 0;
  /** A checkpoint is asked for and its snapshot not taken yet: no step opens until it is. */
  private wanted = false;
  /** Branches waiting to open a step until the wanted snapshot is taken (made when one waits). */
  private waiting: { promise: Promise<void>; resolve: () => void } | undefined;
  /** The wanted checkpoint is scheduled (after the one being saved). */
  private scheduled: Promise<void> | undefined;

  /** The host's checkpoint callback (undefined: the run is not checkpointed, nothing is counted). */
  private readonly host: ((cp: RunCheckpoint) => Promise<void> | undefined) | undefined;

  constructor(
    private readonly run: RunCore,
    /** The run's position as plain data, valid until its next turn. */
    private readonly snapshot: () => RunCheckpoint,
  ) {
    this.host = run.options.checkpoint;
  }

  /**
   * A branch opens a step. Undefined at once unless a checkpoint is waiting for other steps to
   * close: then after its snapshot is taken.
   */
  enter(cx: Ctx): Promise<void> | undefined {
    if (this.host === undefined || cx.depth > 0) return undefined;
    if (this.wanted && this.asking === 0) {
      if (!this.waiting) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => {
          resolve = r;
        });
        this.waiting = { promise, resolve };
      }
      return this.waiting.promise.then(() => this.enter(cx));
    }
    this.open++;
    return undefined;
  }

  /** An open step starts (`true`) or ends (`false`) waiting for a person inside it. */
  asked(waiting: boolean): void {
    if (this.host === undefined) return;
    if (!waiting) {
      this.asking--;
      return;
    }
    this.asking++;
    // Branches held for the wanted checkpoint go on: it waits for this step to close.
    const w = this.waiting;
    if (!w) return;
    this.waiting = undefined;
    w.resolve();
  }

  /**
   * A branch closes its step; `save`: a turn ended, hand the run's position over. The
   * checkpoint is cut now if no other step is open, else when the last one closes.
   */
  leave(cx: Ctx, save: boolean): Promise<void> | undefined {
    if (this.host === undefined || cx.depth > 0) return undefined;
    if (this.open > 0) this.open--;
    return save ? this.save(cx) : this.open === 0 && this.wanted ? this.take() : undefined;
  }

  /**
   * Hands the run's position to the host, in order: at once when no step is open and no earlier
   * checkpoint is still being saved (most turns: a host that is done with it returns nothing and
   * the turn goes on without a microtask), else after the earlier one; while another branch's
   * step is open, when it closes (undefined here). Called between steps (a closed step, a pause
   * at a boundary, a wait). Nested runs are not checkpointed.
   */
  save(cx: Ctx): Promise<void> | undefined {
    if (this.host === undefined || cx.depth > 0) return undefined;
    if (this.open === 0) return this.take();
    this.wanted = true;
    return undefined;
  }

  /** The run ended: branches waiting for a checkpoint go on (and find the run's stop). */
  release(): void {
    this.cut();
  }

  /** Takes the wanted checkpoint's snapshot (after the one being saved) and hands it over. */
  private take(): Promise<void> | undefined {
    if (this.scheduled) return this.scheduled;
    const save = this.host!;
    if (this.idle) {
      if (this.wanted) this.cut();
      if (this.run.stop) return undefined;
      const saving = save(this.snapshot());
      if (saving === undefined) return undefined;
      return this.track(saving);
    }
    // Taken after the one being saved: until then no step opens.
    this.wanted = true;
    const p = this.track(
      this.chain.then(() => {
        this.scheduled = undefined;
        const cp = this.run.stop ? undefined : this.snapshot();
        this.cut();
        return cp === undefined ? undefined : save(cp);
      }),
    );
    this.scheduled = p;
    return p;
  }

  /** The wanted checkpoint is cut: steps may open again. */
  private cut(): void {
    this.wanted = false;
    const w = this.waiting;
    if (!w) return;
    this.waiting = undefined;
    w.resolve();
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
