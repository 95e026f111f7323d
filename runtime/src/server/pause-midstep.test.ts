/**
 * A pause that lands inside a step (a model call in flight), then the run's host stops (a worker
 * handing the run back, a server restarting): another host continues from the last checkpoint
 * handed over, as run-manager.ts and redis/run-executor.ts do — replayed turn, tool calls
 * answered from the journal, paused again. The checkpoint must not hold the model provider's
 * state from after the step's replies while its position still names the step's node: the
 * replayed step would then get the next reply (a tool call skipped, or `model_script_exhausted`).
 */

import { describe, expect, it } from 'vitest';
import { assertSeqContiguous, batteryFlow, collectRun, MemoryToolHost } from '../engine/testing/index.js';
import type { RunCheckpoint } from '../engine/types.js';
import { journalHost, MemoryJournal, messages } from './testing/journal-host.js';

const MODEL_CALLS = 9;

describe('a pause inside a step, then the host stops', () => {
  for (let k = 1; k <= MODEL_CALLS; k++)
    it(`paused during model call ${k}: the next host replays the step with the same replies, each tool once`, async () => {
      const plain = await collectRun(batteryFlow(0), 'go', {
        tools: new MemoryToolHost(batteryFlow(0), { fixture: { count: { run: () => 'counted' } } }),
      });
      expect(plain.result, JSON.stringify(plain.result.error)).toMatchObject({
        status: 'completed',
        output: 'closed',
      });

      const f = batteryFlow(40);
      const journal = new MemoryJournal();
      const executed: string[] = [];
      let requests = 0;
      let onPaused!: () => void;
      const paused = new Promise<void>((r) => {
        onPaused = r;
      });
      const first = journalHost(f, journal, executed, undefined, (e) => {
        // The pause lands while the k-th model call is in flight (40 ms of latency).
        if (e.type === 'model.request' && ++requests === k)
          setTimeout(() => first.handle.send({ type: 'pause' }), 10);
        if (e.type === 'run.paused') onPaused();
      });
      await paused;
      // Stopped without writing anything more (a worker handing the run back, a server killed).
      const cp = JSON.parse(first.checkpoint()!) as RunCheckpoint;
      const lastSeq = first.events.at(-1)!.seq;
      first.abort.abort();
      await first.handle.result;

      const second = journalHost(f, journal, executed, { cp, lastSeq });
      // Paused when its host stopped: the next one pauses it again, then it is resumed.
      second.handle.send({ type: 'pause' });
      const resumed = setInterval(() => {
        if (second.events.some((e) => e.type === 'run.paused')) {
          clearInterval(resumed);
          second.handle.send({ type: 'resume' });
        }
      }, 5);
      const r = await second.handle.result;
      clearInterval(resumed);
      expect(r, JSON.stringify(r.error)).toMatchObject({ status: 'completed', output: 'closed' });
      assertSeqContiguous(second.events, lastSeq);
      // The transcript as far as the checkpoint, then the second host's: the undisturbed one.
      const kept = first.events.filter((e) => e.seq <= cp.seq);
      expect([...messages(kept), ...messages(second.events)]).toEqual(messages(plain.events));
      expect(executed.sort()).toEqual(['alice', 'closer', 'planner']);
    });
});
