/**
 * The openai provider against a real local server that speaks chat completions (the SDK is not
 * mocked): streaming, tool calls, usage, structured output, every fault of the fake server, the
 * retry layers, cancellation and concurrency.
 */
import type { ModelConfigT } from '@switchboard/schemas';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SecretsPolicy } from '../net/secrets.js';
import { createOpenAIProvider, makeOpenAIProvider, type OpenAIProviderOptions } from './openai.js';
import { type FakeOpenAIServer, type FakeStep, startFakeOpenAIServer } from './testing/fake-openai-server.js';
import {
  type ChatMessage,
  ModelError,
  type ModelRequest,
  type ModelResponse,
  type ToolSpec,
} from './types.js';

let fake: FakeOpenAIServer;
beforeAll(async () => {
  fake = await startFakeOpenAIServer();
});
afterAll(async () => {
  await fake.close();
});
afterEach(() => {
  // Every test consumes exactly what it queued; leftovers would leak into the next test.
  expect(fake.pending()).toBe(0);
});

const env: Record<string, string> = { FAKE_KEY: 'sk-test-123' };
const ctx = {
  resolveEnv: (v: string | undefined) => v?.replace(/\$\{env:([A-Za-z0-9_]+)\}/g, (_, n) => env[n] ?? ''),
};

const FAST: OpenAIProviderOptions = {
  allowLocalEndpoints: true,
  timeoutMs: 1_500,
  retry: { baseDelayMs: 20, maxDelayMs: 100, maxRetryAfterMs: 3_000, maxRetries: 3 },
};

function provider(options: OpenAIProviderOptions = {}, config: Partial<ModelConfigT> = {}) {
  return makeOpenAIProvider(
    'default',
    { provider: 'openai', model: 'fake-model', baseURL: fake.url, ...config },
    ctx,
    { ...FAST, ...options },
  );
}

interface Outcome {
  response?: ModelResponse;
  error?: ModelError;
  deltas: string[];
  retries: Array<{ attempt: number; delayMs: number; cause: string }>;
  ms: number;
  requests: number;
}

async function call(
  p = provider(),
  extra: Partial<ModelRequest> & { stream?: boolean; text?: string } = {},
): Promise<Outcome> {
  const deltas: string[] = [];
  const retries: Outcome['retries'] = [];
  const before = fake.requests.length;
  const started = Date.now();
  const { stream = true, text = 'hello there', ...rest } = extra;
  const request: ModelRequest = {
    nodeId: 'writer',
    messages: [
      { role: 'system', content: 'You are a test.' },
      { role: 'user', content: text },
    ],
    signal: new AbortController().signal,
    onRetry: (info) => retries.push(info),
    ...(stream ? { onDelta: (d: string) => deltas.push(d) } : {}),
    ...rest,
  };
  try {
    const response = await p.complete(request);
    return { response, deltas, retries, ms: Date.now() - started, requests: fake.requests.length - before };
  } catch (err) {
    if (!(err instanceof ModelError)) throw err;
    return { error: err, deltas, retries, ms: Date.now() - started, requests: fake.requests.length - before };
  }
}

const tools: ToolSpec[] = [
  {
    name: 'lookup',
    description: 'Look something up',
    parameters: { type: 'object', properties: { query: { type: 'string' } } },
  },
  { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: {} } },
];

