import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { runFlow } from './index.js';
import {
  agent,
  assertEventsValid,
  assertSeqContiguous,
  collectRun,
  edge,
  flow,
  node,
} from './testing/index.js';
import type { RunCheckpoint } from './types.js';

/** A flow with a group chat, a decider, a summarizer and a human: plenty of state to carry over. */
const rich = () =>
  flow(
    [
      node('start', 'start'),
      agent('planner'),
      node('room', 'team', { mode: 'groupChat', termination: { maxTurns: 4 } }),
      agent('alice', { memory: 'summary' }, { parent: 'room' }),
      agent('bob', {}, { parent: 'room' }),
      node('sum', 'observer', { type: 'summarizer', every: 2 }),
      node('d', 'decider', { strategy: 'roundRobin' }),
      node('boss', 'human', { mode: 'ask', question: 'OK?' }),
      agent('closer'),
      node('end', 'end'),
    ],
    [
      edge('start', 'planner'),
      edge('planner', 'room'),
      edge('sum', 'room', 'observe'),
      edge('room', 'd'),
      edge('d', 'boss', 'handover', undefined, 'd-boss'),
      edge('boss', 'closer'),
      edge('closer', 'end'),
    ],
    [
      { node: 'planner', text: 'plan' },
      { node: 'alice', text: 'a1' },
      { node: 'bob', text: 'b1' },
      { node: 'alice', text: 'a2' },
      { node: 'bob', text: 'b2' },
      { node: 'sum', text: 'summary', repeat: true },
      { node: 'closer', text: 'closed' },
    ],
  );

const msgs = (events: RunEvent[]) =>
  events.filter((e) => e.type === 'message').map((e) => (e as { message: unknown }).message);

