/**
 * A served flow that asks and logs (`switchboard mcp FLOW` as a real process, driven by the
 * SDK's stock client over stdio and over streamable HTTP): human nodes asked through
 * elicitation with a form built from the node, declined/cancelled forms and clients without
 * elicitation failing by name, `logging/setLevel` filtering log messages, progress naming nodes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLI, FIXTURES, tempDir } from '../fixtures/mcp/helpers.js';

const ASK = fileURLToPath(new URL('./fixtures/ask-flow.json', import.meta.url));
const BRIEF = join(FIXTURES, 'brief-flow.json');

let tmp: ReturnType<typeof tempDir>;
let env: Record<string, string>;
const clients: Client[] = [];
const children: ChildProcess[] = [];
beforeEach(() => {
  tmp = tempDir('sb-mcp-ask-');
  env = { PATH: process.env.PATH ?? '', HOME: tmp.dir, SWITCHBOARD_HOME: join(tmp.dir, 'sbhome') };
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => {});
  for (const ch of children.splice(0)) ch.kill('SIGKILL');
  tmp.cleanup();
});

type Answer = (req: ElicitRequest['params']) => {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, string | undefined>;
};

function newClient(answer?: Answer): { client: Client; asked: ElicitRequest['params'][] } {
  const asked: ElicitRequest['params'][] = [];
  const client = new Client(
    { name: 'sdk-test-client', version: '1.0.0' },
    answer ? { capabilities: { elicitation: { form: {} } } } : {},
  );
  if (answer)
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      return answer(req.params) as ElicitResult;
    });
  return { client, asked };
}

async function overStdio(flow: string, answer?: Answer) {
  const c = newClient(answer);
  let stderr = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...CLI, 'mcp', flow],
    env,
    stderr: 'pipe',
    cwd: tmp.dir,
  });
  transport.stderr?.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  await c.client.connect(transport, { timeout: 60_000 });
  clients.push(c.client);
  return { ...c, stderr: () => stderr };
}

async function httpUrl(flow: string): Promise<string> {
  const ch = spawn(process.execPath, [...CLI, 'mcp', flow, '--http', '0'], {
    env,
    cwd: tmp.dir,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(ch);
  return new Promise<string>((resolve, reject) => {
    let err = '';
    const t = setTimeout(() => reject(new Error(`no URL: ${err}`)), 60_000);
    ch.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      const m = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(err);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    });
  });
}

async function overHttp(url: string, answer?: Answer) {
  const c = newClient(answer);
  await c.client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(c.client);
  return c;
}

const textOf = (r: Awaited<ReturnType<Client['callTool']>>) =>
  (r.content as Array<{ type: string; text: string }>).map((c) => c.text).join('');

/** Answers the topic question with the second option and approves the gate with a comment. */
const approving: Answer = (p) => {
  const props = (p as { requestedSchema: { properties: Record<string, unknown> } }).requestedSchema
    .properties;
  if ('answer' in props) return { action: 'accept', content: { answer: 'moons' } };
  return { action: 'accept', content: { decision: 'approve', comment: 'ship it' } };
};