describe('openai provider: normal answers', () => {
  it('streams text, reports usage and the model', async () => {
    fake.enqueue({ reply: { text: 'The quick brown fox jumps over the lazy dog.' } });
    const out = await call();
    expect(out.response?.text).toBe('The quick brown fox jumps over the lazy dog.');
    expect(out.deltas.length).toBeGreaterThan(3);
    expect(out.deltas.join('')).toBe(out.response?.text);
    expect(out.response?.usage.promptTokens).toBeGreaterThan(0);
    expect(out.response?.usage.completionTokens).toBe(10); // 9 words and a full stop
    expect(out.response).toMatchObject({ finishReason: 'stop', model: 'fake-model', toolCalls: [] });
    const sent = fake.requests.at(-1)!;
    expect(sent.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
      model: 'fake-model',
    });
  });

  it('answers without streaming when there is no onDelta', async () => {
    fake.enqueue({ reply: { text: 'whole answer' } });
    const out = await call(undefined, { stream: false });
    expect(out.response?.text).toBe('whole answer');
    expect(fake.requests.at(-1)!.body?.stream).toBeUndefined();
  });

  it('assembles streamed tool calls, in both delta styles and without streaming', async () => {
    const calls = [
      { name: 'lookup', arguments: { query: 'weather in Oslo', limit: 3 } },
      { name: 'get_weather', arguments: {} },
    ];
    for (const [style, stream] of [
      ['openai', true],
      ['minimal', true],
      ['openai', false],
    ] as const) {
      fake.enqueue({ reply: { text: 'Let me check.', toolCalls: calls, toolCallStyle: style } });
      const out = await call(undefined, { tools, stream });
      expect(out.response?.finishReason).toBe('tool_calls');
      expect(out.response?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
        ['lookup', { query: 'weather in Oslo', limit: 3 }],
        ['get_weather', {}],
      ]);
      expect(out.response?.toolCalls.every((c) => c.id.length > 0)).toBe(true);
    }
    const body = fake.requests.at(-1)!.body!;
    expect(body.tools?.map((t) => t.function.name)).toEqual(['lookup', 'get_weather']);
  });

  it('sends tool results, names and structured-output requests in the OpenAI shape', async () => {
    fake.enqueue({ reply: { text: '{"answer": 42}' } });
    const messages: ChatMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'q', name: 'team.lead:1' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"query":"x"}' }],
      },
      { role: 'tool', toolCallId: 'call_1', content: 'result text' },
    ];
    const out = await call(undefined, {
      messages,
      jsonSchema: { name: 'answer schema', schema: { type: 'object' } },
    });
    expect(out.response?.text).toBe('{"answer": 42}');
    const body = fake.requests.at(-1)!.body!;
    expect(body.messages).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'q', name: 'team_lead_1' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"query":"x"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'result text' },
    ]);
    expect(body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'answer_schema', schema: { type: 'object' } },
    });
  });

  it('sends the key resolved from ${env:…} where the operator bound it, and a placeholder when there is none', async () => {
    fake.enqueue({ reply: { text: 'a' } }, { reply: { text: 'b' } });
    const bound = { ...ctx, secrets: new SecretsPolicy([['FAKE_KEY', [new URL(fake.url).host]]]) };
    const config = {
      provider: 'openai',
      model: 'fake-model',
      baseURL: fake.url,
      apiKey: '${env:FAKE_KEY}',
    } as const;
    await call(makeOpenAIProvider('default', config, bound, FAST));
    expect(fake.requests.at(-1)!.headers.authorization).toBe('Bearer sk-test-123');
    await call(provider());
    expect(fake.requests.at(-1)!.headers.authorization).toMatch(/^Bearer \S+/);
  });

  it('refuses a key the operator did not bind to this endpoint before any request, naming it and the host', async () => {
    const before = fake.requests.length;
    const host = new URL(fake.url).host;
    expect(() => provider({}, { apiKey: '${env:FAKE_KEY}' })).toThrow(
      `models.default.apiKey: the operator does not let flows use the environment variable FAKE_KEY (it would go to ${host})`,
    );
    const elsewhere = { ...ctx, secrets: new SecretsPolicy([['FAKE_KEY', ['api.example.com']]]) };
    let err: unknown;
    try {
      makeOpenAIProvider(
        'default',
        { provider: 'openai', baseURL: fake.url, apiKey: '${env:FAKE_KEY}' },
        elsewhere,
        FAST,
      );
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'secret_refused' });
    expect((err as Error).message).toContain(
      `FAKE_KEY may not be sent to ${host}; the operator binds it to api.example.com`,
    );
    expect((err as Error).message).not.toContain('sk-test-123');
    expect(fake.requests.length).toBe(before);
  });

  it('takes every secret value out of what an endpoint echoes (an error body, an answer)', async () => {
    fake.enqueue(
      {
        fault: 'status',
        status: 400,
        body: JSON.stringify({ error: { message: 'bad key Bearer sk-test-123 given' } }),
      },
      { reply: { text: 'your key is sk-test-123' } },
    );
    const bound = { ...ctx, secrets: new SecretsPolicy([['FAKE_KEY', [new URL(fake.url).host]]]) };
    const p = makeOpenAIProvider(
      'default',
      { provider: 'openai', model: 'fake-model', baseURL: fake.url, apiKey: '${env:FAKE_KEY}' },
      bound,
      FAST,
    );
    const failed = await call(p);
    expect(failed.error?.message).toContain('[secret FAKE_KEY]');
    expect(JSON.stringify(failed)).not.toContain('sk-test-123');
    const echoed = await call(p);
    expect(echoed.response?.text).toBe('your key is [secret FAKE_KEY]');
    expect(echoed.deltas.join('')).not.toContain('sk-test-123');
  });
});

