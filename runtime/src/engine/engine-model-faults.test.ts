/**
 * Model faults, each against a real local HTTP server misbehaving that way (the fake
 * OpenAI-compatible server), through a whole run: an endless stream is bounded by the call's
 * total deadline; what cannot succeed is sent once (one retry budget, not the provider's times
 * the agent's); every one of 100 tool calls in a reply is run or refused with an event; a body
 * that is not JSON is named as such.
 */
import type { Flow } from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeOpenAIProvider } from '../models/openai.js';
import { type FakeOpenAIServer, startFakeOpenAIServer } from '../models/testing/fake-openai-server.js';
import type { ModelError } from '../models/types.js';
import { agent, collectRun, edge, flow, MemoryToolHost, node } from './testing/index.js';

// A server per test: a step one test left unconsumed must not reach the next.
let fake: FakeOpenAIServer;
beforeEach(async () => {
  fake = await startFakeOpenAIServer();
});
afterEach(() => fake.close());

function oneAgent(model: Record<string, unknown> = {}, extra: Partial<Flow> = {}, a = agent('a')): Flow {
  return flow([node('start', 'start'), a, node('end', 'end')], [edge('start', 'a'), edge('a', 'end')], [], {
    models: { default: { provider: 'openai', model: 'fake', baseURL: fake.url, ...model } },
    ...extra,
  });
}

const run = (f: Flow, options: Parameters<typeof collectRun>[2] = {}) =>
  collectRun(f, 'go', { allowLocalModels: true, ...options });

describe('model faults through a run', () => {
  it('an endless stream ends at the total deadline, named model_deadline, with no retry', async () => {
    fake.enqueue({ fault: 'endless', times: 5 });
    const t0 = Date.now();
    const { result, events } = await run(oneAgent({ deadlineMs: 700, timeoutMs: 5_000 }));
    const took = Date.now() - t0;
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('model_deadline');
    expect(result.error?.message).toContain('deadline of 700 ms (models.default.deadlineMs');
    expect(took).toBeLessThan(5_000);
    expect(fake.requests).toHaveLength(1);
    // It did stream: the deltas before the deadline were shown.
    expect(events.filter((e) => e.type === 'model.delta').length).toBeGreaterThan(3);
  });

  it.each([
    [401, 'model_auth'],
    [403, 'model_auth'],
    [400, 'model_bad_request'],
    [404, 'model_not_found'],
  ])('%i is sent once in all: neither the transport nor the agent retries it', async (status, code) => {
    fake.enqueue({ fault: 'status', status, times: 10 });
    const { result, events } = await run(oneAgent({}, {}, agent('a', { retries: 3 })));
    expect(result.error?.code).toBe(code);
    expect(fake.requests).toHaveLength(1);
    expect(
      events.some((e) => e.type === 'model.retry' || (e.type === 'log' && e.text.includes('retrying'))),
    ).toBe(false);
  });

  it('a refusal is not retried', async () => {
    fake.enqueue({ fault: 'refusal', times: 10 });
    const { result } = await run(oneAgent());
    expect(result.error?.code).toBe('model_refused');
    expect(result.error?.message).toContain('the model refused: I cannot help with that.');
    expect(fake.requests).toHaveLength(1);
  });

  it("a dead endpoint costs the model's one budget (1 + maxRetries), not the agent's retries times it", async () => {
    fake.enqueue({ fault: 'status', status: 503, retryAfter: '0', times: 20 });
    const { result } = await run(oneAgent({ maxRetries: 2 }, {}, agent('a', { retries: 2 })));
    expect(result.error?.code).toBe('model_server_error');
    expect(fake.requests).toHaveLength(3);
  });

  it('a body that is not JSON is named as such, streamed (a run) or not (the provider)', async () => {
    fake.enqueue({ fault: 'malformed', times: 10 });
    const { result } = await run(oneAgent({ maxRetries: 0 }));
    expect(result.error?.code).toBe('model_bad_response');
    expect(result.error?.message).toContain('the body was not JSON');
    expect(result.error?.message).not.toContain('carried no choices');

    const provider = makeOpenAIProvider(
      'default',
      { provider: 'openai', model: 'fake', baseURL: fake.url, maxRetries: 0 },
      { resolveEnv: () => undefined },
      { allowLocalEndpoints: true },
    );
    const err = await provider
      .complete({
        nodeId: 'a',
        messages: [{ role: 'user', content: 'hi' }],
        signal: new AbortController().signal,
      })
      .then(
        () => undefined,
        (e: unknown) => e as ModelError,
      );
    expect(err?.code).toBe('bad_response');
    expect(err?.message).toContain('the body was not JSON');
  });

  describe('a reply with 100 tool calls: each is run or refused, with an event that says why', () => {
    const calls = Array.from({ length: 100 }, (_, i) => ({ id: `c${i}`, name: 'ping', arguments: { n: i } }));
    const perCall = (events: { type: string }[]) => {
      const byId = new Map<string, string[]>();
      for (const e of events as unknown as Array<{ type: string; callId?: string; error?: string }>)
        if ((e.type === 'tool.called' || e.type === 'tool.refused' || e.type === 'tool.denied') && e.callId)
          byId.set(e.callId, [...(byId.get(e.callId) ?? []), e.error ? `${e.type}:${e.error}` : e.type]);
      return byId;
    };

    it('an agent with the tool: the per-turn cap runs 32, and refuses 68 with tool.refused (over_tool_call_cap)', async () => {
      fake.enqueue({ reply: { toolCalls: calls } }, { reply: { text: 'done' } });
      const f = oneAgent({}, { mcpServers: { net: { builtin: 'documents' } } });
      f.nodes.push(node('t', 'tool', { server: 'net' }));
      f.edges.push(edge('t', 'a', 'tools'));
      const host = new MemoryToolHost(f, { net: { ping: { run: () => 'pong' } } });
      const { result, events } = await run(f, { tools: host });
      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      const byId = perCall(events);
      expect(byId.size).toBe(100);
      const kinds = [...byId.values()].map((v) => v.join(','));
      expect(kinds.filter((k) => k === 'tool.called')).toHaveLength(32);
      expect(kinds.filter((k) => k === 'tool.refused:over_tool_call_cap')).toHaveLength(68);
      expect(host.calls).toHaveLength(32);
    });

    it('an agent without tools: 100 tool.refused (no_tools)', async () => {
      fake.enqueue({ reply: { toolCalls: calls } }, { reply: { text: 'done' } });
      const { result, events } = await run(oneAgent());
      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      const byId = perCall(events);
      expect(byId.size).toBe(100);
      expect(new Set([...byId.values()].map((v) => v.join(',')))).toEqual(new Set(['tool.refused:no_tools']));
    });
  });
});
