import { describe, expect, it } from 'vitest';
import { defaultModelFactory } from '../models/factory.js';
import type { ModelFactory } from '../models/types.js';
import { agent, collectRun, edge, flow, node, recordingModels, trace } from './testing/index.js';

const speakers = (events: { type: string; nodeId?: string }[]) =>
  events.filter((e) => e.type === 'message' && e.nodeId).map((e) => e.nodeId);

describe('team: handover mode', () => {
  it('an agent with several handovers chooses through generated handover tools', async () => {
    const { factory, requests } = recordingModels();
    const f = flow(
      [node('start', 'start'), agent('triage'), agent('billing'), agent('tech'), node('end', 'end')],
      [
        edge('start', 'triage'),
        edge('triage', 'billing', 'handover', { description: 'Money questions' }),
        edge('triage', 'tech'),
        edge('billing', 'end'),
        edge('tech', 'end'),
      ],
      [
        {
          node: 'triage',
          text: 'this is technical',
          toolCalls: [{ name: 'handover_to_tech', args: { note: 'printer on fire' } }],
        },
        { node: 'tech', text: 'fixed' },
      ],
    );
    const { result, events } = await collectRun(f, 'help', { models: factory });
    expect(result.output).toBe('fixed');
    expect(requests[0]!.tools).toEqual(['handover_to_billing', 'handover_to_tech']);
    expect(events.find((e) => e.type === 'handover' && e.nodeId === 'triage')).toMatchObject({
      edgeId: 'triage-tech',
      to: 'tech',
    });
    expect(requests[1]!.messages.at(-1)!.content).toBe('printer on fire');
    expect(speakers(events)).toEqual(['triage', 'tech']);
  });

  it('a team runs its members by handover and its result leaves along its own edge; nested teams', async () => {
    const f = flow(
      [
        node('start', 'start'),
        node('outer', 'team', { mode: 'handover' }),
        agent('planner', {}, { parent: 'outer' }),
        node('inner', 'team', { mode: 'handover' }, { parent: 'outer' }),
        agent('w1', {}, { parent: 'inner' }),
        agent('w2', {}, { parent: 'inner' }),
        agent('after'),
        node('end', 'end'),
      ],
      [
        edge('start', 'outer'),
        edge('planner', 'inner'),
        edge('w1', 'w2'),
        edge('outer', 'after'),
        edge('after', 'end'),
      ],
      [{ fallback: true, text: 'ok' }],
    );
    const { events, result } = await collectRun(f, 'go');
    expect(result.status).toBe('completed');
    expect(
      trace(events, ['node.started', 'node.completed']).filter((x) => x !== 'node.started@start'),
    ).toEqual([
      'node.completed@start',
      'node.started@outer',
      'node.started@planner',
      'node.completed@planner',
      'node.started@inner',
      'node.started@w1',
      'node.completed@w1',
      'node.started@w2',
      'node.completed@w2',
      'node.completed@inner',
      'node.completed@outer',
      'node.started@after',
      'node.completed@after',
      'node.started@end',
      'node.completed@end',
    ]);
  });
});

