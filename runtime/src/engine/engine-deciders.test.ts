import { describe, expect, it } from 'vitest';
import { agent, collectRun, edge, flow, node, recordingModels } from './testing/index.js';

/** start → writer → decider → (a | b | c) → end */
const routed = (decider: Record<string, unknown>, script: unknown[]) =>
  flow(
    [
      node('start', 'start'),
      agent('writer'),
      node('d', 'decider', decider),
      agent('a'),
      agent('b'),
      agent('c'),
      node('end', 'end'),
    ],
    [
      edge('start', 'writer'),
      edge('writer', 'd'),
      edge('d', 'a', 'handover', { description: 'for drafts' }, 'to-a'),
      edge('d', 'b', 'handover', { description: 'for reviews' }, 'to-b'),
      edge('d', 'c', 'handover', undefined, 'to-c'),
      edge('a', 'end'),
      edge('b', 'end'),
      edge('c', 'end'),
    ],
    script,
  );
const chosen = (events: { type: string }[]) =>
  events.filter((e) => e.type === 'decision').map((e) => e as unknown as { choice: unknown; reason: string });

describe('decider: rules', () => {
  const rules = [
    {
      when: { path: 'last.content', op: 'contains', value: 'URGENT', ignoreCase: true },
      to: 'to-c',
      reason: 'urgent',
    },
    { when: { path: 'last.content', op: 'regex', value: '^v[0-9]+\\.[0-9]+$' }, to: 'b', reason: 'version' },
    { when: { path: 'last.json.score', op: 'gte', value: 8 }, to: 'to-a', reason: 'good score' },
    {
      when: {
        all: [
          { path: 'state.mode', op: 'eq', value: 'x' },
          { path: 'counters.turns', op: 'gt', value: 0 },
        ],
      },
      to: 'to-b',
    },
  ];
  const cases: Array<[string, unknown, string, string]> = [
    ['contains (ignoreCase)', { text: 'this is urgent!' }, 'to-c', 'urgent'],
    ['regex', { text: 'v1.2' }, 'to-b', 'version'],
    ['JSON path compare', { json: { score: 9 } }, 'to-a', 'good score'],
    ['default', { text: 'meh' }, 'to-a', 'default'],
  ];
  for (const [what, reply, edgeId, reason] of cases) {
    it(`first matching rule wins: ${what}`, async () => {
      const f = routed({ strategy: 'rules', rules, default: 'to-a' }, [
        { node: 'writer', ...(reply as object) },
        { fallback: true, text: 'ok' },
      ]);
      const { events, result } = await collectRun(f, 'x');
      expect(result.status).toBe('completed');
      expect(chosen(events)).toEqual([expect.objectContaining({ choice: edgeId, reason })]);
      expect(events.find((e) => e.type === 'handover' && e.nodeId === 'd')).toMatchObject({ edgeId });
    });
  }

  it('a catastrophic regex from a flow is refused, not run', async () => {
    const f = routed(
      {
        strategy: 'rules',
        rules: [{ when: { path: 'last.content', op: 'regex', value: '(a+)+$' }, to: 'to-a' }],
        default: 'to-b',
      },
      [
        { node: 'writer', text: `${'a'.repeat(40)}!` },
        { fallback: true, text: 'ok' },
      ],
    );
    const { result } = await collectRun(f, 'x');
    expect(result.status).toBe('failed');
    expect(result.error?.message).toContain('nests quantifiers');
  });
});

describe('decider: roundRobin and llm', () => {
  it('roundRobin cycles its edges across visits', async () => {
    const f = flow(
      [
        node('start', 'start'),
        node('d', 'decider', { strategy: 'roundRobin' }),
        agent('a'),
        agent('b'),
        node('t', 'team', { mode: 'handover', termination: { maxTurns: 99 } }),
      ],
      [
        edge('start', 'd'),
        edge('d', 'a', 'handover', undefined, 'x'),
        edge('d', 'b', 'handover', undefined, 'y'),
        edge('a', 'd'),
        edge('b', 'd'),
      ],
      [{ fallback: true, text: 'ok' }],
      { budgets: { maxSteps: 12 } },
    );
    // No end node: validation is off to test the decider alone; the step budget ends it.
    const { events } = await collectRun(f, 'x', { validate: false });
    expect(
      chosen(events)
        .map((d) => d.choice)
        .slice(0, 4),
    ).toEqual(['x', 'y', 'x', 'y']);
    expect(events.at(-2)).toMatchObject({ type: 'budget.exceeded', budget: 'steps', limit: 12 });
  });

  it('llm: candidates with descriptions, structured choice and reason; an invalid choice is re-asked; grantMic', async () => {
    const { factory, requests } = recordingModels();
    const f = routed({ strategy: 'llm', prompt: 'Route it.', grantMic: true }, [
      { node: 'writer', text: 'draft' },
      { node: 'd', json: { choice: 'to-z', reason: 'bad' } },
      { node: 'd', text: 'not even json' },
      { node: 'd', json: { choice: 'to-b', reason: 'needs review' } },
      { fallback: true, text: 'ok' },
    ]);
    const { events, result } = await collectRun(f, 'x', { models: factory });
    expect(result.status).toBe('completed');
    expect(chosen(events)).toEqual([expect.objectContaining({ choice: 'to-b', reason: 'needs review' })]);
    const first = requests.find((r) => r.nodeId === 'd')!;
    expect(first.messages[0]!.content).toContain('"to-a": to a (a role) — for drafts');
    expect(first.jsonSchema).toBe(true);
    expect(requests.filter((r) => r.nodeId === 'd')).toHaveLength(3);
    expect(events.filter((e) => e.type === 'log' && e.text.includes('invalid choice'))).toHaveLength(2);
    expect(events.find((e) => e.type === 'turn.completed' && e.nodeId === 'd')).toBeTruthy();
  });

  it('llm: gives up with invalid_choice after maxRetries', async () => {
    const f = routed({ strategy: 'llm', maxRetries: 1 }, [
      { node: 'writer', text: 'draft' },
      { node: 'd', json: { choice: 'nope', reason: '' }, repeat: true },
    ]);
    const { result } = await collectRun(f, 'x');
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('invalid_choice');
  });
});
