/**
 * Failed tokens are limited per address prefix (/24, /64) and globally, never the valid token;
 * `X-Forwarded-For` counts only when the socket is a proxy the operator trusts (`--trust-proxy`).
 * Real sockets: the client binds different loopback addresses (all of 127/8 is local on Linux).
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from '../../runtime/src/server/index.js';
import { addressPrefix, FailureLimiter } from '../../runtime/src/server/security.js';
import { tempDir, testServer } from '../server/helpers.js';
import { cli } from '../support/cli.js';

const TOKEN = randomBytes(32).toString('hex');
let s: Awaited<ReturnType<typeof testServer>> | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

async function start(opts: Parameters<typeof testServer>[0] = {}) {
  s = await testServer({ port: 0, token: TOKEN, ...opts });
  return (await s.listen()).port;
}

function get(
  port: number,
  from: string,
  token: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/api/flows',
        localAddress: from,
        headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${token}`, ...headers },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers['retry-after'] as string | undefined,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('failed tokens', () => {
  it('never lock out the valid token, even from the address that failed', async () => {
    const port = await start();
    const codes: number[] = [];
    for (let i = 0; i < 12; i++) codes.push((await get(port, '127.0.0.2', 'wrong')).status);
    expect(codes.slice(0, 10)).toEqual(Array(10).fill(401));
    const limited = await get(port, '127.0.0.2', 'wrong');
    expect(limited.status).toBe(429);
    expect(Number(limited.retryAfter)).toBeGreaterThan(0);
    expect((await get(port, '127.0.0.2', TOKEN)).status).toBe(200);
    // ...and a valid request does not wipe the count the attacker built up.
    expect((await get(port, '127.0.0.2', 'wrong')).status).toBe(429);
  });

  it('are counted per /24: rotating addresses inside one prefix does not reset the limit', async () => {
    const port = await start();
    const codes: number[] = [];
    for (let i = 2; i < 16; i++) codes.push((await get(port, `127.0.5.${i}`, 'wrong')).status);
    expect(codes.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(codes.slice(10)).toEqual(Array(4).fill(429));
    // Another prefix is not limited by that one.
    expect((await get(port, '127.0.6.2', 'wrong')).status).toBe(401);
  });

  it('are counted globally: rotating prefixes meets the global limit', async () => {
    const port = await start({ authLimits: { perPrefix: 10, global: 30 } });
    const codes: number[] = [];
    for (let i = 1; i <= 40; i++) codes.push((await get(port, `127.0.${i}.9`, 'wrong')).status);
    expect(codes.slice(0, 30)).toEqual(Array(30).fill(401));
    expect(codes.slice(30)).toEqual(Array(10).fill(429));
    expect((await get(port, '127.0.77.9', TOKEN)).status).toBe(200);
  });

  it('ignore X-Forwarded-For unless the socket is a trusted proxy', async () => {
    const port = await start();
    const codes: number[] = [];
    for (let i = 0; i < 12; i++)
      codes.push((await get(port, '127.0.0.3', 'wrong', { 'x-forwarded-for': `203.0.${i}.1` })).status);
    expect(codes.slice(10)).toEqual([429, 429]);
  });

  it('behind a trusted proxy, count the forwarded client (rightmost untrusted entry), per /24 and /64', async () => {
    const port = await start({ trustProxy: ['127.0.0.1'] });
    const via = (xff: string, token = 'wrong') => get(port, '127.0.0.1', token, { 'x-forwarded-for': xff });
    // The leftmost entries are whatever the client wrote; the proxy appended the real one.
    for (let i = 0; i < 10; i++) expect((await via(`9.9.9.${i}, 203.0.113.5`)).status).toBe(401);
    expect((await via('203.0.113.77')).status).toBe(429); // same /24
    expect((await via('198.51.100.7')).status).toBe(401); // another client of the proxy
    expect((await via('203.0.113.5', TOKEN)).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await via(`2001:db8:1:2::${i + 1}`)).status).toBe(401);
    expect((await via('2001:db8:1:2:ffff::1')).status).toBe(429); // same /64
    expect((await via('2001:db8:1:3::1')).status).toBe(401);
    // A socket that is not the proxy cannot choose its address with the header.
    for (let i = 0; i < 10; i++)
      expect((await get(port, '127.0.9.2', 'wrong', { 'x-forwarded-for': `198.18.${i}.1` })).status).toBe(
        401,
      );
    expect((await get(port, '127.0.9.2', 'wrong', { 'x-forwarded-for': '198.18.200.1' })).status).toBe(429);
  });
});

describe('trusted proxies', () => {
  it('must be addresses, CIDRs or loopback/linklocal/uniquelocal; anything else stops the start, named', async () => {
    const { dir, cleanup } = tempDir();
    try {
      for (const bad of ['proxy.example', '10.0.0.0/33', '::1/129', '1.2.3.4/8/1', '*'])
        await expect(
          createServer({ dataDir: dir, editorDir: false, trustProxy: [bad], env: {} }),
          bad,
        ).rejects.toThrow(`trusted proxy ${JSON.stringify(bad)}`);
      const ok = await createServer({
        dataDir: dir,
        editorDir: false,
        trustProxy: ['10.0.0.0/8', '::1', 'loopback'],
        env: {},
      });
      await ok.close();
      const r = await cli('serve', '--port', '0', '--data', dir, '--trust-proxy', 'proxy.example');
      expect(r.code).toBe(2);
      expect(r.err).toContain('trusted proxy "proxy.example"');
    } finally {
      cleanup();
    }
  });
});

describe('address prefixes', () => {
  it('are /24 for IPv4 (also IPv4-mapped IPv6) and /64 for IPv6', () => {
    expect(addressPrefix('10.1.2.3')).toBe(addressPrefix('10.1.2.250'));
    expect(addressPrefix('10.1.2.3')).not.toBe(addressPrefix('10.1.3.3'));
    expect(addressPrefix('::ffff:10.1.2.3')).toBe(addressPrefix('10.1.2.99'));
    expect(addressPrefix('2001:db8::1')).toBe(addressPrefix('2001:0db8:0:0:ffff::2'));
    expect(addressPrefix('2001:db8::1')).not.toBe(addressPrefix('2001:db8:0:1::1'));
  });

  it('forget failures after the window', () => {
    const l = new FailureLimiter({ perPrefix: 2, global: 100, windowMs: 1000 });
    l.fail('10.0.0.1', 0);
    l.fail('10.0.0.2', 10);
    expect(l.blocked('10.0.0.3', 20)).toBeGreaterThan(0);
    expect(l.blocked('10.0.0.3', 1500)).toBeUndefined();
  });
});
