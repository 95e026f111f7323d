import type { RunEvent } from '@switchboard/schemas';
import { resolveModelRequests } from '@switchboard/schemas/core';
import { describe, expect, it } from 'vitest';
import { toOpenAIMessages } from '../models/openai.js';
import { startFakeOpenAIServer } from '../models/testing/fake-openai-server.js';
import { agent, chain, collectRun, edge, flow, node, recordingModels } from './testing/index.js';

type Req = Extract<RunEvent, { type: 'model.request' }>;
const requestsOf = (events: readonly RunEvent[]) =>
  events.filter((e): e is Req => e.type === 'model.request');
const bytes = (events: readonly RunEvent[]) => events.reduce((n, e) => n + JSON.stringify(e).length + 1, 0);

/** What the provider received, as the resolver gives it back (no undefined fields). */
function plain(messages: readonly object[]): unknown[] {
  return JSON.parse(JSON.stringify(messages));
}

/** A two-agent group chat of `turns` turns with long replies and long system prompts. */
function conversation(turns: number) {
  const long = (who: string) => `${who}: ${'a considered paragraph about the subject at hand, '.repeat(6)}`;
  const prompt = (id: string) => [
    {
      text: `You are ${id}. ${'Keep to the point, cite what you rely on, and be brief. '.repeat(4)}Task: {{task}}`,
    },
  ];
  return flow(
    [
      node('start', 'start'),
      node('room', 'team', {
        mode: 'groupChat',
        speaker: { strategy: 'roundRobin' },
        termination: { maxTurns: turns },
      }),
      agent('alice', { prompt: prompt('alice') }, { parent: 'room' }),
      agent('bob', { prompt: prompt('bob') }, { parent: 'room' }),
      node('end', 'end'),
    ],
    [edge('start', 'room'), edge('room', 'end')],
    [
      { node: 'alice', fallback: true, text: long('alice') },
      { node: 'bob', fallback: true, text: long('bob') },
    ],
  );
}

