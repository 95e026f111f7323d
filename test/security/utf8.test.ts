/**
 * Request bodies are UTF-8 JSON: an invalid byte sequence or another charset is refused with
 * 400 and a named error (never replaced by U+FFFD and stored).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { simpleFlow, testServer } from '../server/helpers.js';

let s: Awaited<ReturnType<typeof testServer>>;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

/** The flow's JSON with `bytes` spliced into its name string. */
function bodyWith(bytes: number[]): Buffer {
  const text = JSON.stringify(simpleFlow('u8'));
  const at = text.indexOf('"Flow u8"') + 1;
  return Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(bytes), Buffer.from(text.slice(at))]);
}

const post = (payload: Buffer, contentType = 'application/json') =>
  s.req({ method: 'POST', url: '/api/flows', payload, headers: { 'content-type': contentType } });

describe('request body encoding', () => {
  it('refuses invalid UTF-8 with 400 naming the byte offset, and stores nothing', async () => {
    const cases: Record<string, number[]> = {
      'lone continuation byte': [0x80],
      'invalid byte': [0xff],
      'truncated sequence': [0xe2, 0x82],
      'overlong slash': [0xc0, 0xaf],
      'UTF-16 surrogate': [0xed, 0xa0, 0x80],
      'beyond U+10FFFF': [0xf4, 0x90, 0x80, 0x80],
      'latin-1 é': [0xe9],
    };
    for (const [what, bytes] of Object.entries(cases)) {
      const body = bodyWith(bytes);
      const r = await post(body);
      expect(r.statusCode, what).toBe(400);
      expect(r.json().error.code, what).toBe('bad-encoding');
      expect(r.json().error.message, what).toContain(`byte ${body.indexOf(Buffer.from(bytes))}`);
    }
    expect((await s.req({ method: 'GET', url: '/api/flows' })).json().flows).toEqual([]);
  });

  it('refuses a charset other than UTF-8', async () => {
    for (const charset of ['iso-8859-1', 'latin1', 'utf-16', 'utf-16le', 'windows-1252', 'us-ascii', '']) {
      const r = await post(bodyWith([]), `application/json; charset=${charset}`);
      expect(r.statusCode, charset).toBe(400);
      expect(r.json().error.code, charset).toBe('bad-charset');
      expect(r.json().error.message).toContain('UTF-8');
    }
  });

  it('accepts valid UTF-8, with or without a charset parameter, and keeps the characters', async () => {
    const name = [0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x8c, 0x8a]; // é € 🌊
    let n = 0;
    for (const ct of [
      'application/json',
      'application/json; charset=utf-8',
      'application/json;charset=UTF-8',
      'application/json; charset="utf-8"',
      'application/vnd.switchboard+json; charset=utf8',
    ]) {
      const f = JSON.stringify({ ...simpleFlow(`ok${n}`), name: 'X' });
      const at = f.indexOf('"X"') + 1;
      const body = Buffer.concat([Buffer.from(f.slice(0, at)), Buffer.from(name), Buffer.from(f.slice(at))]);
      const r = await post(body, ct);
      expect(r.statusCode, ct).toBe(201);
      const got = await s.req({ method: 'GET', url: `/api/flows/ok${n}` });
      expect(got.json().name).toBe('é€🌊X');
      n++;
    }
  });
});
