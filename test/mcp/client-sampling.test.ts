/**
 * MCP sampling: a stock SDK McpServer over stdio asks, during a tool call, for a completion from
 * the model of the agent that called it. Answered through the agent's model (the openai provider
 * against the fake OpenAI-compatible server, over real HTTP) only where the flow's tool node
 * allows it, within its token cap and request count; otherwise the server gets an error that says
 * why. The call is a model call of the agent's turn: a `model.request` event and counted tokens.
 */
import { fileURLToPath } from 'node:url';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runFlow } from '../../runtime/src/engine/index.js';
import { approveFlow } from '../../runtime/src/mcp/consent.js';
import {
  type FakeOpenAIServer,
  startFakeOpenAIServer,
} from '../../runtime/src/models/testing/fake-openai-server.js';
import { createMcpToolHost } from '../../runtime/src/tools/mcp-host.js';
import { type McpTestEnv, mcpTestEnv } from '../fixtures/mcp/helpers.js';

const SERVER = fileURLToPath(new URL('./fixtures/sampling-server.mjs', import.meta.url));

let env: McpTestEnv;
let fake: FakeOpenAIServer;
beforeAll(async () => {
  fake = await startFakeOpenAIServer({
    replies: [
      { when: { lastUser: 'Summarise:' }, reply: { text: 'Deploy flaky, now green.' } },
      { when: { hasToolResult: true }, reply: { text: 'done' } },
    ],
  });
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  env = mcpTestEnv('sb-sampling-');
});
afterEach(async () => {
  await env.close();
});

function samplingFlow(tool: string, sampling?: Record<string, unknown>): Flow {
  return {
    version: 1,
    id: 'sampling-client',
    name: 'Sampling client',
    models: {
      // The agent's first reply calls the tool (scripted); its model for sampling is `gpt`.
      gpt: { provider: 'openai', model: 'fake-model', baseURL: fake.url },
    },
    mcpServers: { s: { command: process.execPath, args: [SERVER] } },
    nodes: [
      { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
      {
        id: 't',
        kind: 'tool',
        position: { x: 0, y: 0 },
        config: { server: 's', include: [tool], ...(sampling ? { sampling } : {}) },
      },
      {
        id: 'a1',
        kind: 'agent',
        position: { x: 0, y: 0 },
        config: { role: 'worker', model: 'gpt', prompt: [{ text: 'Use the tool.' }] },
      },
      { id: 'end', kind: 'end', position: { x: 0, y: 0 }, config: {} },
    ],
    edges: [
      { id: 'e1', kind: 'handover', source: 'start', target: 'a1' },
      { id: 'g1', kind: 'tools', source: 't', target: 'a1' },
      { id: 'e2', kind: 'handover', source: 'a1', target: 'end' },
    ],
  };
}

async function run(flow: Flow, tool: string) {
  approveFlow(env.trust, flow);
  const before = fake.requests.length;
  // The agent's first request asks for the tool; later ones are answered by the canned replies.
  fake.enqueue({ reply: { toolCalls: [{ name: `t__${tool}`, arguments: {} }] } });
  const events: RunEvent[] = [];
  const h = runFlow(flow, 'go', {
    allowLocalModels: true,
    tools: createMcpToolHost(flow, { pool: env.pool, trust: env.trust }),
    onEvent: (e) => events.push(e),
  });
  const result = await h.result;
  expect(result.status, JSON.stringify(result)).toBe('completed');
  const toolResult = events.find((e) => e.type === 'tool.result') as { result: string } | undefined;
  return {
    answers: JSON.parse(toolResult!.result) as Array<{
      ok?: Record<string, unknown>;
      error?: { message: string };
    }>,
    events,
    sent: fake.requests.slice(before),
    logs: events.filter((e) => e.type === 'log').map((e) => (e as { text: string }).text),
  };
}

describe('MCP sampling answered with the calling agent’s model', { timeout: 60_000 }, () => {
  it('answers where the tool node allows it: the server’s prompt reaches the model, capped, and is on record', async () => {
    const { answers, events, sent, logs } = await run(
      samplingFlow('summarise', { maxTokens: 20 }),
      'summarise',
    );
    expect(answers).toEqual([
      {
        ok: {
          role: 'assistant',
          content: { type: 'text', text: 'Deploy flaky, now green.' },
          model: 'fake-model',
          stopReason: 'endTurn',
        },
      },
    ]);
    // What the fake endpoint received for the sampling call: the server's system prompt and
    // message, max_tokens the lower of the server's 50 and the node's 20.
    const sampled = sent.find((r) => JSON.stringify(r.body?.messages).includes('Summarise:'))!;
    expect(sampled.body?.messages).toEqual([
      { role: 'system', content: 'You write one-line summaries.' },
      { role: 'user', content: 'Summarise: the deploy failed twice, then passed.' },
    ]);
    expect(sampled.body?.max_tokens).toBe(20);
    // A model call of the agent's turn: recorded before it was made, its tokens counted.
    const requests = events.filter((e) => e.type === 'model.request' && e.nodeId === 'a1');
    expect(requests.length).toBe(3);
    expect(JSON.stringify(requests[1])).toContain('You write one-line summaries.');
    expect(events.filter((e) => e.type === 'model.completed' && e.nodeId === 'a1').length).toBe(3);
    expect(logs).toContain('t__summarise asked the model (sampling, 1 message): answered with 24 characters');
  });

  it('refuses where the tool node does not allow it, and no model call is made for the server', async () => {
    const { answers, events, sent } = await run(samplingFlow('summarise'), 'summarise');
    expect(answers).toHaveLength(1);
    expect(answers[0]!.error?.message).toContain(
      "sampling refused: the flow's tool node does not allow sampling",
    );
    expect(sent.some((r) => JSON.stringify(r.body?.messages).includes('Summarise:'))).toBe(false);
    expect(events.filter((e) => e.type === 'model.request').length).toBe(2);
  });

  it('answers at most maxRequests times in one call', async () => {
    const { answers, logs } = await run(
      samplingFlow('summarise_twice', { maxRequests: 1 }),
      'summarise_twice',
    );
    expect(answers[0]!.ok).toBeDefined();
    expect(answers[1]!.error?.message).toContain(
      'more than 1 requests in one call (tool node "t", sampling.maxRequests)',
    );
    expect(logs.some((l) => l.includes('refused, more than 1 requests'))).toBe(true);
  });

  it('refuses content it cannot pass on to the model, naming it', async () => {
    const { answers, sent } = await run(samplingFlow('summarise_image', {}), 'summarise_image');
    expect(answers[0]!.error?.message).toContain('message 0 holds "image" content; only text is answered');
    expect(sent.length).toBe(2);
  });
});
