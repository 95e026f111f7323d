import { describe, expect, it } from 'vitest';
import { StorageWatch, storageView } from './storageHealth.js';

const ok = {
  ok: true,
  status: 'ok',
  storage: { status: 'ok', freeBytes: 5e9, lowSpace: false, lowSpaceBytes: 1 },
};
const full = {
  ok: true,
  status: 'degraded',
  storage: {
    status: 'degraded',
    freeBytes: 0,
    lowSpace: true,
    lastError: { code: 'storage_full', message: 'the disk is full', path: 'runs/r1/events.jsonl' },
  },
};

describe('the storage banner', () => {
  it('says nothing while all is well, alerts while writes fail, warns when space is low', () => {
    expect(storageView(ok)).toBeUndefined();
    expect(storageView({ ok: true })).toBeUndefined();
    expect(storageView(full)).toMatchObject({ level: 'degraded', code: 'storage_full' });
    expect(storageView(full)!.text).toContain('disk is full (runs/r1/events.jsonl)');
    expect(
      storageView({ ...ok, storage: { ...ok.storage, lowSpace: true, freeBytes: 50 * 1024 * 1024 } }),
    ).toEqual({
      level: 'low',
      code: 'storage_low',
      text: 'Storage low: 50.0 MiB free on the server. Runs and saves stop when it is full.',
    });
  });

  it('follows the health route: shows the alert, then clears it', async () => {
    const answers: unknown[] = [ok, full, full, ok];
    const w = new StorageWatch(async () => answers.shift(), 1_000_000);
    let changes = 0;
    w.subscribe(() => changes++);
    await w.poll();
    expect(w.getSnapshot()).toBeUndefined();
    await w.poll();
    expect(w.getSnapshot()?.code).toBe('storage_full');
    await w.poll();
    await w.poll();
    expect(w.getSnapshot()).toBeUndefined();
    expect(changes).toBe(2);
    // A failed request keeps what is shown.
    const failing = new StorageWatch(async () => {
      throw new Error('offline');
    });
    await failing.poll();
    expect(failing.getSnapshot()).toBeUndefined();
  });
});
