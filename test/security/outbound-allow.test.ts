/**
 * Issue 19, part 1: operator-controlled outbound destinations. A local MCP server over streamable
 * HTTP (the reference SDK's server transport, on 127.0.0.1) is refused by `switchboard run`
 * without the operator's say — by name (`outbound_refused`, the host, the flag that would allow
 * it), once, without retries — and reached with `--allow-outbound loopback` or
 * `SWITCHBOARD_ALLOW_OUTBOUND=loopback`. The CLI runs as a real process.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Server as McpServer } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Flow } from '@switchboard/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpPool } from '../../runtime/src/mcp/pool.js';
import { TrustStore } from '../../runtime/src/mcp/trust.js';
import { outboundPolicyFrom } from '../../runtime/src/net/destinations.js';
import { createMcpToolHost } from '../../runtime/src/tools/mcp-host.js';
import { never, runContext, tempDir, toolFlow } from '../fixtures/mcp/helpers.js';
import { runCli } from './helpers.js';
import { startListener } from './listener.js';

let http: Server;
let mcpUrl: string;
let port: number;
let requests = 0;
const calls: string[] = [];
let tmp: ReturnType<typeof tempDir>;
let flowFile: string;

function echoServer(): McpServer {
  const server = new McpServer({ name: 'local-echo', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: 'echo',
        description: 'Echo a text.',
        inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (r) => {
    const text = String((r.params.arguments as { text?: unknown } | undefined)?.text ?? '');
    calls.push(text);
    return { content: [{ type: 'text', text: `echo: ${text}` }] };
  });
  return server;
}

beforeAll(async () => {
  tmp = tempDir('sb-sec-outbound-');
  http = createServer(async (req, res) => {
    requests++;
    // Stateless: one server and transport per request, as the SDK's examples do.
    const server = echoServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  port = (http.address() as AddressInfo).port;
  mcpUrl = `http://localhost:${port}/mcp`;
  const flow: Flow = {
    version: 1,
    id: 'local-mcp',
    name: 'local MCP over HTTP',
    models: {
      default: {
        provider: 'scripted',
        script: [
          { node: 'a', toolCalls: [{ name: 'local__echo', args: { text: 'over http' } }] },
          { fallback: true, text: 'done' },
        ],
      },
    },
    mcpServers: { srv: { url: mcpUrl } },
    nodes: [
      { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
      { id: 'local', kind: 'tool', position: { x: 0, y: 1 }, config: { server: 'srv' } },
      {
        id: 'a',
        kind: 'agent',
        position: { x: 1, y: 0 },
        config: { role: 'r', model: 'default', prompt: [{ text: 'x' }] },
      },
      { id: 'end', kind: 'end', position: { x: 2, y: 0 }, config: {} },
    ],
    edges: [
      { id: 'e1', kind: 'handover', source: 'start', target: 'a' },
      { id: 'g', kind: 'tools', source: 'local', target: 'a' },
      { id: 'e2', kind: 'handover', source: 'a', target: 'end' },
    ],
  };
  flowFile = join(tmp.dir, 'local-mcp.json');
  writeFileSync(flowFile, JSON.stringify(flow));
});
afterAll(async () => {
  http?.closeAllConnections();
  await new Promise<void>((r) => (http ? http.close(() => r()) : r()));
  tmp?.cleanup();
});

const baseEnv = () => ({
  PATH: process.env.PATH ?? '',
  HOME: tmp.dir,
  SWITCHBOARD_HOME: join(tmp.dir, 'home'),
});
const events = (out: string) =>
  out
    .split('\n')
    .filter(Boolean)
    .map(
      (l) =>
        JSON.parse(l) as {
          type: string;
          level?: string;
          text?: string;
          error?: { code: string; message: string };
        },
    );

describe('switchboard run and a local MCP server over HTTP', { timeout: 120_000 }, () => {
  it('is refused by name without --allow-outbound, never contacted and not retried', async () => {
    const r = await runCli(['run', flowFile, '--input', 'go', '--events', 'jsonl'], baseEnv());
    expect(r.code, r.err).toBe(1);
    const ev = events(r.out);
    const failed = ev.find((e) => e.type === 'run.failed');
    expect(failed?.error?.code).toBe('outbound_refused');
    expect(failed?.error?.message).toContain(`localhost is a loopback address`);
    expect(failed?.error?.message).toContain(
      `--allow-outbound loopback (or --allow-outbound localhost:${port})`,
    );
    expect(ev.filter((e) => e.type === 'log' && /retrying/.test(e.text ?? ''))).toEqual([]);
    expect(
      ev.filter((e) => e.type === 'node.started' && (e as { nodeId?: string }).nodeId === 'a'),
    ).toHaveLength(1);
    expect(requests).toBe(0);
  });

  it('is reached with --allow-outbound loopback, and with SWITCHBOARD_ALLOW_OUTBOUND', async () => {
    const r = await runCli(['run', flowFile, '--input', 'go', '--allow-outbound', 'loopback'], baseEnv());
    expect(r.code, r.err).toBe(0);
    expect(r.out.trim()).toBe('done');
    expect(calls).toEqual(['over http']);
    const viaEnv = await runCli(['run', flowFile, '--input', 'go'], {
      ...baseEnv(),
      SWITCHBOARD_ALLOW_OUTBOUND: `localhost:${port}`,
    });
    expect(viaEnv.code, viaEnv.err).toBe(0);
    expect(calls).toEqual(['over http', 'over http']);
  });

  it('a bad --allow-outbound value is a usage error naming it', async () => {
    const r = await runCli(
      ['run', flowFile, '--input', 'go', '--allow-outbound', 'localhost:port'],
      baseEnv(),
    );
    expect(r.code).toBe(2);
    expect(r.err).toContain('--allow-outbound "localhost:port"');
  });
});

describe('the http built-in under the same operator policy', { timeout: 60_000 }, () => {
  it('reaches exactly the HOST:PORT the operator allowed', async () => {
    const allowed = await startListener();
    const other = await startListener();
    const pool = new McpPool();
    try {
      const host = createMcpToolHost(
        toolFlow({ web: { builtin: 'http', options: { allowHosts: ['127.0.0.1'] } } }),
        {
          pool,
          trust: new TrustStore(join(tmp.dir, 'home', 'trust.json')),
          outboundPolicy: outboundPolicyFrom([allowed.host]),
        },
      );
      const tools = await host.toolsFor('a1', runContext('http-op', join(tmp.dir, 'd')).ctx);
      const get = tools.find((t) => t.remoteName === 'http_get')!;
      const ok = await get.call({ url: `${allowed.url}/x` }, { signal: never });
      expect(ok.content).toContain('HTTP 401'); // reached: the listener answered
      const refused = await get.call({ url: `${other.url}/x` }, { signal: never });
      expect(refused.isError).toBe(true);
      expect(refused.content).toContain('outbound_refused');
      expect(refused.content).toContain(
        `--allow-outbound loopback (or --allow-outbound 127.0.0.1:${other.port})`,
      );
      expect(allowed.seen).toHaveLength(1);
      expect(other.seen).toEqual([]);
    } finally {
      await pool.close();
      await allowed.close();
      await other.close();
    }
  });
});
