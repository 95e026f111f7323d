import { randomBytes } from 'node:crypto';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
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
const cleanups: Array<() => void> = [];
afterEach(async () => {
  await s?.close();
  s = undefined;
  for (const c of cleanups.splice(0)) c();
});

const SECRET = 'SECRET-that-must-never-be-served';
const INDEX =
  '<!doctype html><title>Switchboard</title><script type="module" src="/assets/app-1.js"></script>\n';

/**
 * An editor build with traps around it: dotfiles, a symlinked file and folder pointing outside,
 * an `api/` folder, a name the router would read as a pattern, and a secret next to the build.
 */
function editorFixture(dir: string): string {
  const root = join(dir, 'editor');
  mkdirSync(join(root, 'assets'), { recursive: true });
  mkdirSync(join(root, '.git'));
  mkdirSync(join(root, 'api'));
  mkdirSync(join(dir, 'outside'));
  writeFileSync(join(root, 'index.html'), INDEX);
  writeFileSync(join(root, 'assets', 'app-1.js'), 'console.log("editor");\n');
  writeFileSync(join(root, 'assets', 'app-1.js.map'), '{"version":3,"sources":["../src/main.tsx"]}');
  writeFileSync(join(root, 'assets', '.hidden'), SECRET);
  writeFileSync(join(root, '.env'), SECRET);
  writeFileSync(join(root, '.git', 'config'), SECRET);
  writeFileSync(join(root, 'api', 'flows.json'), SECRET);
  writeFileSync(join(root, 'we:ird.js'), SECRET);
  writeFileSync(join(dir, 'outside', 'secret.txt'), SECRET);
  symlinkSync(join(dir, 'outside', 'secret.txt'), join(root, 'secret-link.txt'));
  symlinkSync(join(dir, 'outside'), join(root, 'linked'));
  return root;
}

/** A raw GET over a real socket: the path goes out exactly as written (no URL normalising). */
function rawGet(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

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
  // The editor's build: public for GET and HEAD, never for an upgrade.
  for (const url of srv.editorRoutes) {
    out.push({ method: 'GET', url, ws: false }, { method: 'HEAD', url, ws: false });
    out.push({ method: 'GET', url, ws: true });
  }
  return out;
}

const isPublicRoute = (srv: S, r: { method: string; url: string; ws: boolean }) =>
  !r.ws && (PUBLIC_ROUTES.has(`${r.method} ${r.url}`) || srv.editorRoutes.has(r.url));

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
  it('refuses every route and upgrade without a valid token, except health and the editor’s build', async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    s = await testServer({
      host: '0.0.0.0',
      token: TOKEN,
      allowedHosts: ['sb.test:5170'],
      editorDir: editorFixture(dir),
      // Thousands of wrong tokens on purpose: the limits (per /24 and global) would mask the
      // verdicts; test/security/token-limits.test.ts covers them.
      authLimits: { perPrefix: 1e9, global: 1e9 },
    });
    // The public list: health and exactly the build's regular files (and `/`), nothing else.
    expect([...s.editorRoutes].sort()).toEqual([
      '/',
      '/assets/app-1.js',
      '/assets/app-1.js.map',
      '/index.html',
    ]);
    const host = 'sb.test:5170';
    await s.req({
      method: 'PUT',
      url: '/api/flows/simple',
      payload: JSON.stringify(simpleFlow()),
      headers: { host, 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    });
    const routes = await inventory(s);
    expect(routes.length).toBeGreaterThanOrEqual(14 + 3 * 4);
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
    let publicAttempts = 0;
    for (const r of routes) {
      const isPublic = isPublicRoute(s, r);
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
        if (isPublic && r.url === '/api/mcp-auth/callback') {
          // Public so that a browser back from an OAuth provider reaches it; without the state
          // of a login in progress it does nothing and says so.
          publicAttempts++;
          expect(res.statusCode, `${r.method} ${r.url}`).toBe(400);
          expect(res.body).toContain('no login is waiting for this callback');
        } else if (isPublic) {
          publicAttempts++;
          expect(res.statusCode, `${r.method} ${r.url}`).toBe(200);
          expect(res.body).not.toContain(SECRET);
          expect(res.headers['set-cookie']).toBeUndefined();
        } else {
          expect(res.statusCode, `${r.method} ${r.url} ${JSON.stringify(h)}`).toBe(401);
          expect(res.json().error.code).toBe('unauthorized');
          refused++;
        }
      }
    }
    expect(refused).toBe(total - publicAttempts);
    // health, the Connect callback, and the build's four files (GET and HEAD).
    expect(publicAttempts).toBe(bad.length * (2 + 2 * 4));
    // Unknown API paths too, however spelled: never the page, never a 404 that tells what exists.
    for (const url of [
      '/api/nope',
      '/api',
      '/API/flows',
      '/Api/nope',
      '/%61pi/flows',
      '/api%2Fflows',
      '//api/flows',
    ]) {
      const r = await s.req({
        method: 'GET',
        url,
        headers: { host },
        remoteAddress: `10.1.0.${total++ & 255}`,
      });
      expect(r.statusCode, url).toBe(401);
      expect(r.body, url).not.toContain('<!doctype');
    }
    // Other methods on the page's paths are not public.
    for (const method of ['POST', 'PUT', 'DELETE'] as const) {
      const r = await s.req({
        method,
        url: '/',
        payload: '{}',
        headers: { host, 'content-type': 'application/json' },
        remoteAddress: `10.2.0.${total++ & 255}`,
      });
      expect(r.statusCode, method).toBe(401);
    }
    // And with the token, things work.
    const ok = await s.req({
      method: 'GET',
      url: '/api/flows',
      headers: { host, authorization: `Bearer ${TOKEN}` },
    });
    expect(ok.statusCode).toBe(200);
  });

  it('rate-limits failed attempts per socket address; x-forwarded-for does not reset it; the valid token passes', async () => {
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
    // The right token is never refused, even from that address (test/security/token-limits.test.ts).
    const r = await s.req({
      method: 'GET',
      url: '/api/flows',
      headers: { host, authorization: `Bearer ${TOKEN}` },
      remoteAddress: '10.9.9.9',
    });
    expect(r.statusCode).toBe(200);
    const other = await s.req({
      method: 'GET',
      url: '/api/flows',
      headers: { host, authorization: `Bearer ${TOKEN}` },
      remoteAddress: '10.9.9.10',
    });
    expect(other.statusCode).toBe(200);
  });
});

