/**
 * No credential given in a query string reaches a log line: every parameter whose name can hold
 * one (access_token, token, key, api_key, password, secret, auth, signature…) is redacted, in the
 * request serializer and in any message or error that quotes a URL.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { redactUrl } from '../../runtime/src/server/index.js';
import { testServer } from '../server/helpers.js';

let s: Awaited<ReturnType<typeof testServer>> | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const CREDENTIAL_PARAMS = [
  'access_token',
  'token',
  'id_token',
  'refresh_token',
  'key',
  'api_key',
  'apikey',
  'api-key',
  'apiKey',
  'x-api-key',
  'password',
  'passwd',
  'pwd',
  'secret',
  'client_secret',
  'auth',
  'authorization',
  'credential',
  'session',
  'sig',
  'signature',
  'X-Amz-Signature',
  'X-Amz-Credential',
  'code',
];

describe('log lines', () => {
  it('never carry a credential given in a query string, whatever the route answers', async () => {
    const lines: string[] = [];
    const stream = { write: (l: string) => void lines.push(l) };
    s = await testServer({ logger: { level: 'debug', stream } as never });
    const secrets: string[] = [];
    const query = CREDENTIAL_PARAMS.map((p) => {
      const v = `S${randomBytes(8).toString('hex')}`;
      secrets.push(v);
      return `${encodeURIComponent(p)}=${v}`;
    }).join('&');
    for (const url of [
      `/api/flows?${query}&keep=visible`,
      `/api/health?${query}`,
      `/api/nothing-here?${query}`,
      `/api/runs?limit=oops&${query}`,
      // A percent-encoded parameter name, and one given twice.
      `/api/flows?access%5Ftoken=${secrets[0]}&token=${secrets[1]}&token=${secrets[2]}`,
    ])
      await s.req({ method: 'GET', url });
    s.app.log.warn(`a message quoting http://model.example/v1?api_key=${secrets[5]}`);
    s.app.log.error({ err: new Error(`fetch http://h.example/?access_token=${secrets[0]} failed`) }, 'boom');
    s.app.log.error(new Error(`GET https://u:${secrets[6]}@h.example/?client_secret=${secrets[14]}`));
    s.app.log.info({ upstream: { url: `http://m.example/v1?key=${secrets[4]}` } }, 'nested');
    const all = lines.join('');
    expect(all).toContain('keep=visible');
    expect(all).toContain('[redacted]');
    for (const v of secrets) expect(all, v).not.toContain(v);
  });
});

describe('redactUrl', () => {
  it('redacts credential parameters, keeps the others and the path', () => {
    expect(redactUrl('/api/ws?token=abc&runId=r1')).toBe('/api/ws?token=[redacted]&runId=r1');
    expect(redactUrl('/x?ACCESS_TOKEN=a&page=2&Api-Key=b#frag')).toBe(
      '/x?ACCESS_TOKEN=[redacted]&page=2&Api-Key=[redacted]#frag',
    );
    expect(redactUrl('/path/token=notaquery')).toBe('/path/token=notaquery');
    expect(redactUrl('https://u:p@h.example/v1?key=k')).toBe(
      'https://[redacted]@h.example/v1?key=[redacted]',
    );
  });
});
