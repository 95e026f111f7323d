/**
 * Pause, step and breakpoints: the commands that hold the loop between events. Every await point
 * of a run passes `gate`, a flag test when nothing is pending.
 *
 * A pause hands the host a checkpoint only at a step boundary (the control loop between nodes,
 * a breakpoint), and with parallel branches once no other branch is inside a step
 * (checkpoints.ts). Inside a step — a model or tool call under way, a team choosing its next
 * speaker — the run's position still names the step's node while the model provider has already
 * served the step's replies (and the transcript may hold its message): a checkpoint taken there
 * would make a resumed run replay the step against a script moved past it, so a reply is
 * consumed twice (`model_script_exhausted`) or a tool call is skipped. Paused mid-step, the run's
 * last checkpoint stays the one before the step: a host that resumes it (another worker, a
 * restarted server) replays the step whole, its tool calls answered from the journal, and pauses
 * it again from its log (a `run.paused` after the checkpoint).
 */
import { type Ctx, NO_NAMES, ownSet, type RunCore } from './context.js';

export class Control {
  private pauseRequested = false;
  private stepping = false;
  private pauseGate: { promise: Promise<void>; resolve: () => void } | undefined;
  private breakpoints: ReadonlySet<string>;

  constructor(
    private readonly run: RunCore,
    /** Saves a checkpoint of the run when it pauses. */
    private readonly checkpoint: (cx: Ctx) => Promise<void> | undefined,
    breakpoints: readonly string[] | undefined,
  ) {
    this.breakpoints = breakpoints?.length ? new Set(breakpoints) : NO_NAMES;
  }

  /**
   * Between events: a flag test, unless a pause, a stop or a step is pending. `boundary`: the
   * run is between steps (the control loop), where a pause checkpoints the run.
   */
  gate(cx: Ctx, boundary = false): Promise<void> | undefined {
    if (this.run.stop) throw this.run.stop;
    if (this.pauseRequested || this.pauseGate) return this.pauseNow(cx, 'requested', undefined, boundary);
    return undefined;
  }

  pause(): void {
    this.pauseRequested = true;
  }

  /** Resumes a paused run; `step`: it pauses again after the next turn. */
  resume(step: boolean): void {
    this.stepping = step;
    this.pauseRequested = false;
    this.release();
  }

  /** The run ended: whoever waits on a pause goes on (and finds the run's stop). */
  release(): void {
    const g = this.pauseGate;
    if (!g) return;
    this.pauseGate = undefined;
    g.resolve();
  }

  breakpoint(nodeId: string, on: boolean): void {
    if (on) {
      const b = ownSet(this.breakpoints);
      b.add(nodeId);
      this.breakpoints = b;
    } else ownSet(this.breakpoints).delete(nodeId);
  }

  hasBreakpoint(nodeId: string): boolean {
    return this.breakpoints.size > 0 && this.breakpoints.has(nodeId);
  }

  /** The breakpoints a checkpoint keeps (undefined: none). */
  breakpointList(): string[] | undefined {
    return this.breakpoints.size > 0 ? [...this.breakpoints] : undefined;
  }

  /** After a node: a step command pauses the run after a turn-bearing node. */
  stepped(role: string): void {
    if (this.stepping && (role === 'agent' || role === 'decider' || role === 'human')) {
      this.stepping = false;
      this.pauseRequested = true;
    }
  }

  /** Stops before a node that has a breakpoint, naming it in run.paused. */
  breakAt(cx: Ctx, nodeId: string): Promise<void> {
    return this.pauseNow(cx, `breakpoint at ${nodeId}`, nodeId, true);
  }

  /**
   * `nodeId`: the node the run stops before (a breakpoint), named in run.paused. `boundary`:
   * between steps, where the pause checkpoints the run (see the head of this file).
   */
  private async pauseNow(
    cx: Ctx,
    reason: string,
    nodeId: string | undefined,
    boundary: boolean,
  ): Promise<void> {
    const run = this.run;
    if (!this.pauseGate) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.pauseGate = { promise, resolve };
      this.pauseRequested = false;
      run.status = 'paused';
      run.events.emit(
        cx,
        nodeId === undefined ? { type: 'run.paused', reason } : { type: 'run.paused', nodeId, reason },
      );
      if (boundary) await this.checkpoint(cx);
      await promise;
      if (run.stop) throw run.stop;
      run.status = 'running';
      run.events.emit(cx, { type: 'run.resumed' });
      return;
    }
    await this.pauseGate.promise;
    if (run.stop) throw run.stop;
  }
}
