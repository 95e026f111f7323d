import { describe, expect, it } from 'vitest';
import { agent, collectRun, edge, flow, node, recordingModels } from './testing/index.js';

/** start → a → b → c, where the b→c edge carries the protocol under test. */
const protocol = (
  config: Record<string, unknown>,
  extra: { nodes?: ReturnType<typeof node>[]; edges?: ReturnType<typeof edge>[] } = {},
) =>
  flow(
    [node('start', 'start'), agent('a'), agent('b'), agent('c'), node('end', 'end'), ...(extra.nodes ?? [])],
    [
      edge('start', 'a'),
      edge('a', 'b'),
      edge('b', 'c', 'handover', config),
      edge('c', 'end'),
      ...(extra.edges ?? []),
    ],
    [
      { node: 'a', text: 'A1' },
      { node: 'b', text: 'B1' },
      { node: 'c', text: 'C1' },
      { fallback: true, text: 'S' },
    ],
  );

async function seenByC(config: Record<string, unknown>, state?: Record<string, unknown>) {
  const { factory, requests } = recordingModels();
  const f = protocol(config);
  const { result } = await collectRun(f, state ? { task: 'go', ...state } : 'go', { models: factory });
  expect(result.status).toBe('completed');
  return requests
    .find((r) => r.nodeId === 'c')!
    .messages.slice(1)
    .map((m) => m.content);
}

describe('handover protocol', () => {
  it('default: the whole transcript goes along', async () => {
    expect(await seenByC({})).toEqual(['go', 'A1', 'B1']);
  });
  it('context none: only the briefing, rendered from templates', async () => {
    expect(
      await seenByC({ context: { mode: 'none' }, briefing: 'Review this: {{last}} (task {{task}})' }),
    ).toEqual(['Review this: B1 (task go)']);
  });
  it('context lastN', async () => {
    expect(await seenByC({ context: { mode: 'lastN', n: 2 } })).toEqual(['A1', 'B1']);
  });
  it('context state: named keys go in the briefing', async () => {
    const { factory, requests } = recordingModels();
    const f = flow(
      [
        node('start', 'start'),
        node('q', 'human', { mode: 'approve', question: 'ok?' }),
        agent('c'),
        node('end', 'end'),
      ],
      [
        edge('start', 'q'),
        edge('q', 'c', 'handover', {
          branch: 'approve',
          context: { mode: 'state', keys: ['q.verdict', 'missing'] },
          briefing: 'Go.',
        }),
        edge('c', 'end'),
      ],
      ['done'],
    );
    await collectRun(f, 'x', { models: factory, answers: { q: 'yes' } });
    expect(requests[0]!.messages.slice(1).map((m) => m.content)).toEqual([
      'Go.\n\nState:\n{"q.verdict":"approve","missing":null}',
    ]);
  });
  it('context summary: the sender’s summary goes along', async () => {
    const { factory, requests } = recordingModels();
    const f = protocol(
      { context: { mode: 'summary' } },
      {
        nodes: [node('sum', 'observer', { type: 'summarizer', every: 1 })],
        edges: [edge('sum', 'b', 'observe')],
      },
    );
    await collectRun(f, 'go', { models: factory });
    expect(
      requests
        .find((r) => r.nodeId === 'c')!
        .messages.slice(1)
        .map((m) => m.content),
    ).toEqual(['Summary so far:\nS']);
  });
  it("a team's termination decider ends it after a member turn", async () => {
    const f = flow(
      [
        node('start', 'start'),
        node('t', 'team', { mode: 'handover', entry: 'w1', termination: { decider: 'stop' } }),
        agent('w1', {}, { parent: 't' }),
        agent('w2', {}, { parent: 't' }),
        node(
          'stop',
          'decider',
          {
            strategy: 'rules',
            rules: [{ when: { path: 'last.content', op: 'contains', value: 'FINAL' }, to: 'done' }],
            default: 'done-not',
          },
          { parent: 't' },
        ),
        node('end', 'end'),
      ],
      [
        edge('start', 't'),
        edge('w1', 'w2'),
        edge('w2', 'w1'),
        edge('stop', 'w1', 'handover', undefined, 'done-not'),
        edge('t', 'end'),
      ],
      [
        { node: 'w1', text: 'draft' },
        { node: 'w2', text: 'FINAL' },
      ],
    );
    const { events, result } = await collectRun(f, 'x');
    expect(result).toMatchObject({ status: 'completed', output: 'FINAL' });
    expect(
      events
        .filter((e) => e.type === 'decision' && e.nodeId === 'stop')
        .map((e) => (e as { choice: unknown }).choice),
    ).toEqual(['done-not', 'done']);
  });
});
