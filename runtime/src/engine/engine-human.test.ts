import { describe, expect, it } from 'vitest';
import { runFlow } from './index.js';
import { agent, collectRun, edge, flow, node, trace } from './testing/index.js';

const gate = () =>
  flow(
    [
      node('start', 'start'),
      agent('writer'),
      node('boss', 'human', {
        mode: 'approve',
        question: 'Publish "{{last}}"?',
        options: ['approve', 'reject'],
      }),
      agent('publisher'),
      agent('rewriter'),
      node('end', 'end'),
    ],
    [
      edge('start', 'writer'),
      edge('writer', 'boss'),
      edge('boss', 'publisher', 'handover', { branch: 'approve' }),
      edge('boss', 'rewriter', 'handover', { branch: 'reject' }),
      edge('publisher', 'end'),
      edge('rewriter', 'end'),
    ],
    [
      { node: 'writer', text: 'the post' },
      { node: 'publisher', text: 'published' },
      { node: 'rewriter', text: 'rewritten' },
    ],
  );

describe('human nodes', () => {
  it('an approve gate routes by the edge branch (answers from options.answers)', async () => {
    const yes = await collectRun(gate(), 'x', { answers: { boss: 'yes, ship it' } });
    expect(yes.result.output).toBe('published');
    expect(yes.events.find((e) => e.type === 'input.requested')).toMatchObject({
      nodeId: 'boss',
      question: 'Publish "the post"?',
      options: ['approve', 'reject'],
    });
    expect(trace(yes.events, ['input.requested', 'input.received'])).toEqual([
      'input.requested@boss',
      'input.received@boss',
    ]);
    const no = await collectRun(gate(), 'x', { answers: { boss: 'no, too long' } });
    expect(no.result.output).toBe('rewritten');
  });

  it('waits for an answer command and shows status waiting', async () => {
    const h = runFlow(gate(), 'x', {
      onEvent: (e) => {
        if (e.type === 'input.requested')
          setTimeout(() => {
            expect(h.status).toBe('waiting');
            h.send({ type: 'answer', nodeId: 'boss', answer: 'approve' });
          }, 20);
      },
    });
    const r = await h.result;
    expect(r).toMatchObject({ status: 'completed', output: 'published' });
  });

  it('fails clearly with human_input_required when no answer can come', async () => {
    const { result, events } = await collectRun(gate(), 'x', { humanInput: 'fail' });
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('human_input_required');
    expect(result.error?.message).toContain('"boss"');
    expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'human_input_required' } });
  });

  it('an ask node times out with human_timeout', async () => {
    const f = flow(
      [
        node('start', 'start'),
        node('q', 'human', { mode: 'ask', question: 'Name?', timeoutMs: 50 }),
        node('end', 'end'),
      ],
      [edge('start', 'q'), edge('q', 'end')],
    );
    const { result } = await collectRun(f, 'x');
    expect(result.error?.code).toBe('human_timeout');
  });

  it('answers lists are consumed in order across visits', async () => {
    const f = flow(
      [
        node('start', 'start'),
        node('q', 'human', { mode: 'ask', question: 'Again?' }),
        node('d', 'decider', {
          strategy: 'rules',
          rules: [{ when: { path: 'last.content', op: 'eq', value: 'stop' }, to: 'done' }],
          default: 'back',
        }),
        node('end', 'end'),
        node('t', 'team', { mode: 'handover', termination: { maxTurns: 50 } }),
      ],
      [
        edge('start', 'q'),
        edge('q', 'd'),
        edge('d', 'q', 'handover', undefined, 'back'),
        edge('d', 'end', 'handover', undefined, 'fin'),
      ],
    );
    const { result, events } = await collectRun(f, 'x', {
      answers: { q: ['a', 'b', 'stop'] },
      validate: false,
    });
    expect(result.status).toBe('completed');
    expect(
      events.filter((e) => e.type === 'input.received').map((e) => (e as { answer: string }).answer),
    ).toEqual(['a', 'b', 'stop']);
  });
});
