/**
 * SSRF through the tools: 45 URL variants (metadata IP, IPv4-mapped IPv6, decimal/octal/hex IPs,
 * `127.1`, `0.0.0.0`, `[::1]`, private ranges, non-http schemes) given to the `http` built-in
 * and used as MCP HTTP server URLs are all refused under the default policy, before any
 * connection; redirects from an allowed host to internal addresses are refused too. With the
 * operator's allowLoopback, the loopback forms do reach a real local server (the control).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpPool } from '../runtime/src/mcp/pool.js';
import { TrustStore } from '../runtime/src/mcp/trust.js';
import { createMcpToolHost } from '../runtime/src/tools/mcp-host.js';
import type { ToolHandle } from '../runtime/src/tools/types.js';
import { never, runContext, tempDir, toolFlow } from './fixtures/mcp/helpers.js';

let server: Server;
let port: number;
let hits = 0;
let tmp: ReturnType<typeof tempDir>;
let trust: TrustStore;
const pools: McpPool[] = [];

beforeAll(async () => {
  tmp = tempDir('sb-ssrf-');
  trust = new TrustStore(join(tmp.dir, 'trust.json'));
  server = createServer((req, res) => {
    hits++;
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/redirect') {
      res.writeHead(302, { location: url.searchParams.get('to') ?? '/' });
      res.end();
      return;
    }
    res.end('local secret page');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  for (const p of pools) await p.close();
  await new Promise<void>((r) => server.close(() => r()));
  tmp.cleanup();
});

function variants(): string[] {
  const p = port;
  return [
    'http://169.254.169.254/latest/meta-data/',
    'http://0xa9fea9fe/',
    'http://2852039166/',
    'http://0251.0376.0251.0376/',
    'http://[::ffff:169.254.169.254]/',
    'http://[::ffff:a9fe:a9fe]/',
    'http://[fe80::1]/',
    'http://[fd00:ec2::254]/',
    `http://127.0.0.1:${p}/`,
    `https://127.0.0.1:${p}/`,
    `http://127.1:${p}/`,
    `http://127.0.1:${p}/`,
    `http://2130706433:${p}/`,
    `http://0x7f000001:${p}/`,
    `http://0x7f.1:${p}/`,
    `http://0177.0.0.1:${p}/`,
    `http://017700000001:${p}/`,
    `http://0.0.0.0:${p}/`,
    `http://0:${p}/`,
    `http://[::]:${p}/`,
    `http://[::1]:${p}/`,
    `http://[::ffff:127.0.0.1]:${p}/`,
    `http://[::ffff:7f00:1]:${p}/`,
    `http://[0:0:0:0:0:ffff:127.0.0.1]:${p}/`,
    `http://localhost:${p}/`,
    `http://LOCALHOST.:${p}/`,
    'http://10.0.0.1/',
    'http://172.16.0.1/',
    'http://172.31.255.255/',
    'http://192.168.1.1/',
    'http://3232235777/',
    'http://100.64.0.1/',
    'http://[fc00::1]/',
    'http://[fd12:3456:789a::1]/',
    'http://[::ffff:10.0.0.1]/',
    'http://[::127.0.0.1]/',
    'http://255.255.255.255/',
    'http://224.0.0.1/',
    'file:///etc/passwd',
    `gopher://127.0.0.1:${p}/_INFO`,
    'data:text/plain,hello',
    'ftp://example.com/',
    `dict://127.0.0.1:${p}/`,
    `http://user:pass@127.0.0.1:${p}/`,
    'not a url',
  ];
}

async function httpTool(policy?: { allowLoopback?: boolean }): Promise<ToolHandle> {
  const pool = new McpPool();
  pools.push(pool);
  const host = createMcpToolHost(toolFlow({ web: { builtin: 'http', options: { allowHosts: ['*'] } } }), {
    pool,
    trust,
    ...(policy ? { outboundPolicy: policy } : {}),
  });
  const tools = await host.toolsFor('a1', runContext(`r${pools.length}`, join(tmp.dir, 'd')).ctx);
  return tools.find((t) => t.remoteName === 'http_get')!;
}

describe('SSRF through the http built-in and MCP HTTP URLs', () => {
  it('refuses all 45 variants through the http tool under the default policy', async () => {
    const get = await httpTool();
    const list = variants();
    expect(list.length).toBeGreaterThanOrEqual(40);
    const passed: string[] = [];
    for (const url of list) {
      const r = await get.call({ url }, { signal: never });
      if (!r.isError || !/refused|not a valid URL/.test(r.content))
        passed.push(`${url} → ${r.content.slice(0, 100)}`);
    }
    expect(passed).toEqual([]);
    expect(hits).toBe(0);
  });

  it('refuses all 45 variants as MCP streamable HTTP server URLs', async () => {
    const passed: string[] = [];
    for (const [i, url] of variants().entries()) {
      const pool = new McpPool();
      const host = createMcpToolHost(toolFlow({ remote: { url } }), { pool, trust });
      const err = await host.toolsFor('a1', runContext(`m${i}`).ctx).then(
        () => undefined,
        (e: unknown) => e as { code?: string; message: string },
      );
      await pool.close();
      if (!err || !/refused|not a valid URL/.test(err.message))
        passed.push(`${url} → ${err?.message ?? 'connected'}`);
    }
    expect(passed).toEqual([]);
    expect(hits).toBe(0);
  });

  it('control: with allowLoopback the loopback forms reach the local server; redirects inward are still refused', async () => {
    const get = await httpTool({ allowLoopback: true });
    for (const url of [
      `http://127.0.0.1:${port}/`,
      `http://127.1:${port}/`,
      `http://0x7f000001:${port}/`,
      `http://localhost:${port}/`,
    ]) {
      const r = await get.call({ url }, { signal: never });
      expect(r.content, url).toContain('local secret page');
    }
    expect(hits).toBe(4);
    for (const to of [
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/',
      'http://[::ffff:a9fe:a9fe]/',
      'file:///etc/passwd',
    ]) {
      const r = await get.call(
        { url: `http://127.0.0.1:${port}/redirect?to=${encodeURIComponent(to)}` },
        { signal: never },
      );
      expect(r.isError, to).toBe(true);
      expect(r.content).toMatch(/refused/);
    }
  });
});