describe('team: groupChat', () => {
  const chat = (
    speaker: Record<string, unknown>,
    extraNodes: ReturnType<typeof node>[] = [],
    extraEdges: ReturnType<typeof edge>[] = [],
    termination: Record<string, unknown> = { maxTurns: 4 },
    script: unknown[] = [{ fallback: true, text: 'hi' }],
  ) =>
    flow(
      [
        node('start', 'start'),
        node('room', 'team', { mode: 'groupChat', speaker, termination }),
        agent('alice', { role: 'writes' }, { parent: 'room' }),
        agent('bob', { role: 'reviews' }, { parent: 'room' }),
        ...extraNodes,
        node('end', 'end'),
      ],
      [edge('start', 'room'), edge('room', 'end'), ...extraEdges],
      script,
    );

  it('round robin until maxTurns', async () => {
    const { events, result } = await collectRun(chat({ strategy: 'roundRobin' }), 'talk');
    expect(result.status).toBe('completed');
    expect(speakers(events)).toEqual(['alice', 'bob', 'alice', 'bob']);
    expect(events.filter((e) => e.type === 'decision' && e.nodeId === 'room')).toHaveLength(4);
  });

  it('an LLM manager reads the roles and picks; an invalid pick is re-asked; done ends', async () => {
    const { factory, requests } = recordingModels();
    const f = chat({ strategy: 'llm', model: 'default' }, [], [], { maxTurns: 10 }, [
      { node: 'room', json: { speaker: 'bob', reason: 'review first' } },
      { node: 'room', json: { speaker: 'carol', reason: 'who?' } },
      { node: 'room', json: { speaker: 'alice', reason: 'now write' } },
      { node: 'room', json: { speaker: 'done', reason: 'finished' } },
      { fallback: true, text: 'hi' },
    ]);
    const { events, result } = await collectRun(f, 'talk', { models: factory });
    expect(result.status).toBe('completed');
    expect(speakers(events)).toEqual(['bob', 'alice']);
    expect(requests[0]!.messages[0]!.content).toContain('alice: alice — writes');
    const decisions = events
      .filter((e) => e.type === 'decision')
      .map((e) => (e as { choice: unknown }).choice);
    expect(decisions).toEqual(['bob', 'alice', 'done']);
    expect(events.filter((e) => e.type === 'turn.completed' && e.nodeId === 'room').length).toBe(3);
  });

  it('a decider member picks the speaker; termination by phrase', async () => {
    const f = chat(
      { strategy: 'decider', decider: 'mod' },
      [
        node(
          'mod',
          'decider',
          {
            strategy: 'rules',
            rules: [{ when: { path: 'last.author', op: 'eq', value: 'alice' }, to: 'bob' }],
            default: 'alice',
          },
          { parent: 'room' },
        ),
      ],
      [
        edge('mod', 'alice', 'handover', undefined, 'to-alice'),
        edge('mod', 'bob', 'handover', undefined, 'to-bob'),
      ],
      { phrase: 'APPROVED', maxTurns: 20 },
      [
        { node: 'alice', text: 'draft 1' },
        { node: 'bob', text: 'fix it' },
        { node: 'alice', text: 'draft 2' },
        { node: 'bob', text: 'APPROVED' },
      ],
    );
    const { events, result } = await collectRun(f, 'talk');
    expect(result).toMatchObject({ status: 'completed', output: 'APPROVED' });
    expect(speakers(events)).toEqual(['alice', 'bob', 'alice', 'bob']);
    expect(
      events
        .filter((e) => e.type === 'decision' && e.nodeId === 'mod')
        .map((e) => (e as { choice: unknown }).choice),
    ).toEqual(['to-alice', 'to-bob', 'to-alice', 'to-bob']);
  });

  it('terminates on maxTokens and on timeout', async () => {
    const tok = chat({ strategy: 'roundRobin' }, [], [], { maxTokens: 25 }, [
      { fallback: true, text: 'hi', usage: { promptTokens: 10, completionTokens: 0 } },
    ]);
    const r1 = await collectRun(tok, 'x');
    expect(speakers(r1.events)).toHaveLength(3);
    // The run's clock is the test's: every reply takes 50 ms of it, whatever the machine's load.
    // No maxTurns: without the timeout the chat would go on until the step budget fails the run.
    let t = 1_000_000;
    const ticking: ModelFactory = (name, config, ctx) => {
      const inner = defaultModelFactory(name, config, ctx);
      return {
        scripted: inner.scripted,
        complete(req) {
          t += 50;
          return inner.complete(req);
        },
      };
    };
    const slow = chat({ strategy: 'roundRobin' }, [], [], { timeoutMs: 120 }, [
      { fallback: true, text: 'hi' },
    ]);
    const r2 = await collectRun(slow, 'x', { models: ticking, now: () => t });
    expect(r2.result.status).toBe('completed');
    // 50 and 100 ms are within the timeout, 150 ms is past it: the third turn is the last.
    expect(speakers(r2.events)).toEqual(['alice', 'bob', 'alice']);
    // The team's first word on its end names the reason: the timeout, not another limit.
    const said = r2.events.filter((e) => e.type === 'log' && e.nodeId === 'room');
    expect((said[0] as { text: string } | undefined)?.text).toBe('team room: timeout 120 ms');
    // On the real clock too: a reply far longer than the timeout (a loaded machine only makes
    // it longer) ends the chat after the first turn.
    const late = chat({ strategy: 'roundRobin' }, [], [], { timeoutMs: 20 }, [
      { fallback: true, text: 'hi', latencyMs: 300 },
    ]);
    const r3 = await collectRun(late, 'x');
    expect(r3.result.status).toBe('completed');
    expect(speakers(r3.events)).toEqual(['alice']);
    expect(r3.events.some((e) => e.type === 'log' && e.text === 'team room: timeout 20 ms')).toBe(true);
  });
});

