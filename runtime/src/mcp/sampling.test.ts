import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { readSamplingRequest, SAMPLING_REJECTED } from './sampling.js';

const text = (t: string) => ({ type: 'text', text: t });
function refusal(params: Record<string, unknown>): string {
  try {
    readSamplingRequest(params);
  } catch (e) {
    expect(e).toBeInstanceOf(McpError);
    expect((e as McpError).code).toBe(SAMPLING_REJECTED);
    return (e as McpError).message;
  }
  throw new Error('not refused');
}

describe("a server's sampling request, read as hostile data", () => {
  it('reads text messages, the system prompt and the token cap', () => {
    expect(
      readSamplingRequest({
        messages: [
          { role: 'user', content: text('a') },
          { role: 'assistant', content: [text('b'), text('c')] },
        ],
        systemPrompt: 'sys',
        maxTokens: 10,
      }),
    ).toEqual({
      messages: [
        { role: 'user', text: 'a' },
        { role: 'assistant', text: 'b\nc' },
      ],
      systemPrompt: 'sys',
      maxTokens: 10,
    });
  });

  it('refuses what it cannot pass on, saying what', () => {
    expect(refusal({ messages: [], maxTokens: 1 })).toContain('no messages');
    expect(refusal({ messages: [{ role: 'system', content: text('x') }], maxTokens: 1 })).toContain(
      'message 0 has role "system"',
    );
    expect(refusal({ messages: [{ role: 'user', content: { type: 'audio' } }], maxTokens: 1 })).toContain(
      'message 0 holds "audio" content',
    );
    expect(refusal({ messages: [{ role: 'user', content: text('x') }], maxTokens: 0 })).toContain(
      'maxTokens',
    );
    expect(
      refusal({ messages: [{ role: 'user', content: text('x') }], maxTokens: 5, tools: [{ name: 't' }] }),
    ).toContain('tools in a sampling request');
    const big = 'x'.repeat(200 * 1024);
    expect(
      refusal({
        messages: [
          { role: 'user', content: text(big) },
          { role: 'user', content: text(big) },
        ],
        maxTokens: 5,
      }),
    ).toContain('characters of messages');
    expect(
      refusal({ messages: Array(201).fill({ role: 'user', content: text('x') }), maxTokens: 5 }),
    ).toContain('201 messages');
  });
});