describe('openai provider: outbound policy', () => {
  it('refuses a loopback endpoint unless the operator allowed local models', async () => {
    const p = makeOpenAIProvider('default', { provider: 'openai', baseURL: fake.url }, ctx, {});
    const out = await call(p);
    expect(out.error).toMatchObject({ code: 'outbound_refused', attempts: 1 });
    expect(out.error?.message).toMatch(/loopback/);
    expect(out.requests).toBe(0);
  });

  it('createOpenAIProvider allows it through the context flag or SWITCHBOARD_ALLOW_LOCAL_MODELS', async () => {
    const config: ModelConfigT = { provider: 'openai', model: 'm', baseURL: fake.url, maxRetries: 0 };
    fake.enqueue({ reply: { text: 'via ctx' } }, { reply: { text: 'via env' } });
    const viaCtx = await call(createOpenAIProvider('default', config, { ...ctx, allowLocalEndpoints: true }));
    expect(viaCtx.response?.text).toBe('via ctx');
    env.SWITCHBOARD_ALLOW_LOCAL_MODELS = '1';
    try {
      const viaEnv = await call(createOpenAIProvider('default', config, ctx));
      expect(viaEnv.response?.text).toBe('via env');
    } finally {
      delete env.SWITCHBOARD_ALLOW_LOCAL_MODELS;
    }
    const refused = await call(createOpenAIProvider('default', config, ctx));
    expect(refused.error?.code).toBe('outbound_refused');
  });

  it('rejects a baseURL that is not http(s) when the provider is made', () => {
    expect(() => makeOpenAIProvider('m', { provider: 'openai', baseURL: 'file:///etc' }, ctx)).toThrow(
      /models\.m\.baseURL/,
    );
  });
});

/** A fault scenario: what the server does, and the defined state the call must end in. */
interface Scenario {
  name: string;
  steps: FakeStep[];
  options?: OpenAIProviderOptions;
  stream?: boolean;
  request?: Partial<ModelRequest>;
  expect:
    | { ok: true; text?: string | RegExp; retries: number; finishReason?: string; minMs?: number }
    | { ok: false; code: ModelError['code']; attempts: number; maxMs?: number; cause?: RegExp };
}

const httpDate = () => new Date(Date.now() + 1_500).toUTCString();

