import { describe, expect, it } from 'vitest';
import { hiddenEntries, TRANSCRIPT_STEP, TRANSCRIPT_WINDOW } from './RunPanel.js';

describe('the transcript window', () => {
  it('hides nothing up to the window', () => {
    expect(hiddenEntries(0, TRANSCRIPT_WINDOW)).toBe(0);
    expect(hiddenEntries(TRANSCRIPT_WINDOW, TRANSCRIPT_WINDOW)).toBe(0);
  });

  it('moves its first entry in steps, so most new entries leave the earlier ones where they are', () => {
    const starts = new Set<number>();
    for (let total = TRANSCRIPT_WINDOW + 1; total <= TRANSCRIPT_WINDOW + 3 * TRANSCRIPT_STEP; total++) {
      const hidden = hiddenEntries(total, TRANSCRIPT_WINDOW);
      expect(hidden % TRANSCRIPT_STEP).toBe(0);
      // At most the window is shown, and never fewer than the window less a step.
      expect(total - hidden).toBeLessThanOrEqual(TRANSCRIPT_WINDOW);
      expect(total - hidden).toBeGreaterThan(TRANSCRIPT_WINDOW - TRANSCRIPT_STEP);
      starts.add(hidden);
    }
    expect([...starts]).toEqual([TRANSCRIPT_STEP, 2 * TRANSCRIPT_STEP, 3 * TRANSCRIPT_STEP]);
  });

  it('shows more after "earlier entries…" (a larger window)', () => {
    expect(hiddenEntries(1500, 1100)).toBe(400);
  });
});
