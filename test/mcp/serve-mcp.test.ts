/**
 * `/mcp` of `switchboard serve` (a real server on a real socket, the SDK's stock client over
 * streamable HTTP): the stored flows as tools, a call as a normal server run in the history,
 * progress naming nodes, log messages, elicitation, cancellation; the token and Origin checks.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  type ElicitResult,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { Flow } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import { simpleFlow, slowChain, testServer } from '../server/helpers.js';

const TOKEN = randomBytes(32).toString('hex');
const ASK = JSON.parse(readFileSync(new URL('./fixtures/ask-flow.json', import.meta.url), 'utf8')) as Flow;

type S = Awaited<ReturnType<typeof testServer>>;
let s: S | undefined;
// biome-ignore lint/suspicious/noExplicitAny: REST answers
let runsOf: (flowId: string) => Promise<any[]>;
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => {});
  await s?.close();
  s = undefined;
});

async function serverWith(
  flows: Flow[],
  token?: string,
  more: Parameters<typeof testServer>[0] = {},
): Promise<{ url: URL; port: number }> {
  s = await testServer({ port: 0, ...(token ? { token } : {}), ...more });
  const { port } = await s.listen();
  const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  for (const f of flows) {
    const r = await s.req({
      method: 'POST',
      url: '/api/flows',
      payload: JSON.stringify(f),
      headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json', ...auth },
    });
    expect(r.statusCode).toBe(201);
  }
  runsOf = async (flowId) =>
    (
      await s!.req({
        method: 'GET',
        url: `/api/runs?flowId=${flowId}`,
        headers: { host: `127.0.0.1:${port}`, ...auth },
      })
    ).json().runs;
  return { url: new URL(`http://127.0.0.1:${port}/mcp`), port };
}

async function connect(
  url: URL,
  o: {
    token?: string;
    elicit?: (p: unknown) => { action: ElicitResult['action']; content?: Record<string, string | undefined> };
  } = {},
) {
  const client = new Client(
    { name: 'sdk-test-client', version: '1.0.0' },
    o.elicit ? { capabilities: { elicitation: { form: {} } } } : {},
  );
  if (o.elicit) {
    const answer = o.elicit;
    client.setRequestHandler(ElicitRequestSchema, async (req) => answer(req.params) as ElicitResult);
  }
  const transport = new StreamableHTTPClientTransport(
    url,
    o.token ? { requestInit: { headers: { authorization: `Bearer ${o.token}` } } } : {},
  );
  await client.connect(transport);
  clients.push(client);
  return client;
}

const textOf = (r: Awaited<ReturnType<Client['callTool']>>) =>
  (r.content as Array<{ type: string; text: string }>).map((c) => c.text).join('');

function rawPost(port: number, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const init = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
  };
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        headers: {
          host: `127.0.0.1:${port}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(init));
  });
}

describe('switchboard serve: /mcp', { timeout: 60_000 }, () => {
  it('lists one tool per stored flow and runs one as a normal server run, with progress and logs', async () => {
    const simple = { ...simpleFlow('simple', 'the draft'), description: 'Drafts a text.' };
    const { url } = await serverWith([simple, slowChain('slow-chain', 1, 10)]);
    const client = await connect(url);
    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => t.name).sort()).toEqual(['simple', 'slow-chain']);
    expect(tools.find((t) => t.name === 'simple')).toMatchObject({
      description: 'Drafts a text.',
      inputSchema: { type: 'object', required: ['input'] },
    });
    const logs: Array<{ level: string; data: { text: string } }> = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logs.push(n.params as (typeof logs)[number]);
    });
    await client.setLoggingLevel('info');
    const progress: Array<{ message?: string }> = [];
    const r = await client.callTool({ name: 'simple', arguments: { input: 'a topic' } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    expect(r.isError).toBeFalsy();
    expect(textOf(r)).toBe('the draft');
    expect(progress.map((p) => p.message)).toContain('node.started writer');
    expect(logs.map((l) => `${l.level} ${l.data.text}`)).toContain('info node.completed writer');
    expect(logs.every((l) => l.level !== 'debug')).toBe(true);
    // In the history like any run, started by MCP.
    const runs = await runsOf('simple');
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      flowId: 'simple',
      status: 'completed',
      source: 'mcp',
      output: 'the draft',
    });
  });

  it('asks through elicitation, fails by name without it or when declined', async () => {
    const { url } = await serverWith([ASK]);
    const yes = await connect(url, {
      elicit: (p) =>
        'answer' in (p as { requestedSchema: { properties: object } }).requestedSchema.properties
          ? { action: 'accept', content: { answer: 'moons' } }
          : { action: 'accept', content: { decision: 'approve' } },
    });
    expect(textOf(await yes.callTool({ name: 'ask-publish', arguments: { input: 'x' } }))).toBe('approve');
    const none = await connect(url);
    const r2 = await none.callTool({ name: 'ask-publish', arguments: { input: 'x' } });
    expect(textOf(r2)).toMatch(/^run failed: human_input_required: human node "topic"/);
    const no = await connect(url, { elicit: () => ({ action: 'decline' }) });
    const r3 = await no.callTool({ name: 'ask-publish', arguments: { input: 'x' } });
    expect(textOf(r3)).toMatch(/^run failed: human_declined: /);
    const runs = (await runsOf('ask-publish')) as Array<{
      status: string;
      error?: { code: string };
    }>;
    expect(runs.map((r) => `${r.status} ${r.error?.code ?? ''}`.trim()).sort()).toEqual([
      'completed',
      'failed human_declined',
      'failed human_input_required',
    ]);
  });

  it('a cancelled call cancels its run', async () => {
    const { url } = await serverWith([slowChain('slow', 1, 60_000)]);
    const client = await connect(url);
    const ac = new AbortController();
    await new Promise<void>((resolve) => {
      void client
        .callTool({ name: 'slow', arguments: { input: 'x' } }, undefined, {
          signal: ac.signal,
          onprogress: (p) => {
            if (p.message === 'turn.started a1') resolve();
          },
        })
        .catch(() => {});
    });
    ac.abort();
    const t0 = Date.now();
    let status = '';
    while (Date.now() - t0 < 20_000) {
      status = (await runsOf('slow'))[0]?.status;
      if (status === 'cancelled') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe('cancelled');
  });

  it('with a token: refused without it, served with it', async () => {
    const { url, port } = await serverWith([simpleFlow('simple')], TOKEN);
    await expect(connect(url)).rejects.toThrow(/401|token/);
    expect((await rawPost(port, {})).status).toBe(401);
    expect((await rawPost(port, { authorization: 'Bearer wrong' })).status).toBe(401);
    const client = await connect(url, { token: TOKEN });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['simple']);
    expect(textOf(await client.callTool({ name: 'simple', arguments: { input: 'x' } }))).toBe('the draft');
  });

  it('refuses a hostile Origin (POST and GET) and a foreign Host', async () => {
    const { port } = await serverWith([simpleFlow('simple')], TOKEN);
    const auth = { authorization: `Bearer ${TOKEN}` };
    const ok = await rawPost(port, auth);
    expect(ok.status).toBe(200); // control: the same request without an Origin passes
    expect((await rawPost(port, { ...auth, origin: `http://127.0.0.1:${port}` })).status).toBe(200);
    const hostile = await rawPost(port, { ...auth, origin: 'https://evil.example' });
    expect(hostile.status).toBe(403);
    expect(hostile.body).toContain('cross-origin');
    const get = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/mcp',
          method: 'GET',
          headers: {
            host: `127.0.0.1:${port}`,
            accept: 'text/event-stream',
            origin: 'https://evil.example',
            ...auth,
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(get).toBe(403);
    expect((await rawPost(port, { ...auth, host: `evil.example:${port}` })).status).toBe(421);
  });

  it('keeps a bounded number of sessions: the least recently used one is closed', async () => {
    const { url } = await serverWith([simpleFlow('simple')], undefined, { mcpSessions: 2 });
    const a = await connect(url);
    const b = await connect(url);
    await a.listTools(); // a is now more recent than b
    const c = await connect(url);
    expect((await a.listTools()).tools).toHaveLength(1);
    expect((await c.listTools()).tools).toHaveLength(1);
    await expect(b.listTools()).rejects.toThrow(/404|session/i);
  });
});