const SCENARIOS: Scenario[] = [
  {
    name: '429 with Retry-After 0.5 s',
    steps: [{ fault: 'status', status: 429, retryAfter: '0.5' }],
    expect: { ok: true, text: /^echo:/, retries: 1, minMs: 450 },
  },
  {
    name: '429 with Retry-After 2 s',
    steps: [{ fault: 'status', status: 429, retryAfter: '2' }],
    expect: { ok: true, retries: 1, minMs: 1_900 },
  },
  {
    name: '429 with Retry-After 120 s fails fast (over the cap)',
    steps: [{ fault: 'status', status: 429, retryAfter: '120' }],
    expect: { ok: false, code: 'rate_limited', attempts: 1, maxMs: 2_000, cause: /429/ },
  },
  {
    name: '429 with Retry-After as an HTTP date',
    steps: [{ fault: 'status', status: 429, retryAfter: 'DATE' }],
    expect: { ok: true, retries: 1, minMs: 1 },
  },
  {
    name: '429 with retry-after-ms',
    steps: [{ fault: 'status', status: 429, retryAfterMs: '150' }],
    expect: { ok: true, retries: 1, minMs: 140 },
  },
  { name: '500', steps: [{ fault: 'status', status: 500 }], expect: { ok: true, retries: 1 } },
  { name: '502', steps: [{ fault: 'status', status: 502 }], expect: { ok: true, retries: 1 } },
  {
    name: '503 until the budget is spent',
    steps: [{ fault: 'status', status: 503, times: 4 }],
    expect: { ok: false, code: 'server_error', attempts: 4, cause: /503/ },
  },
  { name: '408', steps: [{ fault: 'status', status: 408 }], expect: { ok: true, retries: 1 } },
  {
    name: '401 is not retried',
    steps: [{ fault: 'status', status: 401 }],
    expect: { ok: false, code: 'auth', attempts: 1 },
  },
  {
    name: '400 is not retried',
    steps: [{ fault: 'status', status: 400 }],
    expect: { ok: false, code: 'bad_request', attempts: 1 },
  },
  { name: 'connection reset before headers', steps: [{ fault: 'reset' }], expect: { ok: true, retries: 1 } },
  {
    name: 'connection reset every time',
    steps: [{ fault: 'reset', times: 4 }],
    expect: { ok: false, code: 'network', attempts: 4 },
  },
  {
    name: 'slow headers within the timeout',
    steps: [{ fault: 'slowHeaders', delayMs: 300 }],
    expect: { ok: true, retries: 0 },
  },
  {
    name: 'slow headers past the timeout',
    steps: [{ fault: 'slowHeaders', delayMs: 4_000 }],
    options: { timeoutMs: 500 },
    expect: { ok: true, retries: 1 },
  },
  {
    name: 'a server that hangs',
    steps: [{ fault: 'hang', times: 4 }],
    options: { timeoutMs: 400 },
    expect: { ok: false, code: 'timeout', attempts: 4, maxMs: 8_000 },
  },
  {
    name: 'stream cut mid-text is not silently retried',
    steps: [{ fault: 'cutText' }],
    expect: { ok: false, code: 'stream_interrupted', attempts: 1 },
  },
  {
    name: 'body cut without streaming is retried',
    steps: [{ fault: 'cutText' }],
    stream: false,
    expect: { ok: true, retries: 1 },
  },
  {
    name: 'stream cut mid-tool-call arguments (nothing shown yet) is retried',
    steps: [{ fault: 'cutToolArgs' }],
    expect: { ok: true, retries: 1 },
  },
  { name: 'invalid SSE JSON', steps: [{ fault: 'invalidSseJson' }], expect: { ok: true, retries: 1 } },
  {
    name: 'invalid JSON without streaming',
    steps: [{ fault: 'invalidSseJson' }],
    stream: false,
    expect: { ok: true, retries: 1 },
  },
  { name: 'an SSE error event', steps: [{ fault: 'sseError' }], expect: { ok: true, retries: 1 } },
  {
    name: 'SSE error events every time',
    steps: [{ fault: 'sseError', message: 'model overloaded', times: 4 }],
    expect: { ok: false, code: 'server_error', attempts: 4, cause: /overloaded/ },
  },
  {
    name: 'a missing [DONE] terminator after a complete answer',
    steps: [{ fault: 'noDone', answer: { text: 'complete anyway' } }],
    expect: { ok: true, text: 'complete anyway', retries: 0 },
  },
  {
    name: 'finish_reason length on text',
    steps: [{ fault: 'length', text: 'cut by the limit' }],
    expect: { ok: true, text: 'cut by the limit', finishReason: 'length', retries: 0 },
  },
  {
    name: 'finish_reason length on structured output',
    steps: [{ fault: 'length', text: '{"a": [1, 2' }],
    request: { jsonSchema: { name: 'x', schema: { type: 'object' } } },
    expect: { ok: false, code: 'length', attempts: 1 },
  },
  { name: 'empty choices', steps: [{ fault: 'emptyChoices' }], expect: { ok: true, retries: 1 } },
  {
    name: 'empty choices without streaming, every time',
    steps: [{ fault: 'emptyChoices', times: 4 }],
    stream: false,
    expect: { ok: false, code: 'bad_response', attempts: 4 },
  },
  {
    name: 'a 5 MB reply',
    steps: [{ fault: 'huge' }],
    expect: { ok: true, text: /^x{5242880}$/, retries: 0 },
  },
  {
    name: 'a 5 MB reply over the size bound',
    steps: [{ fault: 'huge' }],
    stream: false,
    options: { maxResponseBytes: 1024 * 1024 },
    expect: { ok: false, code: 'bad_response', attempts: 1, cause: /exceeds/ },
  },
  {
    name: 'a malformed body',
    steps: [{ fault: 'malformed' }],
    stream: false,
    expect: { ok: true, retries: 1 },
  },
  {
    name: 'a stream that is not SSE',
    steps: [{ fault: 'malformed' }],
    expect: { ok: true, retries: 1 },
  },
  {
    name: 'non-JSON tool arguments are re-prompted',
    steps: [{ fault: 'badToolArgs' }],
    request: { tools },
    expect: { ok: true, text: /^echo:/, retries: 1 },
  },
  {
    name: 'non-JSON tool arguments every time',
    steps: [{ fault: 'badToolArgs', times: 3 }],
    request: { tools },
    expect: { ok: false, code: 'bad_response', attempts: 3, cause: /not valid JSON/ },
  },
  { name: 'an empty reply is re-prompted', steps: [{ fault: 'empty' }], expect: { ok: true, retries: 1 } },
  {
    name: 'structured output that is not JSON is re-prompted',
    steps: [{ reply: { text: 'Sure! Here it is: {' } }, { reply: { text: '{"ok": true}' } }],
    request: { jsonSchema: { name: 'x', schema: { type: 'object' } } },
    expect: { ok: true, text: '{"ok": true}', retries: 1 },
  },
];

