/**
 * Checkpoints of a run with parallel branches are cut only when no branch is inside a step
 * (checkpoints.ts): a branch whose turn ends while another's is open waits for it, so a long
 * step delays a checkpoint but never starves them; a branch waiting for a person is not inside
 * a step, so the other branches keep being checkpointed.
 */
import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { runFlow } from './index.js';
import { agent, edge, flow, node } from './testing/index.js';
import type { RunCheckpoint } from './types.js';

/** Turns started and not completed in `events` (the top run's). */
function openTurns(events: readonly RunEvent[]): number {
  let open = 0;
  for (const e of events) {
    if (e.runId !== 'r1') continue;
    if (e.type === 'turn.started') open++;
    else if (e.type === 'turn.completed') open--;
  }
  return open;
}

const seqOf = (events: readonly RunEvent[], type: string, nodeId: string) =>
  events.find((e) => e.type === type && e.nodeId === nodeId)!.seq;

describe('checkpoints of parallel branches', () => {
  it('are cut with no turn open; a branch whose turn ended waits for the open one, then goes on', async () => {
    const f = flow(
      [
        node('start', 'start'),
        agent('slow'),
        agent('a'),
        agent('b'),
        agent('c'),
        agent('joiner'),
        node('end', 'end'),
      ],
      [
        edge('start', 'slow'),
        edge('start', 'a'),
        edge('a', 'b'),
        edge('b', 'c'),
        edge('slow', 'joiner'),
        edge('c', 'joiner'),
        edge('joiner', 'end'),
      ],
      [
        { node: 'slow', text: 'S', latencyMs: 150 },
        { node: 'a', text: 'A' },
        { node: 'b', text: 'B' },
        { node: 'c', text: 'C' },
        { node: 'joiner', text: 'joined' },
      ],
    );
    const events: RunEvent[] = [];
    const cuts: { seq: number; open: number }[] = [];
    const r = await runFlow(f, 'go', {
      runId: 'r1',
      onEvent: (e) => events.push(e),
      checkpoint: (c: RunCheckpoint) => {
        cuts.push({ seq: c.seq, open: openTurns(events) });
        return undefined;
      },
    }).result;
    expect(r, JSON.stringify(r.error)).toMatchObject({ status: 'completed', output: 'joined' });
    expect(cuts.length).toBeGreaterThan(2);
    for (const c of cuts) expect(c, `checkpoint at seq ${c.seq}`).toMatchObject({ open: 0 });
    // a's turn ended inside slow's: b opened its step only once slow's turn was over and the
    // run checkpointed, not before (a checkpoint then would have cut inside slow's turn).
    const slowDone = seqOf(events, 'turn.completed', 'slow');
    const bStarted = seqOf(events, 'turn.started', 'b');
    expect(seqOf(events, 'turn.completed', 'a')).toBeLessThan(slowDone);
    expect(bStarted).toBeGreaterThan(slowDone);
    expect(cuts.some((c) => c.seq > slowDone && c.seq < bStarted)).toBe(true);
  });

  it('a branch waiting for a person does not hold the checkpoints of the others', async () => {
    const f = flow(
      [
        node('start', 'start'),
        node('boss', 'human', { mode: 'ask', question: 'Go?' }),
        agent('a'),
        agent('b'),
        agent('joiner'),
        node('end', 'end'),
      ],
      [
        edge('start', 'boss'),
        edge('start', 'a'),
        edge('a', 'b'),
        edge('boss', 'joiner'),
        edge('b', 'joiner'),
        edge('joiner', 'end'),
      ],
      [
        { node: 'a', text: 'A', latencyMs: 20 },
        { node: 'b', text: 'B', latencyMs: 20 },
        { node: 'joiner', text: 'joined' },
      ],
    );
    const events: RunEvent[] = [];
    const cuts: number[] = [];
    let bCheckpointed!: () => void;
    const bDone = new Promise<void>((r) => {
      bCheckpointed = r;
    });
    const h = runFlow(f, 'go', {
      runId: 'r1',
      onEvent: (e) => events.push(e),
      checkpoint: (c: RunCheckpoint) => {
        cuts.push(c.seq);
        if (events.some((e) => e.type === 'turn.completed' && e.nodeId === 'b')) bCheckpointed();
        return undefined;
      },
    });
    // Both of the other branch's turns end and are checkpointed while the person is asked.
    await bDone;
    expect(events.some((e) => e.type === 'input.received')).toBe(false);
    const asked = seqOf(events, 'input.requested', 'boss');
    expect(cuts.filter((s) => s > asked).length).toBeGreaterThanOrEqual(2);
    h.send({ type: 'answer', nodeId: 'boss', answer: 'go' });
    const r = await h.result;
    expect(r, JSON.stringify(r.error)).toMatchObject({ status: 'completed', output: 'joined' });
  });
});