describe('a served flow asks its caller (elicitation)', { timeout: 120_000 }, () => {
  it('over stdio: forms built from the nodes, accepted answers feed the run', async () => {
    const { client, asked } = await overStdio(ASK, approving);
    const r = await client.callTool(
      { name: 'ask-publish', arguments: { input: 'the weekly brief' } },
      undefined,
      {
        timeout: 60_000,
      },
    );
    expect(r.isError).toBeFalsy();
    expect(textOf(r)).toBe('approve: ship it');
    expect(asked).toHaveLength(2);
    // The question: one string field, the node's options as the choice, the first preselected.
    expect(asked[0]).toMatchObject({
      mode: 'form',
      message: 'Which topic for the weekly brief?',
      requestedSchema: {
        type: 'object',
        properties: { answer: { type: 'string', enum: ['tides', 'moons'], default: 'tides' } },
        required: ['answer'],
      },
    });
    // The gate: approve/reject (preselected on reject) and a comment; the first answer fed the run.
    expect(asked[1]).toMatchObject({
      message: 'Publish the brief about moons?',
      requestedSchema: {
        properties: {
          decision: {
            type: 'string',
            oneOf: [
              { const: 'approve', title: 'Approve' },
              { const: 'reject', title: 'Reject' },
            ],
            default: 'reject',
          },
          comment: { type: 'string' },
        },
        required: ['decision'],
      },
    });
  });

  it('over stdio: a client without elicitation gets human_input_required, by name', async () => {
    const { client, asked } = await overStdio(ASK);
    const r = await client.callTool({ name: 'ask-publish', arguments: { input: 'x' } }, undefined, {
      timeout: 60_000,
    });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/^run failed: human_input_required: human node "topic"/);
    expect(textOf(r)).toContain('did not declare the elicitation capability');
    expect(asked).toHaveLength(0);
  });

  it('over stdio: declined ends the run with human_declined, cancelled with human_cancelled', async () => {
    const declined = await overStdio(ASK, () => ({ action: 'decline' }));
    const r1 = await declined.client.callTool({ name: 'ask-publish', arguments: { input: 'x' } }, undefined, {
      timeout: 60_000,
    });
    expect(r1.isError).toBe(true);
    expect(textOf(r1)).toMatch(
      /^run failed: human_declined: the MCP client declined to answer human node "topic"/,
    );
    expect(declined.asked).toHaveLength(1);
    // The gate is declined after the question was answered: the run stops there, by name.
    const cancelled = await overStdio(ASK, (p) =>
      'answer' in (p as { requestedSchema: { properties: object } }).requestedSchema.properties
        ? { action: 'accept', content: { answer: 'tides' } }
        : { action: 'cancel' },
    );
    const r2 = await cancelled.client.callTool(
      { name: 'ask-publish', arguments: { input: 'x' } },
      undefined,
      {
        timeout: 60_000,
      },
    );
    expect(textOf(r2)).toMatch(/^run failed: human_cancelled: .*human node "gate"/);
    // (stderr and stdout are separate pipes: the line may come just after the result.)
    const t0 = Date.now();
    while (!/run \S+ failed: the MCP client cancelled/.test(cancelled.stderr()) && Date.now() - t0 < 10_000)
      await new Promise((r) => setTimeout(r, 20));
    expect(cancelled.stderr()).toMatch(/run \S+ failed: the MCP client cancelled/);
  });

  it('over stdio: an answer that does not fit the form fails by name', async () => {
    const { client } = await overStdio(ASK, () => ({ action: 'accept', content: { answer: 'suns' } }));
    const r = await client.callTool({ name: 'ask-publish', arguments: { input: 'x' } }, undefined, {
      timeout: 60_000,
    });
    expect(r.isError).toBe(true);
    // The SDK server validates accepted content against the schema it sent: a named failure either way.
    expect(textOf(r)).toMatch(/^run failed: human_(answer_invalid|input_failed): /);
  });

  it('over streamable HTTP: elicitation round trips on the call stream; a client without it fails by name', async () => {
    const url = await httpUrl(ASK);
    const yes = await overHttp(url, approving);
    const r = await yes.client.callTool({ name: 'ask-publish', arguments: { input: 'x' } }, undefined, {
      timeout: 60_000,
    });
    expect(textOf(r)).toBe('approve: ship it');
    expect(yes.asked.map((a) => a.message)).toEqual(['Which topic for x?', 'Publish the brief about moons?']);
    const rejecting = await overHttp(url, (p) =>
      'answer' in (p as { requestedSchema: { properties: object } }).requestedSchema.properties
        ? { action: 'accept', content: { answer: 'tides' } }
        : { action: 'accept', content: { decision: 'reject' } },
    );
    const r2 = await rejecting.client.callTool(
      { name: 'ask-publish', arguments: { input: 'x' } },
      undefined,
      {
        timeout: 60_000,
      },
    );
    expect(textOf(r2)).toBe('reject');
    const none = await overHttp(url);
    const r3 = await none.client.callTool({ name: 'ask-publish', arguments: { input: 'x' } }, undefined, {
      timeout: 60_000,
    });
    expect(textOf(r3)).toMatch(/^run failed: human_input_required: /);
    const declined = await overHttp(url, () => ({ action: 'decline' }));
    const r4 = await declined.client.callTool({ name: 'ask-publish', arguments: { input: 'x' } }, undefined, {
      timeout: 60_000,
    });
    expect(textOf(r4)).toMatch(/^run failed: human_declined: /);
  });
});

