import { describe, expect, it } from 'vitest';
import { AHEAD_EVENTS, CheckpointPolicy } from './checkpoint-policy.js';

const opts = { ms: 2, events: 320, replayMs: 5 };

describe('checkpoint policy: how far a run may get ahead of the disk', () => {
  it('bounds only memory when no client waits for durable events (nobody, or live views only)', () => {
    const p = new CheckpointPolicy(opts);
    expect(p.aheadLimit).toBe(AHEAD_EVENTS);
    p.watchedBy(5, 0);
    expect(p.aheadLimit).toBe(AHEAD_EVENTS);
    expect(new CheckpointPolicy({ ...opts, aheadEvents: 100 }).aheadLimit).toBe(100);
  });

  it('keeps durable-only watchers close to the run: fewer events ahead the more of them watch', () => {
    const p = new CheckpointPolicy(opts);
    p.watchedBy(1, 1);
    expect(p.aheadLimit).toBe(4 * 320);
    // Live views among them do not count for this, but every watcher shrinks the slice.
    p.watchedBy(10, 1);
    expect(p.aheadLimit).toBe(4 * 320);
    p.watchedBy(50, 50);
    expect(p.aheadLimit).toBe(16); // two slices of 8 events (320 / 50 is below the floor of 8)
    expect(p.aheadLimit).toBeLessThan(AHEAD_EVENTS);
  });
});
