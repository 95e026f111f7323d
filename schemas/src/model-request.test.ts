import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import type { RunEvent } from './events.js';
import { RequestResolver, resolveModelRequest } from './model-request.js';

const schema = JSON.parse(
  readFileSync(fileURLToPath(new URL('../event.schema.json', import.meta.url)), 'utf8'),
);
const validate = new Ajv({ strict: false }).compile(schema);

const long = (c: string) => c.repeat(100);
const envelope = { runId: 'r1', ts: 1 };
const first = {
  ...envelope,
  seq: 5,
  type: 'model.request',
  nodeId: 'writer',
  turn: 1,
  attempt: 1,
  call: 1,
  model: 'default',
  provider: 'openai',
  modelId: 'gpt-4o-mini',
  params: { temperature: 0.2 },
  tools: [{ name: 'search', h: 'aaaaaaaaaaaaaaaa', description: 'Search', parameters: { type: 'object' } }],
  responseFormat: { type: 'json_schema', name: 'out', h: 'bbbbbbbbbbbbbbbb', schema: { type: 'object' } },
  messages: [
    { role: 'system', h: '1111111111111111', content: long('s') },
    { role: 'user', content: 'go' },
    { role: 'user', name: 'planner', h: '2222222222222222', content: long('p') },
  ],
} as const;
const second = {
  ...envelope,
  seq: 9,
  type: 'model.request',
  nodeId: 'writer',
  turn: 1,
  attempt: 1,
  call: 2,
  model: 'default',
  tools: [{ name: 'search', h: 'aaaaaaaaaaaaaaaa' }],
  responseFormat: { type: 'json_schema', name: 'out', h: 'bbbbbbbbbbbbbbbb' },
  messages: [
    { role: 'system', h: '1111111111111111' },
    { ref: 5, from: 1, count: 2 },
    { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'search', arguments: '{}' }] },
    { role: 'tool', toolCallId: 'c1', content: 'found' },
  ],
} as const;

describe('model.request in event.schema.json', () => {
  it('accepts requests with bodies, addresses and references', () => {
    expect(validate(first), JSON.stringify(validate.errors)).toBe(true);
    expect(validate(second), JSON.stringify(validate.errors)).toBe(true);
  });

  it('refuses a request without messages, with an unknown role or a reference to seq 0', () => {
    const { messages: _, ...noMessages } = first;
    expect(validate(noMessages)).toBe(false);
    expect(validate({ ...first, messages: [{ role: 'wizard', content: 'x' }] })).toBe(false);
    expect(validate({ ...second, messages: [{ ref: 0, from: 0, count: 1 }] })).toBe(false);
    expect(validate({ ...first, attempt: 0 })).toBe(false);
  });
});

describe('resolving a request from the log', () => {
  const log = [
    first,
    { ...envelope, seq: 6, type: 'log', level: 'info', text: 'x' },
    second,
  ] as unknown as RunEvent[];

  it('rebuilds every message, tool and response format of a later request', () => {
    const r = resolveModelRequest(log, 9)!;
    expect(r.messages).toEqual([
      { role: 'system', content: long('s') },
      { role: 'user', content: 'go' },
      { role: 'user', name: 'planner', content: long('p') },
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'search', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'c1', content: 'found' },
    ]);
    expect(r.tools).toEqual([{ name: 'search', description: 'Search', parameters: { type: 'object' } }]);
    expect(r.responseFormat).toEqual({ type: 'json_schema', name: 'out', schema: { type: 'object' } });
    expect(r).toMatchObject({ nodeId: 'writer', turn: 1, attempt: 1, call: 2, model: 'default' });
  });

  it('marks what a log without the first request cannot give, instead of inventing it', () => {
    const r = new RequestResolver().addAll([second as unknown as RunEvent]).get(9)!;
    expect(r.messages[0]).toEqual({ role: 'system', content: '', missing: true });
    expect(r.messages.filter((m) => m.missing)).toHaveLength(3);
  });
});