describe('team: fsm', () => {
  const fsm = (script: unknown[], rules: unknown[], maxFailures = 2) =>
    flow(
      [
        node('start', 'start'),
        node('machine', 'team', { mode: 'fsm', entry: 'coder', decider: 'arbiter', maxFailures }),
        agent('coder', { retries: 0 }, { parent: 'machine' }),
        agent('tester', { retries: 0 }, { parent: 'machine' }),
        node('arbiter', 'decider', { strategy: 'rules', rules }, { parent: 'machine' }),
        node('human', 'human', { mode: 'ask', question: 'Coder is stuck: {{last}}' }),
        node('end', 'end'),
      ],
      [
        edge('start', 'machine'),
        edge('coder', 'tester', 'handover', undefined, 'c2t'),
        edge('tester', 'coder', 'handover', undefined, 't2c'),
        edge('coder', 'human', 'handover', { escalation: true }, 'esc'),
        edge('machine', 'end'),
        edge('human', 'end'),
      ],
      script,
    );

  it('the decider is the transition function; only drawn edges are legal; done ends', async () => {
    const rules = [
      { when: { path: 'last.content', op: 'contains', value: 'PASS' }, to: 'done' },
      // Illegal from coder (no coder→coder edge): skipped, the next rule applies.
      { when: { path: 'last.author', op: 'eq', value: 'coder' }, to: 'coder' },
      { when: { path: 'last.author', op: 'eq', value: 'coder' }, to: 'tester' },
      { when: { path: 'last.author', op: 'eq', value: 'tester' }, to: 't2c' },
    ];
    const f = fsm(
      [
        { node: 'coder', text: 'v1' },
        { node: 'tester', text: 'FAIL' },
        { node: 'coder', text: 'v2' },
        { node: 'tester', text: 'PASS' },
      ],
      rules,
    );
    const { events, result } = await collectRun(f, 'build it');
    expect(result).toMatchObject({ status: 'completed', output: 'PASS' });
    expect(speakers(events)).toEqual(['coder', 'tester', 'coder', 'tester']);
    expect(events.filter((e) => e.type === 'handover').map((e) => (e as { edgeId: string }).edgeId)).toEqual([
      'start-machine',
      'c2t',
      't2c',
      'c2t',
      'machine-end',
    ]);
  });

  it('counts failures per member and escalates along the escalation edge after maxFailures', async () => {
    const f = fsm(
      [{ node: 'coder', error: { code: 'server_error', message: 'down' }, repeat: 2 }],
      [{ when: { always: true }, to: 'tester' }],
      2,
    );
    const { events, result } = await collectRun(f, 'x', { answers: { human: 'ship it anyway' } });
    expect(result).toMatchObject({ status: 'completed', output: 'ship it anyway' });
    expect(events.filter((e) => e.type === 'node.failed' && e.nodeId === 'coder')).toHaveLength(2);
    expect(
      events.find((e) => e.type === 'handover' && (e as { edgeId: string }).edgeId === 'esc'),
    ).toBeTruthy();
    expect(events.find((e) => e.type === 'input.requested')).toMatchObject({
      nodeId: 'human',
      question: expect.stringContaining('Coder is stuck'),
    });
  });

  it('rules read failure counters', async () => {
    const rules = [
      {
        when: { path: 'counters.failures.coder', op: 'gte', value: 1 },
        to: 'done',
        reason: 'coder failed once',
      },
      { when: { always: true }, to: 'tester' },
    ];
    const f = fsm(
      [
        { node: 'coder', error: { code: 'server_error' } },
        { node: 'coder', text: 'ok now' },
      ],
      rules,
      3,
    );
    const { events, result } = await collectRun(f, 'x');
    expect(result.status).toBe('completed');
    expect(events.find((e) => e.type === 'decision')).toMatchObject({
      choice: 'done',
      reason: 'coder failed once',
    });
  });
});
