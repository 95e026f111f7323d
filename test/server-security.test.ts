import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  allowedHostsFor,
  createServer,
  PUBLIC_ROUTES,
  tokenMatches,
  tokenProblem,
} from '../runtime/src/server/index.js';
import { simpleFlow, tempDir, testServer } from './server/helpers.js';

const TOKEN = randomBytes(32).toString('hex');
type S = Awaited<ReturnType<typeof testServer>>;
let s: S | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

/** Every route with sample parameters, from the server's own OpenAPI document. */
async function inventory(srv: S): Promise<Array<{ method: string; url: string; ws: boolean }>> {
  const doc = (
    await srv.req({
      method: 'GET',
      url: '/api/openapi.json',
      headers: { host: 'sb.test:5170', authorization: `Bearer ${TOKEN}` },
    })
  ).json();
  const out: Array<{ method: string; url: string; ws: boolean }> = [];
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>))
    for (const method of Object.keys(ops))
      out.push({
        method: method.toUpperCase(),
        url: path.replace('{id}', 'simple').replace('{room}', 'simple'),
        ws: path === '/api/ws' || path.startsWith('/api/yjs/'),
      });
  return out;
}

describe('configuration', () => {
  it('refuses a non-loopback bind without a strong token', async () => {
    const { dir, cleanup } = tempDir();
    await expect(createServer({ dataDir: dir, host: '0.0.0.0', editorDir: false, env: {} })).rejects.toThrow(
      /SWITCHBOARD_TOKEN is required/,
    );
    for (const weak of ['secret', 'a'.repeat(64), '0123456789abcdef', 'password1234567890'])
      await expect(
        createServer({ dataDir: dir, host: '0.0.0.0', token: weak, editorDir: false }),
      ).rejects.toThrow(/too weak/);
    expect(tokenProblem(TOKEN)).toBeUndefined();
    expect(tokenProblem(randomBytes(16).toString('base64url'))).toBeUndefined();
    expect(tokenMatches(TOKEN, TOKEN)).toBe(true);
    expect(tokenMatches(TOKEN, `${TOKEN}x`)).toBe(false);
    expect(tokenMatches(TOKEN, undefined)).toBe(false);
    cleanup();
  });
});

describe('logs', () => {
  it('never contain a token given as ?token=', async () => {
    const lines: string[] = [];
    const stream = { write: (l: string) => void lines.push(l) };
    s = await testServer({ port: 0, token: TOKEN, logger: { level: 'info', stream } as never });
    const { port } = await s.listen();
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/ws?token=${TOKEN}`, {
      origin: `http://127.0.0.1:${port}`,
    });
    await new Promise((r) => ws.once('open', r));
    ws.close();
    const bad = new WebSocket(`ws://127.0.0.1:${port}/api/ws?token=${TOKEN}x`, {
      origin: `http://127.0.0.1:${port}`,
    });
    await new Promise((r) => bad.once('unexpected-response', (q) => r(q.destroy())));
    await new Promise((r) => setTimeout(r, 100));
    expect(lines.join('').length).toBeGreaterThan(0);
    expect(lines.join('')).toContain('token=[redacted]');
    expect(lines.join('')).not.toContain(TOKEN);
  });
});

