/**
 * Pause, step and breakpoints: the commands that hold the loop between events. Every await point
 * of a run passes `gate`, a flag test when nothing is pending.
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

  /** Between events: a flag test, unless a pause, a stop or a step is pending. */
  gate(cx: Ctx): Promise<void> | undefined {
    if (this.run.stop) throw this.run.stop;
    if (this.pauseRequested || this.pauseGate) return this.pauseNow(cx, 'requested');
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
    return this.pauseNow(cx, `breakpoint at ${nodeId}`, nodeId);
  }

  /** `nodeId`: the node the run stops before (a breakpoint), named in run.paused. */
  private async pauseNow(cx: Ctx, reason: string, nodeId?: string): Promise<void> {
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
      await this.checkpoint(cx);
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
