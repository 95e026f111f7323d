/**
 * Tool-call overhead of Switchboard's MCP client over HTTP: a local streamable-HTTP MCP server
 * (a stock SDK `McpServer` with an `echo` tool on 127.0.0.1), N sequential `tools/call`s
 * (default 1,000, after 50 warm-up calls) through
 * - the SDK's own client with the global fetch (the reference),
 * - `McpConnection` over the guarded outbound fetch (policy: loopback allowed), as a flow's
 *   server with its own Authorization header uses it,
 * - the same with the operator's OAuth store attached (a stored token, as a logged-in server).
 * Prints p50/p99 per call and the difference to the reference; writes results-http.json.
 *
 *   node --conditions=source --import tsx runtime/bench/mcp/http-overhead.ts [N]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { McpConnection } from '../../src/mcp/connection.js';
import { StoredOAuthProvider } from '../../src/mcp/oauth/provider.js';
import { McpAuthStore } from '../../src/mcp/oauth/store.js';
import { createGuardedFetch } from '../../src/net/outbound.js';

const N = Number(process.argv[2] ?? 1000);
const WARM = 50;
const HERE = fileURLToPath(new URL('.', import.meta.url));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const r3 = (x: number) => Math.round(x * 1000) / 1000;

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
}

async function startServer() {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer(async (req, res) => {
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    const sid = req.headers['mcp-session-id'];
    let t = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (!t) {
      const nt: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id: string): void => {
          sessions.set(id, nt);
        },
      });
      const mcp = new McpServer({ name: 'bench', version: '1.0.0' });
      mcp.registerTool('echo', { inputSchema: { text: z.string() } }, async (a) => ({
        content: [{ type: 'text', text: a.text }],
      }));
      await mcp.connect(nt);
      t = nt;
    }
    await t.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    close: () =>
      new Promise<void>((r) => {
        http.close(() => r());
        http.closeAllConnections();
      }),
  };
}

async function measure(call: (i: number) => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < WARM; i++) await call(i);
  const times: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await call(i);
    times.push(performance.now() - t0);
  }
  return times;
}

const server = await startServer();
const dir = mkdtempSync(join(tmpdir(), 'sb-bench-mcp-http-'));
const results: Record<string, { p50: number; p99: number; mean: number }> = {};
const record = (name: string, xs: number[]) => {
  results[name] = {
    p50: r3(pct(xs, 50)),
    p99: r3(pct(xs, 99)),
    mean: r3(xs.reduce((a, b) => a + b, 0) / xs.length),
  };
};
try {
  const sdk = new Client({ name: 'bench', version: '1.0.0' });
  await sdk.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  record(
    'sdk client (reference)',
    await measure((i) => sdk.callTool({ name: 'echo', arguments: { text: `x${i}` } })),
  );
  await sdk.close();

  const signal = new AbortController().signal;
  const plain = new McpConnection({
    kind: 'http',
    key: 'plain',
    label: 'bench',
    url: server.url,
    headers: { authorization: 'Bearer static' },
    fetch: createGuardedFetch({ allowLoopback: true }),
  });
  await plain.listTools();
  record(
    'switchboard client (guarded fetch)',
    await measure((i) => plain.callTool('echo', { text: `x${i}` }, { signal, timeoutMs: 10_000 })),
  );
  await plain.close();

  const store = new McpAuthStore(join(dir, 'mcp-auth'));
  store.write(server.url, {
    tokens: { access_token: 'stored-token', token_type: 'bearer' },
    tokensSavedAt: Date.now(),
  });
  const authed = new McpConnection({
    kind: 'http',
    key: 'authed',
    label: 'bench',
    url: server.url,
    headers: {},
    fetch: createGuardedFetch({ allowLoopback: true }),
    auth: new StoredOAuthProvider({ serverUrl: server.url, store, label: 'bench' }),
  });
  await authed.listTools();
  record(
    'switchboard client (guarded fetch + OAuth store)',
    await measure((i) => authed.callTool('echo', { text: `x${i}` }, { signal, timeoutMs: 10_000 })),
  );
  await authed.close();
} finally {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
const ref = results['sdk client (reference)']!;
console.log(`${N} sequential tools/call over loopback HTTP (ms per call):`);
for (const [name, r] of Object.entries(results))
  console.log(
    `  ${name.padEnd(48)} p50 ${r.p50.toFixed(3)}  p99 ${r.p99.toFixed(3)}  (p50 ${r.p50 - ref.p50 >= 0 ? '+' : ''}${(r.p50 - ref.p50).toFixed(3)})`,
  );
writeFileSync(
  join(HERE, 'results-http.json'),
  `${JSON.stringify({ n: N, at: new Date().toISOString(), results }, null, 2)}\n`,
);
process.exit(0);