describe('a served flow logs (logging/setLevel)', { timeout: 120_000 }, () => {
  async function logsOf(client: Client, level?: 'debug' | 'info' | 'error') {
    const logs: Array<{ level: string; data: { event: string; nodeId?: string; text: string } }> = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logs.push(n.params as (typeof logs)[number]);
    });
    if (level) await client.setLoggingLevel(level);
    const progress: Array<{ progress: number; message?: string }> = [];
    const r = await client.callTool({ name: 'brief-writer', arguments: { input: 'tides' } }, undefined, {
      timeout: 60_000,
      onprogress: (p) => progress.push(p),
    });
    expect(textOf(r)).toBe('BRIEF: the answer is 42.');
    return { logs, progress };
  }

  it('over stdio: the logging capability, messages at or above the level set, progress naming nodes', async () => {
    const { client } = await overStdio(BRIEF);
    expect(client.getServerCapabilities()?.logging).toEqual({});
    const debug = await logsOf(client, 'debug');
    const texts = debug.logs.map((l) => `${l.level} ${l.data.text}`);
    expect(texts).toContain('info node.started writer');
    expect(texts).toContain('info node.completed writer');
    expect(texts).toContain('debug tool.called writer: kb__initialize_document_context');
    expect(debug.logs.find((l) => l.data.event === 'node.started')?.data.nodeId).toBeDefined();
    // Progress kept as it was: counted from 1, each node event naming its node.
    expect(debug.progress.map((p) => p.progress)).toEqual(debug.progress.map((_, i) => i + 1));
    expect(debug.progress.map((p) => p.message)).toContain('node.started writer');
    expect(debug.progress.map((p) => p.message)).toContain('turn.started writer');

    const info = await logsOf(client, 'info');
    expect(info.logs.length).toBeGreaterThan(0);
    expect(info.logs.every((l) => l.level !== 'debug')).toBe(true);
    expect(info.logs.map((l) => l.data.text)).toContain('node.completed writer');

    const error = await logsOf(client, 'error');
    expect(error.logs).toEqual([]);
    // The log level does not touch progress. (Not the last node's completion: under load its
    // progress line can trail the result, which the client then drops; a known gap.)
    expect(error.progress.map((p) => p.message)).toContain(
      'tool.called writer: kb__initialize_document_context',
    );
  });

  it('over stdio: a failing node is logged at error', async () => {
    const flow = JSON.parse(readFileSync(BRIEF, 'utf8'));
    flow.models.default.script = []; // the writer's model call fails: script_exhausted
    const failing = join(tmp.dir, 'failing.json');
    writeFileSync(failing, JSON.stringify(flow));
    const { client } = await overStdio(failing);
    const logs: Array<{ level: string; data: { event: string; text: string } }> = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logs.push(n.params as (typeof logs)[number]);
    });
    await client.setLoggingLevel('error');
    const r = await client.callTool({ name: 'brief-writer', arguments: { input: 'x' } }, undefined, {
      timeout: 60_000,
    });
    expect(r.isError).toBe(true);
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.every((l) => l.level === 'error')).toBe(true);
    expect(logs.map((l) => l.data.event)).toContain('run.failed');
  });

  it('over streamable HTTP: setLevel per session filters that session only', async () => {
    const url = await httpUrl(BRIEF);
    const a = await overHttp(url);
    const b = await overHttp(url);
    const quiet = await logsOf(a.client, 'error');
    const loud = await logsOf(b.client, 'debug');
    expect(quiet.logs).toEqual([]);
    expect(loud.logs.map((l) => `${l.level} ${l.data.text}`)).toContain('info node.started writer');
    expect(loud.progress.map((p) => p.message)).toContain('node.started writer');
  });
});
