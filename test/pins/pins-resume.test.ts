/**
 * A pinned run that a server restart interrupts is resumed pinned: the run's spec keeps its pins,
 * so the turns after the checkpoint still take the pinned node's output from the pin.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import { pinFromRun } from '../../runtime/src/pins/extract.js';
import { createServer } from '../../runtime/src/server/index.js';
import { scanEventLog } from '../../runtime/src/store/event-log.js';
import { slowChain, tempDir, until } from '../server/helpers.js';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('pins across a restart', () => {
  it('a run interrupted before its pinned node resumes with the pin', async () => {
    const t = tempDir('sb-pins-resume-');
    cleanups.push(t.cleanup);
    const flow = slowChain('slow', 6, 40);
    const s1 = await createServer({ dataDir: t.dir, editorDir: false });
    const past = await s1.runs.start({ flow, input: 'go', source: 'api' });
    await s1.runs.settled(past.id);
    const pin = pinFromRun(past.id, { flow, events: s1.store.readEvents(past.id) }, 'a5');
    const rec = await s1.runs.start({ flow, input: 'go', source: 'api', pins: [pin] });
    await until(() => {
      const log = readFileSync(join(t.dir, 'runs', rec.id, 'events.jsonl'), 'utf8');
      return (log.match(/"turn\.completed"/g) ?? []).length >= 2;
    }, 'two checkpoints');
    await s1.close();
    expect(s1.store.catalog.data.runs[rec.id]!.status).toBe('running');

    const s2 = await createServer({ dataDir: t.dir, editorDir: false });
    cleanups.push(() => s2.close());
    await until(
      () => s2.store.catalog.data.runs[rec.id]?.status === 'completed',
      'the resumed run to complete',
    );
    await s2.runs.settled(rec.id);
    const events: RunEvent[] = scanEventLog(join(t.dir, 'runs', rec.id, 'events.jsonl'), rec.id).events;
    expect(events.some((e) => e.type === 'run.resumed')).toBe(true);
    expect(events.filter((e) => e.type === 'node.pinned').map((e) => e.nodeId)).toEqual(['a5']);
    expect(events.some((e) => e.type === 'model.request' && e.nodeId === 'a5')).toBe(false);
    expect(events.some((e) => e.type === 'model.request' && e.nodeId === 'a6')).toBe(true);
  }, 60_000);
});