describe('checkpoints and resume', () => {
  it('a checkpoint after every turn; another run resumes from any of them with seq continuing and the same transcript', async () => {
    const full = await collectRun(rich(), 'go', { answers: { boss: 'yes' } });
    expect(full.result).toMatchObject({ status: 'completed', output: 'closed' });

    const saved: string[] = [];
    await collectRun(rich(), 'go', {
      answers: { boss: 'yes' },
      checkpoint: async (cp) => {
        saved.push(JSON.stringify(cp));
      },
    });
    expect(saved.length).toBeGreaterThanOrEqual(8);
    for (const [k, text] of saved.entries()) {
      const cp = JSON.parse(text) as RunCheckpoint;
      // The "crashed" process wrote events up to cp.seq; a new process resumes from the file.
      const before = full.events.filter((e) => e.seq <= cp.seq);
      const resumed = await collectRun(rich(), 'go', { resume: cp, answers: { boss: 'yes' } }, cp.seq);
      expect(resumed.result, `checkpoint ${k}`).toMatchObject({ status: 'completed', output: 'closed' });
      expect(resumed.events[0]).toMatchObject({ type: 'run.resumed', fromCheckpoint: true, seq: cp.seq + 1 });
      expect([...msgs(before), ...msgs(resumed.events)], `checkpoint ${k}`).toEqual(msgs(full.events));
    }
  });

  it('a run waiting for a human is checkpointed; a new process resumes and the answer command completes it', async () => {
    let waiting: string | undefined;
    const events: RunEvent[] = [];
    const h = runFlow(rich(), 'go', {
      checkpoint: async (cp) => {
        waiting = JSON.stringify(cp);
      },
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'input.requested')
          queueMicrotask(() => h.send({ type: 'cancel', reason: 'process exits' }));
      },
    });
    expect((await h.result).status).toBe('cancelled');
    const cp = JSON.parse(waiting!) as RunCheckpoint;
    const after: RunEvent[] = [];
    const h2 = runFlow(rich(), 'go', {
      resume: cp,
      onEvent: (e) => {
        after.push(e);
        if (e.type === 'input.requested') setTimeout(() => h2.send({ type: 'answer', answer: 'fine' }), 5);
      },
    });
    const r = await h2.result;
    expect(r).toMatchObject({ status: 'completed', output: 'closed' });
    assertEventsValid(after);
    assertSeqContiguous(after, cp.seq);
    expect(after.filter((e) => e.type === 'input.requested')).toHaveLength(1);
  });

  it('breakpoints and early answers are part of the checkpoint: a resumed run keeps them', async () => {
    const cps: string[] = [];
    const h = runFlow(rich(), 'go', {
      checkpoint: async (cp) => {
        cps.push(JSON.stringify(cp));
      },
      onEvent: (e) => {
        // The process "dies" once the room has spoken twice, before the person is asked.
        if (e.type === 'message' && (e as { message: { content: string } }).message.content === 'b1')
          queueMicrotask(() => h.send({ type: 'cancel', reason: 'process exits' }));
      },
    });
    h.send({ type: 'breakpoint', nodeId: 'closer', on: true });
    h.send({ type: 'breakpoint', nodeId: 'planner', on: true });
    h.send({ type: 'breakpoint', nodeId: 'planner', on: false });
    h.send({ type: 'answer', nodeId: 'boss', answer: 'yes, early' });
    expect((await h.result).status).toBe('cancelled');
    const cp = JSON.parse(cps.at(-1)!) as RunCheckpoint;

    const after: RunEvent[] = [];
    const h2 = runFlow(rich(), 'go', {
      resume: cp,
      humanInput: 'fail',
      onEvent: (e) => {
        after.push(e);
        if (e.type === 'run.paused') setTimeout(() => h2.send({ type: 'resume' }), 1);
      },
    });
    const r = await h2.result;
    expect(r).toMatchObject({ status: 'completed', output: 'closed' });
    // The answer sent to the first process reached the person's node (humanInput 'fail' would
    // have failed the run had it been lost).
    expect(after.find((e) => e.type === 'input.received')).toMatchObject({
      nodeId: 'boss',
      answer: 'yes, early',
    });
    // The breakpoint set in the first process still holds; the cleared one does not.
    const paused = after.filter((e) => e.type === 'run.paused');
    expect(paused).toHaveLength(1);
    expect(paused[0]).toMatchObject({ reason: 'breakpoint at closer' });
    const next = after[after.indexOf(paused[0]!) + 2];
    expect(next).toMatchObject({ type: 'node.started', nodeId: 'closer' });
    assertSeqContiguous(after, cp.seq);
  });

  it('checkpoints come in seq order whether the host returns nothing or a promise; a promise holds the run until it settles', async () => {
    const f = flow(
      [node('start', 'start'), agent('a'), agent('b'), agent('c'), node('end', 'end')],
      [edge('start', 'a'), edge('a', 'b'), edge('b', 'c'), edge('c', 'end')],
      [
        { node: 'a', text: 'A' },
        { node: 'b', text: 'B' },
        { node: 'c', text: 'C' },
      ],
    );
    const order: string[] = [];
    let hold: (() => void) | undefined;
    let n = 0;
    const h = runFlow(f, 'go', {
      onEvent: (e) => {
        if (e.type === 'node.started') order.push(`start ${e.nodeId}`);
      },
      checkpoint: (cp) => {
        order.push(`cp ${cp.seq}`);
        // The second checkpoint is slow to keep: nothing runs until it is.
        if (++n === 2)
          return new Promise<void>((r) => {
            hold = r;
          });
        return undefined;
      },
    });
    for (let i = 0; i < 50 && !hold; i++) await new Promise((r) => setTimeout(r, 1));
    expect(hold).toBeDefined();
    const heldAt = order.length;
    await new Promise((r) => setTimeout(r, 20));
    expect(order.length).toBe(heldAt);
    hold!();
    const r = await h.result;
    expect(r.status).toBe('completed');
    // Checkpoints in seq order, each before the next node starts; the held one came before the rest.
    const cps = order.filter((o) => o.startsWith('cp')).map((o) => Number(o.slice(3)));
    expect(cps).toEqual([...cps].sort((x, y) => x - y));
    expect(order[heldAt - 1]).toMatch(/^cp /);
    expect(cps.length).toBeGreaterThanOrEqual(4);
  });

  it('refuses a checkpoint of another flow', async () => {
    const { result } = await collectRun(
      rich(),
      'x',
      {
        resume: { version: 1, runId: 'r', flowId: 'other', seq: 3, data: {} },
      },
      3,
    );
    expect(result.error?.code).toBe('flow_invalid');
  });
});
