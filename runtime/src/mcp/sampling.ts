/**
 * A server's `sampling/createMessage` (the server asking the flow's model) read into what the
 * run can answer: text messages, a system prompt and a token cap. The request comes from a
 * server the flow reaches, so it is read as hostile data: only text content, bounded sizes, and
 * anything else is refused with an error that says what (the server sees it as the answer).
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { SamplingAsk } from '../tools/types.js';

/** The JSON-RPC code MCP uses for a sampling request the client (its user) rejected. */
export const SAMPLING_REJECTED = -1;

const MAX_MESSAGES = 200;
const MAX_TEXT = 256 * 1024;

export function samplingRefused(why: string): McpError {
  return new McpError(SAMPLING_REJECTED, `sampling refused: ${why}`);
}

function textOf(content: unknown, i: number): string {
  const parts = Array.isArray(content) ? content : [content];
  const texts: string[] = [];
  for (const p of parts) {
    const type = (p as { type?: unknown } | null)?.type;
    if (type !== 'text')
      throw samplingRefused(`message ${i} holds ${JSON.stringify(type)} content; only text is answered`);
    const text = (p as { text?: unknown }).text;
    if (typeof text !== 'string') throw samplingRefused(`message ${i} has text content without text`);
    texts.push(text);
  }
  return texts.join('\n');
}

/** The request's parameters as a `SamplingAsk`, or a refusal (an `McpError`) that says why. */
export function readSamplingRequest(params: Record<string, unknown>): SamplingAsk {
  const messages = params.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw samplingRefused('no messages');
  if (messages.length > MAX_MESSAGES)
    throw samplingRefused(`${messages.length} messages (at most ${MAX_MESSAGES})`);
  if (Array.isArray(params.tools) && params.tools.length > 0)
    throw samplingRefused('tools in a sampling request are not offered to the model');
  let size = 0;
  const out: SamplingAsk['messages'] = messages.map((m, i) => {
    const role = (m as { role?: unknown } | null)?.role;
    if (role !== 'user' && role !== 'assistant')
      throw samplingRefused(`message ${i} has role ${JSON.stringify(role)}`);
    const text = textOf((m as { content?: unknown }).content, i);
    size += text.length;
    if (size > MAX_TEXT) throw samplingRefused(`more than ${MAX_TEXT} characters of messages`);
    return { role, text };
  });
  const maxTokens = params.maxTokens;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1)
    throw samplingRefused('maxTokens is not a positive integer');
  const ask: SamplingAsk = { messages: out, maxTokens };
  if (typeof params.systemPrompt === 'string') {
    if (params.systemPrompt.length > MAX_TEXT) throw samplingRefused('the system prompt is too long');
    ask.systemPrompt = params.systemPrompt;
  }
  return ask;
}
