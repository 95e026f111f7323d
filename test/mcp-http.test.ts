/**
 * Streamable HTTP MCP servers, with the npm-published reference server
 * (@modelcontextprotocol/server-everything, `streamableHttp` mode) running as its own process on
 * 127.0.0.1: discovery, calls, progress, timeouts with cancellation, headers resolved from `${env:…}` —
 * and the outbound policy: loopback URLs are refused unless the operator allowed them.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { McpPool } from '../runtime/src/mcp/pool.js';
import { TrustStore } from '../runtime/src/mcp/trust.js';
import { SecretsPolicy } from '../runtime/src/net/secrets.js';
import { createMcpToolHost } from '../runtime/src/tools/mcp-host.js';
import { never, REPO, runContext, tempDir, toolFlow } from './fixtures/mcp/helpers.js';

const EVERYTHING = join(REPO, 'test/node_modules/@modelcontextprotocol/server-everything/dist/index.js');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

let child: ChildProcess;
let url: string;
beforeAll(async () => {
  const port = await freePort();
  child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let err = '';
    const t = setTimeout(() => reject(new Error(`server-everything did not start: ${err}`)), 30_000);
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      if (err.includes('listening on port')) {
        clearTimeout(t);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited ${code}: ${err}`)));
  });
  url = `http://127.0.0.1:${port}/mcp`;
});
afterAll(() => {
  child?.kill('SIGKILL');
});

let tmp: ReturnType<typeof tempDir>;
let pool: McpPool;
let trust: TrustStore;
beforeEach(() => {
  tmp = tempDir('sb-http-');
  pool = new McpPool();
  trust = new TrustStore(join(tmp.dir, 'home', 'trust.json'));
});
afterEach(async () => {
  await pool.close();
  tmp.cleanup();
});

describe('server-everything over streamable HTTP', { timeout: 120_000 }, () => {
  it('is refused on loopback unless the operator allowed it', async () => {
    const host = createMcpToolHost(toolFlow({ ev: { url } }), { pool, trust });
    const err = await host.toolsFor('a1', runContext('h0').ctx).then(
      () => undefined,
      (e: unknown) => e as { code?: string; message: string },
    );
    expect(err?.code).toBe('outbound_refused');
    expect(err?.message).toMatch(/loopback/i);
    expect(err?.message).toContain('--allow-outbound loopback');
  });

  it('discovers tools, calls them, reports progress, and times out with a cancellation', async () => {
    process.env.SB_TEST_HTTP_TOKEN = 'token-from-env';
    try {
      const flow = toolFlow(
        { ev: { url, headers: { 'x-test-token': '${env:SB_TEST_HTTP_TOKEN}' } } },
        { a1: ['ev'] },
        { ev: { include: ['echo', 'get-sum', 'trigger-long-running-operation'] } },
      );
      const host = createMcpToolHost(flow, {
        pool,
        trust,
        outboundPolicy: { allowLoopback: true },
        // The operator lets this header's variable go to the local test server.
        secrets: new SecretsPolicy([['SB_TEST_HTTP_TOKEN', [new URL(url).host]]]),
      });
      const rc = runContext('h1');
      const tools = await host.toolsFor('a1', rc.ctx);
      expect(tools.map((t) => t.name)).toEqual([
        't_ev__echo',
        't_ev__get-sum',
        't_ev__trigger-long-running-operation',
      ]);
      const echo = await tools[0]!.call({ message: 'hello over http' }, { signal: never });
      expect(echo).toMatchObject({ isError: false });
      expect(echo.content).toContain('hello over http');
      expect((await tools[1]!.call({ a: 2, b: 40 }, { signal: never })).content).toContain('42');
      // A schema violation comes back as an error result the agent can read.
      const bad = await tools[1]!.call({ a: 'two' }, { signal: never });
      expect(bad.isError).toBe(true);

      const progress: string[] = [];
      const long = await tools[2]!.call(
        { duration: 1, steps: 4 },
        { signal: never, timeoutMs: 20_000, onLog: (l) => progress.push(l) },
      );
      expect(long.content).toContain('Long running operation completed');
      expect(progress).toEqual(['progress 1/4', 'progress 2/4', 'progress 3/4', 'progress 4/4']);

      const t0 = Date.now();
      const slow = await tools[2]!.call({ duration: 30, steps: 2 }, { signal: never, timeoutMs: 500 });
      expect(slow.content).toMatch(/^mcp\.timeout/);
      expect(Date.now() - t0).toBeLessThan(1500);
      // The session survives the timeout.
      expect((await tools[0]!.call({ message: 'still here' }, { signal: never })).content).toContain(
        'still here',
      );
      // First use pinned every granted tool of the HTTP server.
      expect(trust.getPin(`http:${url}`, 'echo')).toBeDefined();
      await host.release('h1');
    } finally {
      delete process.env.SB_TEST_HTTP_TOKEN;
    }
  });
});
