/**
 * Parallel branches and checkpoints: one branch's turn ends while another branch's model call
 * is in flight, then the run's host stops (a server killed, a worker handing the run back).
 * The next host resumes from the last checkpoint handed over, as run-manager.ts and
 * redis/run-executor.ts do. A checkpoint cut there would hold the model provider's state from
 * after the open turn's replies while its position still names that turn's node: the resumed
 * branch would replay its turn against a script moved past it (`model_script_exhausted`), and
 * its tool calls, journaled under an older checkpoint, would run again.
 */

import { describe, expect, it } from 'vitest';
import {
  assertSeqContiguous,
  collectRun,
  MemoryToolHost,
  parallelSlowFlow,
} from '../engine/testing/index.js';
import type { RunCheckpoint } from '../engine/types.js';
import { journalHost, MemoryJournal, messages } from './testing/journal-host.js';

describe('a checkpoint while a parallel branch is inside its turn', () => {
  it("the next host replays the open turn once, with the script's same replies and each tool call once", async () => {
    const plain = await collectRun(parallelSlowFlow(0), 'go', {
      tools: new MemoryToolHost(parallelSlowFlow(0), { fixture: { count: { run: () => 'counted' } } }),
    });
    expect(plain.result, JSON.stringify(plain.result.error)).toMatchObject({
      status: 'completed',
      output: 'joined',
    });
    const plainRequests = plain.events.filter((e) => e.type === 'model.request').length;

    // p1's reply takes 400 ms: p2's turn (20 ms, a tool call, a reply) ends well inside it.
    const f = parallelSlowFlow(400);
    const journal = new MemoryJournal();
    const executed: string[] = [];
    let onCut!: () => void;
    const cut = new Promise<void>((r) => {
      onCut = r;
    });
    const first = journalHost(f, journal, executed, undefined, (e) => {
      if (e.type === 'turn.completed' && e.nodeId === 'p2') setTimeout(onCut, 30);
    });
    await cut;
    // p1's model call is still in flight: the host stops without writing anything more.
    expect(first.events.some((e) => e.type === 'turn.completed' && e.nodeId === 'p1')).toBe(false);
    const cp = JSON.parse(first.checkpoint()!) as RunCheckpoint;
    const lastSeq = first.events.at(-1)!.seq;
    first.abort.abort();
    await first.handle.result;

    const second = journalHost(f, journal, executed, { cp, lastSeq });
    const r = await second.handle.result;
    expect(r, JSON.stringify(r.error)).toMatchObject({ status: 'completed', output: 'joined' });
    assertSeqContiguous(second.events, lastSeq);
    // The transcript as far as the checkpoint, then the second host's: the undisturbed one.
    const kept = first.events.filter((e) => e.seq <= cp.seq);
    expect([...messages(kept), ...messages(second.events)].sort()).toEqual(messages(plain.events).sort());
    // Each scripted reply asked for once over the run's life as its log keeps it.
    const requests = [...kept, ...second.events].filter((e) => e.type === 'model.request').length;
    expect(requests).toBe(plainRequests);
    expect(executed.sort()).toEqual(['p1', 'p2']);
  });
});
