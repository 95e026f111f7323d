import { describe, expect, it } from 'vitest';
import { AHEAD_EVENTS, CheckpointPolicy } from './checkpoint-policy.js';

const opts = { ms: 2, events: 320, replayMs: 5 };

describe('checkpoint policy: how far a run may get ahead of the disk', () => {
  it('bounds only memory while nobody watches', () => {
    const p = new CheckpointPolicy(opts);
    expect(p.aheadLimit).toBe(AHEAD_EVENTS);
    p.watchedBy(0);
    expect(p.aheadLimit).toBe(AHEAD_EVENTS);
    expect(new CheckpointPolicy({ ...opts, aheadEvents: 100 }).aheadLimit).toBe(100);
  });

  it('paces the run by the disk while clients watch: fewer events ahead, and smaller slices, the more watch', () => {
    const p = new CheckpointPolicy(opts);
    p.watchedBy(1);
    expect(p.aheadLimit).toBe(4 * 320);
    p.watchedBy(2);
    expect(p.aheadLimit).toBe(320); // max(2 slices of 160, 4 × 320 / 2²)
    p.watchedBy(50);
    expect(p.aheadLimit).toBe(16); // two slices of 8 events (320 / 50 is below the floor of 8)
    p.watchedBy(0);
    expect(p.aheadLimit).toBe(AHEAD_EVENTS);
  });
});