describe('openai provider: fault scenarios', () => {
  it('has at least 20 scenarios', () => {
    expect(SCENARIOS.length).toBeGreaterThanOrEqual(20);
  });

  it.each(SCENARIOS)('$name', async (s) => {
    fake.enqueue(
      ...s.steps.map((step) =>
        'fault' in step && step.fault === 'status' && step.retryAfter === 'DATE'
          ? { ...step, retryAfter: httpDate() }
          : step,
      ),
    );
    const out = await call(provider(s.options), { stream: s.stream ?? true, ...s.request });
    if (s.expect.ok) {
      expect(out.error).toBeUndefined();
      if (s.expect.text !== undefined) {
        if (typeof s.expect.text === 'string') expect(out.response?.text).toBe(s.expect.text);
        else expect(out.response?.text).toMatch(s.expect.text);
      }
      expect(out.retries.length).toBe(s.expect.retries);
      if (s.expect.finishReason) expect(out.response?.finishReason).toBe(s.expect.finishReason);
      if (s.expect.minMs) expect(out.ms).toBeGreaterThanOrEqual(s.expect.minMs);
    } else {
      expect(out.error).toBeInstanceOf(ModelError);
      expect(out.error).toMatchObject({ code: s.expect.code, attempts: s.expect.attempts });
      expect(out.error?.causeText).toBeTruthy();
      if (s.expect.cause) expect(out.error?.causeText).toMatch(s.expect.cause);
      expect(out.requests).toBe(s.expect.attempts);
      if (s.expect.maxMs) expect(out.ms).toBeLessThan(s.expect.maxMs);
    }
  });

  it('onRetry reports the Retry-After delay and the cause before each retry', async () => {
    fake.enqueue({ fault: 'status', status: 429, retryAfter: '0.5' }, { fault: 'status', status: 500 });
    const out = await call();
    expect(out.response?.text).toMatch(/^echo:/);
    expect(out.retries).toHaveLength(2);
    expect(out.retries[0]).toMatchObject({ attempt: 2, delayMs: 500 });
    expect(out.retries[0]!.cause).toMatch(/rate_limited/);
    expect(out.retries[1]!.attempt).toBe(3);
    expect(out.retries[1]!.cause).toMatch(/server_error/);
  });

  it('a stream cut mid-text keeps what was shown and says how far it got', async () => {
    fake.enqueue({ fault: 'cutText', text: 'Partial answer that breaks' });
    const out = await call();
    expect(out.deltas.join('')).toBe('Partial answer that breaks');
    expect(out.error?.code).toBe('stream_interrupted');
    expect(out.error?.message).toMatch(/after 1 attempt/);
    expect(out.requests).toBe(1);
  });

  it('the corrective re-prompt never carries the malformed arguments back', async () => {
    fake.enqueue({ fault: 'badToolArgs' });
    const before = fake.requests.length;
    const out = await call(undefined, { tools });
    expect(out.response).toBeDefined();
    const second = fake.requests[before + 1]!.body!;
    const sent = JSON.stringify(second.messages);
    expect(sent).not.toContain('"weather", ');
    expect(second.messages?.at(-1)).toMatchObject({ role: 'user' });
    expect(String(second.messages?.at(-1)?.content)).toMatch(/not valid JSON/);
    expect(second.messages).toHaveLength(3);
  });
});

