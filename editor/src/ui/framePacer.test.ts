import { afterEach, describe, expect, it, vi } from 'vitest';
import { FramePacer } from './framePacer.js';

/** A frame scheduler driven by the test: `next()` runs the callbacks of one frame. */
function frames() {
  let queue: Array<() => void> = [];
  return {
    frame: (fn: () => void) => queue.push(fn),
    next() {
      const run = queue;
      queue = [];
      for (const fn of run) fn();
    },
    get waiting() {
      return queue.length;
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('FramePacer', () => {
  it('shows views at once while the frame budget lasts, the rest a budget per frame, first come first shown', () => {
    const f = frames();
    const pacer = new FramePacer({ perFrame: 2, frame: f.frame });
    const shown: string[] = [];
    const views = ['a', 'b', 'c', 'd', 'e'].map((k) => () => shown.push(k));
    for (const v of views) pacer.request(v);
    expect(shown).toEqual(['a', 'b']);
    expect(pacer.pending).toBe(3);
    f.next();
    expect(shown).toEqual(['a', 'b', 'c', 'd']);
    f.next();
    expect(shown).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(pacer.pending).toBe(0);
    // One more frame resets the budget, then the pacer stops asking for frames.
    f.next();
    expect(f.waiting).toBe(0);
    pacer.request(views[0]!);
    expect(shown.at(-1)).toBe('a');
  });

  it('asking again while waiting keeps the place and shows once', () => {
    const f = frames();
    const pacer = new FramePacer({ perFrame: 1, frame: f.frame });
    const shown: string[] = [];
    const a = () => shown.push('a');
    const b = () => shown.push('b');
    const c = () => shown.push('c');
    pacer.request(a);
    pacer.request(b);
    pacer.request(c);
    pacer.request(b);
    expect(shown).toEqual(['a']);
    f.next();
    expect(shown).toEqual(['a', 'b']);
    f.next();
    expect(shown).toEqual(['a', 'b', 'c']);
  });

  it('a newcomer waits behind views already waiting, even with budget left', () => {
    const f = frames();
    const pacer = new FramePacer({ perFrame: 2, frame: f.frame });
    const shown: string[] = [];
    const v = (k: string) => () => shown.push(k);
    const [a, b, c, d] = [v('a'), v('b'), v('c'), v('d')];
    pacer.request(a);
    pacer.request(b);
    pacer.request(c);
    f.next(); // c shown, one left in this frame's budget
    expect(shown).toEqual(['a', 'b', 'c']);
    pacer.request(d); // the budget allows it and nothing waits: at once
    expect(shown).toEqual(['a', 'b', 'c', 'd']);
  });

  it('a cancelled view is not shown', () => {
    const f = frames();
    const pacer = new FramePacer({ perFrame: 1, frame: f.frame });
    const shown: string[] = [];
    const a = () => shown.push('a');
    const b = () => shown.push('b');
    pacer.request(a);
    pacer.request(b);
    pacer.cancel(b);
    f.next();
    expect(shown).toEqual(['a']);
    expect(pacer.pending).toBe(0);
  });

  it('without frames (a hidden tab) the waiting views are all shown after the fallback time', () => {
    vi.useFakeTimers();
    const pacer = new FramePacer({ perFrame: 1, frame: () => undefined, fallbackMs: 50 });
    const shown: number[] = [];
    for (let i = 0; i < 10; i++) pacer.request(() => shown.push(i));
    expect(shown).toEqual([0]);
    vi.advanceTimersByTime(49);
    expect(shown).toEqual([0]);
    vi.advanceTimersByTime(1);
    expect(shown).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