describe('model.request events', () => {
  it('record every call before it is made, resolving to exactly the messages the provider received', async () => {
    const { factory, requests } = recordingModels();
    const { events, result } = await collectRun(chain(6), 'go', { models: factory });
    expect(result.status).toBe('completed');
    const reqs = requestsOf(events);
    expect(reqs).toHaveLength(6);
    // Before the call: each request precedes its node's model.completed.
    for (const r of reqs) {
      const done = events.find((e) => e.type === 'model.completed' && e.nodeId === r.nodeId)!;
      expect(r.seq).toBeLessThan(done.seq);
      expect(r).toMatchObject({
        turn: expect.any(Number),
        attempt: 1,
        call: 1,
        model: 'default',
        provider: 'scripted',
      });
    }
    const resolved = resolveModelRequests(events);
    expect(resolved.map((r) => plain(r.messages))).toEqual(requests.map((r) => plain(r.messages)));
    // The later agents' histories are references to the one before them, not copies.
    expect(reqs.at(-1)!.messages.some((m) => 'ref' in m)).toBe(true);
  });

  it('a 100-turn conversation writes its history once (log bytes with and without dedup)', async () => {
    const { factory, requests } = recordingModels();
    const { events, result } = await collectRun(conversation(100), 'discuss the plan', { models: factory });
    expect(result.status).toBe('completed');
    const resolved = resolveModelRequests(events);
    expect(resolved).toHaveLength(100);
    expect(resolved.map((r) => plain(r.messages))).toEqual(requests.map((r) => plain(r.messages)));
    expect(resolved.some((r) => r.messages.some((m) => m.missing))).toBe(false);

    // Without dedup: every request carries its full messages.
    const expanded = events.map((e) => {
      if (e.type !== 'model.request') return e;
      const r = resolved.find((x) => x.seq === e.seq)!;
      return { ...e, messages: r.messages };
    }) as RunEvent[];
    const withoutRequests = events.filter((e) => e.type !== 'model.request');
    const perTurn = {
      withoutRequests: Math.round(bytes(withoutRequests) / 100),
      dedup: Math.round(bytes(events) / 100),
      noDedup: Math.round(bytes(expanded) / 100),
      requestDedup: Math.round(bytes(requestsOf(events)) / 100),
      requestNoDedup: Math.round(bytes(requestsOf(expanded)) / 100),
    };
    console.log(`100-turn conversation, log bytes per turn: ${JSON.stringify(perTurn)}`);
    // Linear, not quadratic: the requests at most double the log; written out they would dominate it.
    expect(perTurn.dedup).toBeLessThan(2 * perTurn.withoutRequests);
    expect(perTurn.requestNoDedup).toBeGreaterThan(20 * perTurn.requestDedup);
  });

  it('a chain of 100 logs at most twice what it logged without requests', async () => {
    const { events } = await collectRun(chain(100), 'go');
    const before = bytes(events.filter((e) => e.type !== 'model.request'));
    const after = bytes(events);
    console.log(
      `chain of 100: ${before} bytes without model.request, ${after} with (${(after / before).toFixed(2)}x)`,
    );
    expect(after).toBeLessThanOrEqual(2 * before);
  });

  it('counts attempts and calls: a retried turn is attempt 2; a tool round is call 2', async () => {
    const f = flow(
      [node('start', 'start'), agent('a', { retries: 1 }), node('end', 'end')],
      [edge('start', 'a'), edge('a', 'end')],
      [
        { node: 'a', error: { code: 'server_error', message: 'no' } },
        { node: 'a', text: 'fine' },
      ],
    );
    const { events, result } = await collectRun(f, 'x');
    expect(result.status).toBe('completed');
    expect(requestsOf(events).map((r) => [r.attempt, r.call])).toEqual([
      [1, 1],
      [2, 1],
    ]);
  });

  it('replaces the value of every ${env:…} the flow names by a marker; the provider still gets it', async () => {
    const secret = 'sk-test-0123456789abcdef';
    const { factory, requests } = recordingModels();
    const f = flow(
      [
        node('start', 'start'),
        agent('a', { prompt: [{ text: 'Key: ${env:SB_TEST_SECRET}. Task: {{task}}' }] }),
        node('end', 'end'),
      ],
      [edge('start', 'a'), edge('a', 'end')],
      [{ fallback: true, text: 'ok' }],
    );
    // The secret's one legitimate place, where it is resolved; it also reaches the prompt through the task.
    f.models.default = { ...f.models.default!, apiKey: '${env:SB_TEST_SECRET}' };
    const { events, result } = await collectRun(f, `use ${secret} to log in`, {
      models: factory,
      env: { SB_TEST_SECRET: secret },
      validate: false,
    });
    expect(result.status).toBe('completed');
    const req = requestsOf(events)[0]!;
    expect(JSON.stringify(req)).not.toContain(secret);
    expect(JSON.stringify(requestsOf(events))).not.toContain(secret);
    expect(req.redacted).toEqual(['SB_TEST_SECRET']);
    const sent = resolveModelRequests(events)[0]!.messages;
    expect(sent.some((m) => m.content.includes('use [redacted:SB_TEST_SECRET] to log in'))).toBe(true);
    // What went to the provider is unchanged.
    expect(requests[0]!.messages.some((m) => m.content.includes(secret))).toBe(true);
  });

  it('a provider asking again with a correction records that call too, as the endpoint received it', async () => {
    const fake = await startFakeOpenAIServer({
      replies: [
        { when: { system: 'You are a' }, reply: [{ text: 'not json at all' }, { text: '{"ok":true}' }] },
      ],
    });
    try {
      const f = flow(
        [
          node('start', 'start'),
          agent('a', { output: { type: 'json', schema: { type: 'object' } } }),
          node('end', 'end'),
        ],
        [edge('start', 'a'), edge('a', 'end')],
      );
      f.models.default = { provider: 'openai', model: 'm', baseURL: fake.url };
      const { events, result } = await collectRun(f, 'go', { allowLocalModels: true });
      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      const resolved = resolveModelRequests(events);
      expect(resolved.map((r) => r.call)).toEqual([1, 2]);
      const received = fake.requests.filter((r) => r.served === 'reply').map((r) => r.body!.messages);
      expect(received).toHaveLength(2);
      expect(
        resolved.map((r) => toOpenAIMessages(r.messages as Parameters<typeof toOpenAIMessages>[0])),
      ).toEqual(received);
    } finally {
      await fake.close();
    }
  });
});