describe('the editor’s build, served without the token', () => {
  it('serves only the build: no dotfiles, symlinks, listings, traversal or API paths, over a real socket', async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    // Token mode forced on a loopback bind (as on any other address).
    s = await testServer({ port: 0, token: TOKEN, editorDir: editorFixture(dir) });
    const { port } = await s.listen();
    const get = (path: string, headers: Record<string, string> = {}) =>
      rawGet(port, path, { host: `127.0.0.1:${port}`, ...headers });
    const page = await get('/?token=whatever&flow=x');
    expect(page.status).toBe(200);
    expect(page.body).toBe(INDEX);
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect((await get('/assets/app-1.js')).body).toContain('editor');
    expect((await get('/assets/app-1.js.map')).body).toContain('../src/main.tsx');
    const probes = [
      '/.env',
      '/.git/config',
      '/assets/.hidden',
      '/secret-link.txt',
      '/linked/secret.txt',
      '/we:ird.js',
      '/we%3Aird.js',
      '/assets/',
      '/assets',
      '/linked/',
      '/assets/../../outside/secret.txt',
      '/../outside/secret.txt',
      '/%2e%2e/outside/secret.txt',
      '/assets/%2e%2e/%2e%2e/outside/secret.txt',
      '/..%2foutside%2fsecret.txt',
      '/assets/..%2f..%2foutside%2fsecret.txt',
      '/%2e%2e%5coutside%5csecret.txt',
      '/assets/app-1.js/../../outside/secret.txt',
      '/index.html%00.txt',
      '/%252e%252e/outside/secret.txt',
      '/editor/../outside/secret.txt',
      '/outside/secret.txt',
    ];
    for (const p of probes) {
      const r = await get(p);
      expect(r.body, p).not.toContain(SECRET);
      // Whatever is not a build file gets the page (the editor's own addresses) or a refusal.
      if (r.status === 200) expect(r.body, p).toBe(INDEX);
      else expect([400, 401, 404], p).toContain(r.status);
    }
    // The fallback never answers under /api, with or without the token.
    for (const p of [
      '/api/nope',
      '/api/',
      '/API/x',
      '/%61pi/x',
      '//api/flows',
      '/api/flows.json',
      '/api/x.json',
    ]) {
      const bare = await get(p);
      expect(bare.status, p).toBe(401);
      const authed = await get(p, { authorization: `Bearer ${TOKEN}` });
      expect(authed.body, p).not.toContain('<!doctype');
      expect(authed.body, p).not.toContain(SECRET);
      expect([200, 404], p).toContain(authed.status);
    }
    // An upgrade on a page path needs the token like any other.
    const up = await get('/', {
      connection: 'upgrade',
      upgrade: 'websocket',
      origin: `http://127.0.0.1:${port}`,
      'sec-websocket-version': '13',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    }).catch(() => ({ status: -1, body: '' }));
    expect(up.status).toBe(401);
  });

  it('without a token the page fallback still keeps /api paths JSON', async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    s = await testServer({ editorDir: editorFixture(dir) });
    const r = await s.req({ method: 'GET', url: '/api/nope' });
    expect(r.statusCode).toBe(404);
    expect(r.json().error.code).toBe('not-found');
    const page = await s.req({ method: 'GET', url: '/some/page' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toBe(INDEX);
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
      // No Origin at all is a program, not a page (browsers always send one): see server-yjs-limits.
      for (const o of hostileOrigins(port).filter((x) => x !== undefined)) {
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
    expect(await tryUpgrade('/api/yjs/simple', {})).toBe(101);
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
