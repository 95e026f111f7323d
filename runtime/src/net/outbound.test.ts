import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkUrl,
  createGuardedFetch,
  type HostResolver,
  OutboundBlockedError,
  OutboundNetworkError,
  outboundFetch,
} from './outbound.js';

/**
 * A real server on 127.0.0.1: echoes requests, redirects anywhere (`/redirect?to=URL&status=N`),
 * streams slowly, stalls, or sends a large body. It records what reached it.
 */
let server: http.Server;
let base: string;
let port: number;
const seen: Array<{ method: string; url: string; host: string; body: string; auth?: string }> = [];
const closed: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        host: req.headers.host ?? '',
        body,
        auth: req.headers.authorization,
      });
      switch (url.pathname) {
        case '/redirect':
          res.writeHead(Number(url.searchParams.get('status') ?? 302), {
            location: url.searchParams.get('to') ?? '/',
          });
          res.end();
          return;
        case '/loop':
          res.writeHead(302, { location: '/loop' });
          res.end();
          return;
        case '/stall-headers':
          req.socket.on('close', () => closed.push('stall-headers'));
          return; // never answers
        case '/stall-body':
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('first;');
          res.on('close', () => closed.push('stall-body'));
          return; // never ends
        case '/big':
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          res.end(Buffer.alloc(2 * 1024 * 1024, 97));
          return;
        case '/cut':
          res.writeHead(200, { 'content-length': '100' });
          res.write('only part');
          setTimeout(() => res.socket?.destroy(), 20);
          return;
        case '/empty':
          res.writeHead(204);
          res.end();
          return;
        default:
          res.writeHead(200, { 'content-type': 'application/json', 'x-test': 'yes' });
          res.end(JSON.stringify({ method: req.method, path: req.url, host: req.headers.host, body }));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const LOOPBACK = { allowLoopback: true };

/** Each variant: a URL and the policy switch that would allow it (none: never allowed). */
const SSRF: Array<[string, 'allowLoopback' | 'allowPrivate' | 'allowLinkLocal' | null]> = [
  ['http://169.254.169.254/latest/meta-data/', 'allowLinkLocal'],
  ['http://0xa9fea9fe/', 'allowLinkLocal'],
  ['http://2852039166/', 'allowLinkLocal'],
  ['http://0251.0376.0251.0376/', 'allowLinkLocal'],
  ['http://[::ffff:169.254.169.254]/', 'allowLinkLocal'],
  ['http://[::ffff:a9fe:a9fe]/', 'allowLinkLocal'],
  ['http://169.254.0.1/', 'allowLinkLocal'],
  ['http://[fe80::1]/', 'allowLinkLocal'],
  ['http://[fd00:ec2::254]/', 'allowPrivate'],
  ['http://127.0.0.1/', 'allowLoopback'],
  ['https://127.0.0.1/', 'allowLoopback'],
  ['http://127.0.0.1:22/', 'allowLoopback'],
  ['http://127.1/', 'allowLoopback'],
  ['http://127.0.1/', 'allowLoopback'],
  ['http://127.255.255.254/', 'allowLoopback'],
  ['http://2130706433/', 'allowLoopback'],
  ['http://0x7f000001/', 'allowLoopback'],
  ['http://0x7f.1/', 'allowLoopback'],
  ['http://0177.0.0.1/', 'allowLoopback'],
  ['http://017700000001/', 'allowLoopback'],
  ['http://0.0.0.0/', 'allowLoopback'],
  ['http://0/', 'allowLoopback'],
  ['http://[::]/', 'allowLoopback'],
  ['http://[::1]/', 'allowLoopback'],
  ['http://[0:0:0:0:0:0:0:1]/', 'allowLoopback'],
  ['http://[::ffff:127.0.0.1]/', 'allowLoopback'],
  ['http://[::ffff:7f00:1]/', 'allowLoopback'],
  ['http://[0:0:0:0:0:ffff:127.0.0.1]/', 'allowLoopback'],
  ['http://[::ffff:0:7f00:1]/', 'allowLoopback'],
  ['http://[64:ff9b::7f00:1]/', 'allowLoopback'],
  ['http://[2002:7f00:1::]/', 'allowLoopback'],
  ['http://localhost/', 'allowLoopback'],
  ['http://LOCALHOST./', 'allowLoopback'],
  ['http://api.localhost/', 'allowLoopback'],
  ['http://10.0.0.1/', 'allowPrivate'],
  ['http://10.255.255.255:8080/', 'allowPrivate'],
  ['http://172.16.0.1/', 'allowPrivate'],
  ['http://172.31.255.255/', 'allowPrivate'],
  ['http://192.168.1.1/', 'allowPrivate'],
  ['http://3232235777/', 'allowPrivate'],
  ['http://100.64.0.1/', 'allowPrivate'],
  ['http://[fc00::1]/', 'allowPrivate'],
  ['http://[fd12:3456:789a::1]/', 'allowPrivate'],
  ['http://[fec0::1]/', 'allowPrivate'],
  ['http://[64:ff9b::a00:1]/', 'allowPrivate'],
  ['http://[::ffff:10.0.0.1]/', 'allowPrivate'],
  ['http://[::127.0.0.1]/', null],
  ['http://255.255.255.255/', null],
  ['http://224.0.0.1/', null],
  ['http://192.0.2.1/', null],
  ['http://[ff02::1]/', null],
  ['http://[2001:db8::1]/', null],
  ['file:///etc/passwd', null],
  ['gopher://127.0.0.1:6379/_INFO', null],
  ['data:text/plain,hello', null],
  ['ftp://example.com/', null],
  ['dict://127.0.0.1:11211/', null],
  ['javascript:alert(1)', null],
  ['ws://example.com/', null],
  ['http://user:pass@example.com/', null],
  ['not a url', null],
];

/** Host names whose DNS answers are simulated; each must be refused on its answers alone. */
const DNS: Record<string, string[]> = {
  'internal.test': ['127.0.0.1'],
  'metadata.test': ['169.254.169.254'],
  'mixed.test': ['93.184.216.34', '10.0.0.5'],
  'mapped.test': ['::ffff:169.254.169.254'],
  'ula.test': ['fd00::5'],
  'v6loop.test': ['::1'],
};
const fakeDns: HostResolver = async (host) => {
  const answer = DNS[host];
  if (!answer) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return answer;
};

describe('SSRF: URL variants', () => {
  it('has at least 40 variants', () => {
    expect(SSRF.length + Object.keys(DNS).length).toBeGreaterThanOrEqual(40);
  });

  it.each(SSRF)('refuses %s under the default policy', async (url) => {
    const verdict = await checkUrl(url, {}, fakeDns);
    expect(verdict.ok).toBe(false);
    // And the fetch path refuses too, before any connection.
    await expect(outboundFetch(url, { resolve: fakeDns })).rejects.toBeInstanceOf(OutboundBlockedError);
  });

  it.each(SSRF.filter(([, allow]) => allow))('allows %s when the operator sets %s', async (url, allow) => {
    const verdict = await checkUrl(url, { [allow!]: true }, fakeDns);
    expect(verdict).toMatchObject({ ok: true });
    // The other switches are not enough.
    const others = ['allowLoopback', 'allowPrivate', 'allowLinkLocal'].filter((s) => s !== allow);
    const wrong = await checkUrl(url, Object.fromEntries(others.map((s) => [s, true])), fakeDns);
    expect(wrong.ok).toBe(false);
  });

  it.each(SSRF.filter(([, allow]) => allow === null))('never allows %s', async (url) => {
    const all = { allowLoopback: true, allowPrivate: true, allowLinkLocal: true };
    expect((await checkUrl(url, all, fakeDns)).ok).toBe(false);
  });

  it.each(Object.keys(DNS))('refuses host %s by its DNS answers', async (host) => {
    const verdict = await checkUrl(`http://${host}/`, {}, fakeDns);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toMatch(/refused: .* is a (loopback|private|linkLocal) address/);
  });

  it('names the reason and the switch that would allow it', async () => {
    const verdict = await checkUrl('http://169.254.169.254/', {});
    expect(verdict).toEqual({
      ok: false,
      reason:
        'refused: 169.254.169.254 is a linkLocal address; the operator can allow it with --allow-outbound 169.254.169.254:80 (a link-local address: cloud metadata lives there)',
    });
    const scheme = await checkUrl('file:///etc/passwd');
    expect(scheme).toEqual({ ok: false, reason: 'refused: scheme file: (only http: and https:)' });
  });

  it('allows public hosts and applies the host allow-list', async () => {
    const resolver: HostResolver = async () => ['93.184.216.34'];
    expect(await checkUrl('https://api.example.com/v1', {}, resolver)).toMatchObject({
      ok: true,
      addresses: ['93.184.216.34'],
    });
    const policy = { allowHosts: ['api.example.com', '*.models.test'] };
    expect((await checkUrl('https://API.example.com./v1', policy, resolver)).ok).toBe(true);
    expect((await checkUrl('https://eu.models.test/', policy, resolver)).ok).toBe(true);
    expect((await checkUrl('https://models.test/', policy, resolver)).ok).toBe(false);
    expect((await checkUrl('https://evil.example.com/', policy, resolver)).ok).toBe(false);
    expect((await checkUrl('https://api.example.com.evil.test/', policy, resolver)).ok).toBe(false);
  });
});

describe('outboundFetch against a real local server', () => {
  it('refuses the local server by default, before connecting', async () => {
    const before = seen.length;
    await expect(outboundFetch(`${base}/`)).rejects.toThrow(/loopback/);
    await expect(outboundFetch(`http://127.1:${port}/`)).rejects.toBeInstanceOf(OutboundBlockedError);
    await expect(outboundFetch(`http://localhost:${port}/`)).rejects.toBeInstanceOf(OutboundBlockedError);
    expect(seen.length).toBe(before);
  });

  it('reaches it when loopback is allowed, in every spelling', async () => {
    for (const host of ['127.0.0.1', '127.1', '0x7f000001', '2130706433', 'localhost']) {
      const res = await outboundFetch(`http://${host}:${port}/hello?x=1`, { policy: LOOPBACK });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-test')).toBe('yes');
      expect(await res.json()).toMatchObject({ method: 'GET', path: '/hello?x=1' });
    }
  });

  it('POSTs a body and a guarded fetch behaves like fetch', async () => {
    const guarded = createGuardedFetch(LOOPBACK);
    const res = await guarded(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ a: 1 }),
    });
    expect(await res.json()).toMatchObject({ method: 'POST', body: '{"a":1}' });
    const viaRequest = await guarded(new Request(`${base}/r`, { method: 'PUT', body: 'xyz' }));
    expect(await viaRequest.json()).toMatchObject({ method: 'PUT', body: 'xyz' });
  });

  it('connects to the checked address, not to a fresh DNS answer (rebinding)', async () => {
    let calls = 0;
    const resolver: HostResolver = async () => {
      calls++;
      return ['127.0.0.1'];
    };
    const res = await outboundFetch(`http://rebind.test:${port}/pin`, {
      policy: LOOPBACK,
      resolve: resolver,
    });
    // rebind.test does not exist in real DNS: the request can only have gone to the checked address.
    expect(await res.json()).toMatchObject({ host: `rebind.test:${port}` });
    expect(calls).toBe(1);
  });

  const internal = [
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.1/',
    'http://[fd00::1]/',
    'http://[::ffff:a9fe:a9fe]/',
    'http://0xa9fea9fe/',
    'file:///etc/passwd',
    'gopher://127.0.0.1:6379/_x',
    'http://metadata.test/',
    'http://ula.test/',
  ];
  it.each(internal)('refuses a redirect to %s', async (target) => {
    const url = `${base}/redirect?to=${encodeURIComponent(target)}`;
    await expect(outboundFetch(url, { policy: LOOPBACK, resolve: fakeDns })).rejects.toBeInstanceOf(
      OutboundBlockedError,
    );
  });

  it('refuses a redirect that leaves the host allow-list', async () => {
    const policy = { allowLoopback: true, allowHosts: ['127.0.0.1'] };
    const url = `${base}/redirect?to=${encodeURIComponent(`http://localhost:${port}/`)}`;
    await expect(outboundFetch(url, { policy })).rejects.toThrow(/not in the allowed hosts/);
    const ok = await outboundFetch(`${base}/redirect?to=/final`, { policy });
    expect(ok.redirected).toBe(true);
    expect(ok.url).toBe(`${base}/final`);
  });

  it('follows redirects with fetch semantics and stops at the limit', async () => {
    const r307 = await outboundFetch(`${base}/redirect?status=307&to=/after`, {
      method: 'POST',
      body: 'keep',
      policy: LOOPBACK,
    });
    expect(await r307.json()).toMatchObject({ method: 'POST', body: 'keep', path: '/after' });
    const r303 = await outboundFetch(`${base}/redirect?status=303&to=/after`, {
      method: 'POST',
      body: 'drop',
      policy: LOOPBACK,
    });
    expect(await r303.json()).toMatchObject({ method: 'GET', body: '' });
    await expect(outboundFetch(`${base}/loop`, { policy: LOOPBACK, maxRedirects: 3 })).rejects.toMatchObject({
      code: 'ERR_TOO_MANY_REDIRECTS',
    });
    const manual = await outboundFetch(`${base}/loop`, { policy: LOOPBACK, redirect: 'manual' });
    expect(manual.status).toBe(302);
  });

  it('drops credentials on a cross-origin redirect', async () => {
    const target = `http://localhost:${port}/landing`;
    const res = await outboundFetch(`${base}/redirect?to=${encodeURIComponent(target)}`, {
      policy: LOOPBACK,
      headers: { authorization: 'Bearer secret' },
    });
    await res.text();
    const landing = seen.findLast((s) => s.url === '/landing');
    expect(landing?.auth).toBeUndefined();
    const first = seen.findLast((s) => s.url.startsWith('/redirect?to=http%3A%2F%2Flocalhost'));
    expect(first?.auth).toBe('Bearer secret');
  });

  it('bounds time to headers', async () => {
    const started = Date.now();
    await expect(
      outboundFetch(`${base}/stall-headers`, { policy: LOOPBACK, timeoutMs: 300 }),
    ).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('bounds body silence and body size', async () => {
    const res = await outboundFetch(`${base}/stall-body`, { policy: LOOPBACK, idleTimeoutMs: 300 });
    await expect(res.text()).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    const big = await outboundFetch(`${base}/big`, { policy: LOOPBACK, maxResponseBytes: 1024 * 1024 });
    await expect(big.arrayBuffer()).rejects.toMatchObject({ code: 'ERR_RESPONSE_TOO_LARGE' });
    const fits = await outboundFetch(`${base}/big`, { policy: LOOPBACK, maxResponseBytes: 4 * 1024 * 1024 });
    expect((await fits.arrayBuffer()).byteLength).toBe(2 * 1024 * 1024);
  });

  it('reports a truncated body as an error, not as a short success', async () => {
    const res = await outboundFetch(`${base}/cut`, { policy: LOOPBACK });
    await expect(res.text()).rejects.toBeInstanceOf(OutboundNetworkError);
  });

  it('handles null-body responses', async () => {
    const res = await outboundFetch(`${base}/empty`, { policy: LOOPBACK });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
  });

  it('aborting mid-body closes the connection promptly', async () => {
    const controller = new AbortController();
    const res = await outboundFetch(`${base}/stall-body`, { policy: LOOPBACK, signal: controller.signal });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('first;');
    const count = closed.filter((c) => c === 'stall-body').length;
    const pending = reader.read();
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await expect
      .poll(() => closed.filter((c) => c === 'stall-body').length, { timeout: 1_000 })
      .toBe(count + 1);
  });

  it('aborting before headers rejects with AbortError and closes the socket', async () => {
    const controller = new AbortController();
    const count = closed.filter((c) => c === 'stall-headers').length;
    const pending = outboundFetch(`${base}/stall-headers`, { policy: LOOPBACK, signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await expect
      .poll(() => closed.filter((c) => c === 'stall-headers').length, { timeout: 1_000 })
      .toBe(count + 1);
  });

  it('bounds DNS resolution by the timeout and the signal', async () => {
    const never: HostResolver = () => new Promise(() => {});
    await expect(
      outboundFetch('http://slow-dns.test/', { resolve: never, timeoutMs: 200 }),
    ).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    const controller = new AbortController();
    const pending = outboundFetch('http://slow-dns.test/', { resolve: never, signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('fails cleanly when nothing listens', async () => {
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const freePort = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    await expect(outboundFetch(`http://127.0.0.1:${freePort}/`, { policy: LOOPBACK })).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
  });
});