describe('route inventory on a non-loopback bind', () => {
  it('refuses every route and upgrade without a valid token, except the public list', async () => {
    s = await testServer({ host: '0.0.0.0', token: TOKEN, allowedHosts: ['sb.test:5170'] });
    const host = 'sb.test:5170';
    await s.req({
      method: 'PUT',
      url: '/api/flows/simple',
      payload: JSON.stringify(simpleFlow()),
      headers: { host, 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    });
    const routes = await inventory(s);
    expect(routes.length).toBeGreaterThanOrEqual(14);
    const bad: Array<Record<string, string>> = [
      {},
      { authorization: '' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer ' },
      { authorization: 'Bearer wrong' },
      { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
      { authorization: `Bearer ${TOKEN.toUpperCase()}` },
      { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` },
      { authorization: `Token ${TOKEN}` },
      { cookie: `token=${TOKEN}` },
      { 'x-switchboard-token': TOKEN },
    ];
    let refused = 0;
    let total = 0;
    for (const r of routes) {
      const isPublic = PUBLIC_ROUTES.has(`${r.method} ${r.url}`);
      for (const h of bad) {
        const extra: Record<string, string> = r.ws
          ? {
              connection: 'upgrade',
              upgrade: 'websocket',
              origin: 'http://sb.test:5170',
              'sec-websocket-version': '13',
              'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
            }
          : {};
        const res = await s.req({
          method: r.method,
          url: r.url,
          payload: r.method === 'GET' || r.method === 'DELETE' ? undefined : '{}',
          headers: { host, 'content-type': 'application/json', ...extra, ...h },
          // Spread the attempts over many addresses so the rate limit does not mask the verdicts.
          remoteAddress: `10.0.${total >> 8}.${total & 255}`,
        });
        total++;
        if (isPublic) expect(res.statusCode, `${r.method} ${r.url}`).toBe(200);
        else {
          expect(res.statusCode, `${r.method} ${r.url} ${JSON.stringify(h)}`).toBe(401);
          expect(res.json().error.code).toBe('unauthorized');
          refused++;
        }
      }
    }
    expect(refused).toBe(total - bad.length * [...PUBLIC_ROUTES].filter((p) => p.startsWith('GET')).length);
    // Unknown paths too.
    const r404 = await s.req({ method: 'GET', url: '/api/nope', headers: { host } });
    expect(r404.statusCode).toBe(401);
    // And with the token, things work.
    const ok = await s.req({
      method: 'GET',
      url: '/api/flows',
      headers: { host, authorization: `Bearer ${TOKEN}` },
    });
    expect(ok.statusCode).toBe(200);
  });

  it('rate-limits failed attempts per socket address; x-forwarded-for does not reset it', async () => {
    s = await testServer({ host: '0.0.0.0', token: TOKEN, allowedHosts: ['sb.test:5170'] });
    const host = 'sb.test:5170';
    const codes: number[] = [];
    for (let i = 0; i < 15; i++) {
      const r = await s.req({
        method: 'GET',
        url: '/api/flows',
        headers: {
          host,
          authorization: 'Bearer nope',
          'x-forwarded-for': `1.2.3.${i}`,
          'x-real-ip': `1.2.3.${i}`,
        },
        remoteAddress: '10.9.9.9',
      });
      codes.push(r.statusCode);
    }
    expect(codes.slice(0, 10).every((c) => c === 401)).toBe(true);
    expect(codes.slice(10).every((c) => c === 429)).toBe(true);
    // Even the right token waits out the window from that address.
    const r = await s.req({
      method: 'GET',
      url: '/api/flows',
      headers: { host, authorization: `Bearer ${TOKEN}` },
      remoteAddress: '10.9.9.9',
    });
    expect(r.statusCode).toBe(429);
    const other = await s.req({
      method: 'GET',
      url: '/api/flows',
      headers: { host, authorization: `Bearer ${TOKEN}` },
      remoteAddress: '10.9.9.10',
    });
    expect(other.statusCode).toBe(200);
  });
});

describe('Origin and Host checks (loopback bind)', () => {
  const hostileOrigins = (port: number) => [
    undefined,
    'null',
    'http://localhost.evil.test',
    `http://localhost.evil.test:${port}`,
    `http://127.0.0.1:${port + 1}`,
    `http://localhost:${port + 1}`,
    `http://10.0.0.1:${port}`,
    `http://[::2]:${port}`,
    `http://0.0.0.0:${port}`,
    `https://127.0.0.1:${port}`,
    `ws://127.0.0.1:${port}`,
    `http://localhost.:${port}`,
    `http://LOCALHOST:${port}`,
    `http://127.0.0.1:${port}.evil.test`,
    `http://evil.test/http://127.0.0.1:${port}`,
    `http://127.0.0.1:${port}@evil.test`,
    'file://',
    `http://127.0.0.1.nip.io:${port}`,
    `http://2130706433:${port}`,
  ];
  const hostileHosts = (port: number) => [
    undefined,
    '',
    'evil.test',
    `evil.test:${port}`,
    `localhost.evil.test:${port}`,
    `127.0.0.1:${port + 1}`,
    `localhost.:${port}`,
    `LOCALHOST:${port}`,
    `127.0.0.1.:${port}`,
    `0.0.0.0:${port}`,
    `[::ffff:127.0.0.1]:${port}`,
    `2130706433:${port}`,
    `127.0.0.1:${port}@evil.test`,
    `127.0.0.1:${port} `,
    `10.0.0.1:${port}`,
  ];

  it('refuses every hostile Origin on WebSocket upgrades, and every hostile Host, even with spoofed x-forwarded-*', async () => {
    s = await testServer({ port: 0 });
    const { port } = await s.listen();
    const good = `http://127.0.0.1:${port}`;
    const tryUpgrade = (path: string, headers: Record<string, string>) =>
      new Promise<number>((res) => {
        const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, { headers });
        ws.on('open', () => {
          ws.close();
          res(101);
        });
        ws.on('unexpected-response', (q, r) => {
          res(r.statusCode ?? 0);
          q.destroy();
        });
        ws.on('error', () => res(-1));
      });
    const spoof = {
      'x-forwarded-host': `127.0.0.1:${port}`,
      'x-forwarded-proto': 'http',
      'x-forwarded-for': '127.0.0.1',
      forwarded: `host=127.0.0.1:${port}`,
    };
    let attempts = 0;
    for (const path of ['/api/ws', '/api/yjs/simple']) {
      for (const o of hostileOrigins(port)) {
        const h: Record<string, string> = { ...spoof };
        if (o !== undefined) h.origin = o;
        const code = await tryUpgrade(path, h);
        attempts++;
        expect(code, `${path} origin ${o}`).toBe(403);
      }
      // The raw-socket Host variants (ws sets Host itself, so override through headers).
      for (const host of hostileHosts(port).filter((x) => x !== undefined && x !== '' && !/\s/.test(x))) {
        const code = await tryUpgrade(path, { origin: good, host: host!, ...spoof });
        attempts++;
        expect(code, `${path} host ${host}`).toBe(421);
      }
      expect(await tryUpgrade(path, { origin: good })).toBe(101);
    }
    expect(attempts).toBeGreaterThanOrEqual(30);
  });

  it('refuses state-changing requests with a hostile Origin or Host; the spoofed headers change nothing', async () => {
    s = await testServer();
    const port = 5170;
    const body = JSON.stringify(simpleFlow('x'));
    const writes = [
      { method: 'POST', url: '/api/flows' },
      { method: 'PUT', url: '/api/flows/x' },
      { method: 'DELETE', url: '/api/flows/x' },
      { method: 'POST', url: '/api/flows/import' },
      { method: 'POST', url: '/api/runs' },
      { method: 'POST', url: '/api/runs/r_1/commands' },
    ];
    const spoof = {
      'x-forwarded-host': `127.0.0.1:${port}`,
      'x-forwarded-proto': 'http',
      'x-forwarded-for': '127.0.0.1',
      'x-real-ip': '127.0.0.1',
    };
    for (const w of writes) {
      for (const o of hostileOrigins(port).filter((x) => x !== undefined)) {
        const r = await s.req({
          ...w,
          payload: body,
          headers: { 'content-type': 'application/json', origin: o!, ...spoof },
        });
        expect(r.statusCode, `${w.method} ${w.url} origin ${o}`).toBe(403);
      }
      for (const h of hostileHosts(port)) {
        const headers: Record<string, string> = { 'content-type': 'application/json', ...spoof };
        const r = (await s.app.inject({
          ...w,
          payload: body,
          headers: h === undefined ? headers : { ...headers, host: h },
        } as never)) as unknown as { statusCode: number };
        expect(r.statusCode, `${w.method} ${w.url} host ${h}`).toBe(421);
      }
    }
    expect(s.store.catalog.data.flows.x).toBeUndefined();
    // A simple cross-site form post (no preflight) cannot reach a handler: not JSON.
    const form = await s.req({
      method: 'POST',
      url: '/api/flows',
      payload: 'a=1',
      headers: { 'content-type': 'text/plain' },
    });
    expect(form.statusCode).toBe(415);
    // Same-origin and non-browser clients (no Origin) are served.
    const ok = await s.req({
      method: 'POST',
      url: '/api/flows',
      payload: body,
      headers: { 'content-type': 'application/json', origin: `http://127.0.0.1:${port}` },
    });
    expect(ok.statusCode).toBe(201);
  });

  it('knows its own names on loopback', () => {
    expect([...allowedHostsFor('127.0.0.1', 5170)].sort()).toEqual([
      '127.0.0.1:5170',
      '[::1]:5170',
      'localhost:5170',
    ]);
  });
});