describe('openai provider: cancellation', () => {
  it('aborting during a stream ends the call as cancelled and closes the HTTP request within 1 s', async () => {
    fake.enqueue({ reply: { text: 'word '.repeat(200), chunkSize: 5, chunkDelayMs: 30 } });
    const controller = new AbortController();
    const before = fake.requests.length;
    let abortedAt = 0;
    const pending = call(provider(), {
      signal: controller.signal,
      onDelta: () => {
        if (!abortedAt) {
          abortedAt = Date.now();
          controller.abort();
        }
      },
    });
    const out = await pending;
    expect(out.error).toMatchObject({ code: 'cancelled' });
    const record = fake.requests[before]!;
    await expect.poll(() => record.clientClosedAt, { timeout: 2_000 }).toBeDefined();
    expect(record.clientClosedAt! - abortedAt).toBeLessThan(1_000);
    expect(record.finished).toBe(false);
  });

  it('aborting while waiting for headers closes the HTTP request within 1 s', async () => {
    fake.enqueue({ fault: 'hang' });
    const controller = new AbortController();
    const before = fake.requests.length;
    const pending = call(provider({ timeoutMs: 30_000 }), { signal: controller.signal });
    await expect.poll(() => fake.requests.length, { timeout: 5_000 }).toBe(before + 1);
    const abortedAt = Date.now();
    controller.abort();
    const out = await pending;
    expect(out.error).toMatchObject({ code: 'cancelled', attempts: 1 });
    const record = fake.requests[before]!;
    await expect.poll(() => record.clientClosedAt, { timeout: 2_000 }).toBeDefined();
    expect(record.clientClosedAt! - abortedAt).toBeLessThan(1_000);
  });

  it('aborting during a retry backoff ends at once, without another request', async () => {
    fake.enqueue({ fault: 'status', status: 429, retryAfter: '2' });
    const controller = new AbortController();
    const p = provider();
    const pending = call(p, {
      signal: controller.signal,
      onRetry: () => setTimeout(() => controller.abort(), 100),
    });
    const out = await pending;
    expect(out.error).toMatchObject({ code: 'cancelled', attempts: 1 });
    expect(out.ms).toBeLessThan(1_500);
    expect(out.requests).toBe(1);
  });

  it('an already aborted signal makes no request', async () => {
    const controller = new AbortController();
    controller.abort();
    const out = await call(provider(), { signal: controller.signal });
    expect(out.error?.code).toBe('cancelled');
    expect(out.requests).toBe(0);
  });
});

