/**
 * The MCP client answers a server's elicitation (a stock SDK McpServer over stdio that asks
 * during a tool call): the run's policy declines by default or accepts the form's defaults
 * (declining a form whose required fields lack one), and logs the question and the answer.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runFlow } from '../../runtime/src/engine/index.js';
import type { RunOptions } from '../../runtime/src/engine/types.js';
import { approveFlow } from '../../runtime/src/mcp/consent.js';
import { createMcpToolHost } from '../../runtime/src/tools/mcp-host.js';
import { CLI, type McpTestEnv, mcpTestEnv } from '../fixtures/mcp/helpers.js';
import { cli } from '../support/cli.js';

const SERVER = fileURLToPath(new URL('./fixtures/eliciting-server.mjs', import.meta.url));

let env: McpTestEnv;
beforeEach(() => {
  env = mcpTestEnv('sb-elicit-');
});
afterEach(async () => {
  await env.close();
});

function elicitingFlow(args: string[] = [], toolTimeoutMs?: number): Flow {
  return {
    version: 1,
    id: 'elicit-client',
    name: 'Elicit client',
    models: {
      default: {
        provider: 'scripted',
        script: [
          { node: 'a1', toolCalls: [{ name: 't_e__confirm', args: {} }] },
          { node: 'a1', text: 'done' },
        ],
      },
    },
    mcpServers: { e: { command: process.execPath, args: [SERVER, ...args] } },
    nodes: [
      { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
      {
        id: 't_e',
        kind: 'tool',
        position: { x: 0, y: 0 },
        config: { server: 'e', ...(toolTimeoutMs ? { timeoutMs: toolTimeoutMs } : {}) },
      },
      {
        id: 'a1',
        kind: 'agent',
        position: { x: 0, y: 0 },
        config: { role: 'worker', model: 'default', prompt: [{ text: 'x' }] },
      },
      { id: 'end', kind: 'end', position: { x: 0, y: 0 }, config: {} },
    ],
    edges: [
      { id: 'e1', kind: 'handover', source: 'start', target: 'a1' },
      { id: 'g1', kind: 'tools', source: 't_e', target: 'a1' },
      { id: 'e2', kind: 'handover', source: 'a1', target: 'end' },
    ],
  };
}

async function run(
  flow: Flow,
  options: RunOptions = {},
  onEvent?: (e: RunEvent, h: ReturnType<typeof runFlow>) => void,
) {
  approveFlow(env.trust, flow);
  const events: RunEvent[] = [];
  const h = runFlow(flow, 'x', {
    ...options,
    tools: createMcpToolHost(flow, { pool: env.pool, trust: env.trust }),
    onEvent: (e) => {
      events.push(e);
      onEvent?.(e, h);
    },
  });
  const result = await h.result;
  expect(result.status).toBe('completed');
  const toolResult = events.find((e) => e.type === 'tool.result') as { result: string } | undefined;
  const logs = events.filter((e) => e.type === 'log').map((e) => (e as { text: string }).text);
  return { answer: JSON.parse(toolResult!.result), logs, events };
}

describe('the MCP client answers elicitation requests of a server', { timeout: 60_000 }, () => {
  it('declines by default when nobody can be asked, and says so in the run', async () => {
    const { answer, logs } = await run(elicitingFlow(), { humanInput: 'fail' });
    expect(answer).toEqual({ action: 'decline' });
    expect(logs).toContain('t_e__confirm asked "Confirm the name to use": declined');
  });

  it('accepts the form’s defaults when the run allows it', async () => {
    const { answer, logs } = await run(elicitingFlow(), { elicitation: 'accept-defaults' });
    expect(answer).toEqual({ action: 'accept', content: { name: 'Ada', ok: true } });
    expect(logs).toContain('t_e__confirm asked "Confirm the name to use": accepted its defaults');
  });

  it('declines a form whose required fields lack a default, even with accept-defaults', async () => {
    const { answer } = await run(elicitingFlow(['--required-without-default']), {
      elicitation: 'accept-defaults',
    });
    expect(answer).toEqual({ action: 'decline' });
  });

  it('switchboard run --elicitation accept-defaults; a bad policy is a usage error', async () => {
    const saved = process.env.SWITCHBOARD_HOME;
    process.env.SWITCHBOARD_HOME = join(env.tmp.dir, 'home');
    try {
      const file = join(env.tmp.dir, 'flow.json');
      writeFileSync(file, JSON.stringify(elicitingFlow()));
      const bad = await cli('run', file, '--input', 'x', '--trust', 'e', '--elicitation', 'yes-to-all');
      expect(bad.code).toBe(2);
      expect(bad.err).toContain('--elicitation must be decline or accept-defaults');
      const r = await cli(
        'run',
        file,
        '--input',
        'x',
        '--trust',
        'e',
        '--elicitation',
        'accept-defaults',
        '--events',
        'jsonl',
      );
      expect(r.code).toBe(0);
      const events = r.out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l));
      const toolResult = events.find((e) => e.type === 'tool.result');
      expect(JSON.parse(toolResult.result)).toEqual({ action: 'accept', content: { name: 'Ada', ok: true } });
    } finally {
      if (saved === undefined) delete process.env.SWITCHBOARD_HOME;
      else process.env.SWITCHBOARD_HOME = saved;
    }
  });

  it('asks as human input of the run where someone can answer: the form on input.requested, answered by the agent’s id', async () => {
    const byFile = await run(elicitingFlow(), { answers: { a1: '{"name":"Bob","ok":false}' } });
    expect(byFile.answer).toEqual({ action: 'accept', content: { name: 'Bob', ok: false } });
    const asked = byFile.events.find((e) => e.type === 'input.requested');
    expect(asked).toMatchObject({
      nodeId: 'a1',
      question: 'Confirm the name to use',
      form: { type: 'object', required: ['name'], properties: { name: { type: 'string', default: 'Ada' } } },
    });
    expect(byFile.logs).toContain('t_e__confirm asked "Confirm the name to use": accepted');
    // The answer command (the editor, REST), here declining.
    const byCommand = await run(elicitingFlow(), {}, (e, h) => {
      if (e.type === 'input.requested')
        setTimeout(() => h.send({ type: 'answer', nodeId: 'a1', answer: 'decline' }), 5);
    });
    expect(byCommand.answer).toEqual({ action: 'decline' });
  });

  it('a served flow passes its tool’s question on to its own MCP caller, and the answer back', async () => {
    const file = join(env.tmp.dir, 'served.json');
    writeFileSync(file, JSON.stringify(elicitingFlow()));
    const client = new Client(
      { name: 'caller', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} } } },
    );
    const asked: unknown[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      return { action: 'accept', content: { name: 'Grace', ok: true } };
    });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [...CLI, 'mcp', file, '--trust', 'e'],
        env: {
          PATH: process.env.PATH ?? '',
          HOME: env.tmp.dir,
          SWITCHBOARD_HOME: join(env.tmp.dir, 'home2'),
        },
        stderr: 'ignore',
        cwd: env.tmp.dir,
      }),
      { timeout: 60_000 },
    );
    try {
      const r = await client.callTool({ name: 'elicit-client', arguments: { input: 'x' } }, undefined, {
        timeout: 60_000,
      });
      expect(r.isError).toBeFalsy();
      expect(asked).toEqual([
        expect.objectContaining({
          message: 'Confirm the name to use',
          requestedSchema: expect.objectContaining({ required: ['name'] }),
        }),
      ]);
      expect((r.content as Array<{ text: string }>)[0]!.text).toBe('done');
    } finally {
      await client.close();
    }
  });

  it('the time a person takes to answer does not count against the tool call’s timeout', async () => {
    // A 400 ms tool timeout; the answer comes after 1.2 s.
    const r = await run(elicitingFlow([], 400), {}, (e, h) => {
      if (e.type === 'input.requested')
        setTimeout(() => h.send({ type: 'answer', nodeId: 'a1', answer: '{"name":"Lin"}' }), 1200);
    });
    expect(r.answer).toEqual({ action: 'accept', content: { name: 'Lin' } });
  });
});
