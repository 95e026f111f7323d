/**
 * Spreads the updates of many small views over animation frames. A 100-node fan-out delivers a
 * streamed piece to every node in the same frame; drawing 100 faces at once costs a frame several
 * times over, while drawing a share of them each frame keeps every frame short. A view asks to
 * be shown (`request`); while this frame's budget lasts it is shown at once, as before, so a
 * change to a few nodes (a scrub, a run of a few agents) appears in the frame it happens. Past
 * the budget it waits its turn, first come first shown, and shows its latest state when its turn
 * comes: asking again while waiting neither adds a turn nor loses its place.
 */
export interface FramePacerOptions {
  /** Views shown per frame. */
  perFrame: number;
  /** The frame scheduler (default `requestAnimationFrame`). */
  frame?: (fn: () => void) => unknown;
  /**
   * Without frames (a hidden tab, no `requestAnimationFrame`) the waiting views are shown after
   * this many ms, all at once. Default 500 (longer than a frame of a busy machine).
   */
  fallbackMs?: number;
}

export class FramePacer {
  private readonly waiting = new Set<() => void>();
  /** Views shown since the current frame began. */
  private used = 0;
  private scheduled = false;

  constructor(private readonly o: FramePacerOptions) {}

  /** Runs `show` now if this frame's budget allows it, else in a later frame (once). */
  request(show: () => void): void {
    if (this.waiting.has(show)) return;
    if (this.waiting.size === 0 && this.used < this.o.perFrame) {
      this.used++;
      this.schedule();
      show();
      return;
    }
    this.waiting.add(show);
    this.schedule();
  }

  /** Forgets a waiting `show` (its view went away). */
  cancel(show: () => void): void {
    this.waiting.delete(show);
  }

  /** How many views wait for a frame. */
  get pending(): number {
    return this.waiting.size;
  }

  /** At the next frame: a new budget, and the first waiting views shown from it. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const raf = this.o.frame ?? globalThis.requestAnimationFrame;
    let done = false;
    const tick = (all: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      this.scheduled = false;
      this.used = 0;
      for (const show of this.waiting) {
        if (!all && this.used >= this.o.perFrame) break;
        this.waiting.delete(show);
        this.used++;
        show();
      }
      // The budget this frame spent resets at the next one; views still waiting go then.
      if (this.used > 0 || this.waiting.size > 0) this.schedule();
    };
    const timer = setTimeout(() => tick(true), this.o.fallbackMs ?? 500);
    if (raf !== undefined) raf(() => tick(false));
  }
}