describe('openai provider: concurrency against a rate-limiting server', () => {
  let limited: FakeOpenAIServer;
  beforeAll(async () => {
    limited = await startFakeOpenAIServer({
      rateLimit: { perSecond: 6, retryAfter: '0.3' },
      chunkDelayMs: 2,
    });
  });
  afterAll(async () => {
    await limited.close();
  });

  it('20 concurrent calls all finish within budget, each with its own answer', async () => {
    const p = makeOpenAIProvider('default', { provider: 'openai', model: 'm', baseURL: limited.url }, ctx, {
      ...FAST,
      retry: { baseDelayMs: 50, maxDelayMs: 400, maxRetryAfterMs: 3_000, maxRetries: 30 },
    });
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const deltas: string[] = [];
        let retries = 0;
        const response = await p.complete({
          nodeId: `agent${i}`,
          messages: [{ role: 'user', content: `question number ${i}` }],
          signal: new AbortController().signal,
          onDelta: (d) => deltas.push(d),
          onRetry: () => retries++,
        });
        return { i, response, deltas: deltas.join(''), retries };
      }),
    );
    expect(Date.now() - started).toBeLessThan(25_000);
    for (const r of results) {
      expect(r.response.text).toBe(`echo: question number ${r.i}`);
      expect(r.deltas).toBe(r.response.text);
    }
    expect(results.reduce((n, r) => n + r.retries, 0)).toBeGreaterThan(0);
    expect(limited.requests.filter((q) => q.served === 'rateLimited').length).toBeGreaterThan(0);
  });
});

describe('fake server: canned replies for example flows', () => {
  it('answers by request content, in order, and falls back to an echo', async () => {
    const demo = await startFakeOpenAIServer({
      replies: [
        { when: { system: 'planner' }, reply: { text: 'PLAN: write the intro' } },
        {
          when: { lastUser: 'weather', hasToolResult: false },
          reply: { toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] },
        },
        { when: { hasToolResult: true }, reply: [{ text: 'It is sunny.' }, { text: 'Still sunny.' }] },
      ],
    });
    try {
      const p = makeOpenAIProvider('m', { provider: 'openai', baseURL: demo.url }, ctx, FAST);
      const ask = (messages: ChatMessage[]) =>
        p.complete({ nodeId: 'n', messages, signal: new AbortController().signal, tools });
      expect(
        (
          await ask([
            { role: 'system', content: 'You are the planner' },
            { role: 'user', content: 'go' },
          ])
        ).text,
      ).toBe('PLAN: write the intro');
      const toolTurn = await ask([{ role: 'user', content: 'What is the weather?' }]);
      expect(toolTurn.toolCalls[0]).toMatchObject({ name: 'get_weather', arguments: '{"city":"Oslo"}' });
      const withResult: ChatMessage[] = [
        { role: 'user', content: 'What is the weather?' },
        { role: 'assistant', content: '', toolCalls: toolTurn.toolCalls },
        { role: 'tool', toolCallId: toolTurn.toolCalls[0]!.id, content: '21 C' },
      ];
      expect((await ask(withResult)).text).toBe('It is sunny.');
      expect((await ask(withResult)).text).toBe('Still sunny.');
      expect((await ask([{ role: 'user', content: 'anything else' }])).text).toBe('echo: anything else');
    } finally {
      await demo.close();
    }
  });
});
