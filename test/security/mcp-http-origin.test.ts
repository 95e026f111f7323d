/**
 * `switchboard mcp FLOW --http` checks Origin and Host as the main server does: a browser page on
 * another origin (or a rebound DNS name) gets 403 for every method, on a new session and on an
 * existing one; clients without an Origin (the SDK, curl) and our own origin pass.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFlow } from '../../runtime/src/engine/index.js';
import { type FlowHttpServer, serveFlowHttp } from '../../runtime/src/mcp/flow-server.js';
import { simpleFlow } from '../server/helpers.js';

// The server `switchboard mcp FLOW --http PORT` starts (cli/commands/mcp.ts), in this process.
let served: FlowHttpServer;
let port = 0;
beforeAll(async () => {
  served = await serveFlowHttp(
    simpleFlow('served'),
    { runFlow, runOptions: () => ({ humanInput: 'fail' }) },
    0,
  );
  port = served.port;
});
afterAll(async () => {
  await served?.close();
});

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
});

function send(
  method: string,
  headers: Record<string, string>,
  body?: string | Buffer,
): Promise<{ status: number; session: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method,
        headers: {
          host: `127.0.0.1:${port}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (res) => {
        const session = res.headers['mcp-session-id'] as string | undefined;
        // An accepted GET is an event stream that stays open: the status is all we need.
        resolve({ status: res.statusCode ?? 0, session });
        res.destroy();
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const hostile = () => [
  'http://evil.example',
  'https://evil.example',
  `http://evil.example:${port}`,
  'null',
  `http://127.0.0.1.evil.example:${port}`,
  `http://localhost.evil.example:${port}`,
  `http://127.0.0.1:${port + 1}`,
  `http://localhost:${port + 1}`,
  'http://127.0.0.1',
  'http://localhost',
  `https://127.0.0.1:${port}`,
  `http://[::1]:${port}`,
  `http://0.0.0.0:${port}`,
  `http://127.0.0.2:${port}`,
  `HTTP://127.0.0.1:${port}`,
  `http://127.0.0.1:${port}/`,
  'file://',
  'chrome-extension://abcdefghijklmnop',
  `http://user@127.0.0.1:${port}`,
];

describe('switchboard mcp FLOW --http', { timeout: 120_000 }, () => {
  it('refuses every hostile Origin when a session starts', async () => {
    const accepted: string[] = [];
    for (const origin of hostile()) {
      const r = await send('POST', { origin }, INIT);
      if (r.status !== 403) accepted.push(`${origin} → ${r.status}`);
    }
    expect(accepted).toEqual([]);
    // Controls: no Origin (a non-browser client) and our own origins pass.
    expect((await send('POST', {}, INIT)).status).toBe(200);
    expect((await send('POST', { origin: `http://127.0.0.1:${port}` }, INIT)).status).toBe(200);
    expect((await send('POST', { origin: `http://localhost:${port}` }, INIT)).status).toBe(200);
  });

  it('refuses hostile Origins on an existing session, for every method', async () => {
    const { session } = await send('POST', {}, INIT);
    expect(session).toBeTruthy();
    const sid = { 'mcp-session-id': session!, 'mcp-protocol-version': '2025-06-18' };
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
    for (const origin of hostile()) {
      expect((await send('POST', { ...sid, origin }, list)).status, origin).toBe(403);
      expect((await send('GET', { ...sid, origin })).status, origin).toBe(403);
      expect((await send('DELETE', { ...sid, origin })).status, origin).toBe(403);
    }
    // The session is still there for its own client.
    expect((await send('POST', sid, list)).status).toBe(200);
  });

  it('refuses a body that is not UTF-8 (never replaced by U+FFFD)', async () => {
    const { session } = await send('POST', {}, INIT);
    const call = Buffer.concat([
      Buffer.from(
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"served","arguments":{"input":"',
      ),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}}}'),
    ]);
    const r = await send('POST', { 'mcp-session-id': session!, 'mcp-protocol-version': '2025-06-18' }, call);
    expect(r.status).toBe(400);
  });

  it('refuses a hostile Host (DNS rebinding) before anything else', async () => {
    for (const host of [`evil.example:${port}`, `127.0.0.1:${port + 1}`, 'localhost', `[::1]:${port}`])
      expect((await send('POST', { host }, INIT)).status, host).toBe(403);
  });
});
