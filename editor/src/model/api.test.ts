import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serializeFlow } from '@switchboard/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyFlow } from '../testing/fixtures.js';
import { FlowApi } from './api.js';

/** A small stand-in for `switchboard serve`'s flow routes, on a real port. */
const stored = new Map<string, string>();
const seen: Array<{ method: string; url: string; auth?: string }> = [];
let server: Server;
let base: string;

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = '';
    req.on('data', (c) => {
      s += c;
    });
    req.on('end', () => resolve(s));
  });
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    seen.push({ method: req.method!, url: req.url!, auth: req.headers.authorization });
    const json = (code: number, v: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(v));
    };
    if (req.headers.authorization !== 'Bearer s3cret')
      return json(401, { error: { code: 'unauthorized', message: 'a valid token is required' } });
    const m = /^\/api\/flows(?:\/([^/]+))?$/.exec(req.url!);
    if (!m) return json(404, {});
    const id = m[1] && decodeURIComponent(m[1]);
    if (req.method === 'GET' && !id)
      return json(200, { flows: [...stored.keys()].map((k) => ({ id: k, name: k })) });
    if (req.method === 'GET' && id)
      return stored.has(id) ? json(200, JSON.parse(stored.get(id)!)) : json(404, {});
    if (req.method === 'PUT' && id) {
      const text = await body(req);
      const flow = JSON.parse(text);
      if (!flow.name)
        return json(400, { errors: [{ code: 'schema', path: '/name', message: 'name is missing' }] });
      stored.set(id, text);
      return json(200, { id, rev: 1 });
    }
    if (req.method === 'DELETE' && id) {
      stored.delete(id);
      res.writeHead(204).end();
      return;
    }
    json(405, {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('FlowApi against a real HTTP server', () => {
  it('tells a server that wants the token from no server at all', async () => {
    expect(await new FlowApi(base).available()).toBe(false);
    expect(await new FlowApi(base).access()).toBe('unauthorized');
    expect(await new FlowApi(base, 'wrong').access()).toBe('unauthorized');
    expect(await new FlowApi(base, 's3cret').access()).toBe('ok');
    expect(await new FlowApi('http://127.0.0.1:9').access()).toBe('absent');
  });

  it('saves, lists, opens and deletes with the bearer token', async () => {
    const api = new FlowApi(base, 's3cret');
    expect(await api.available()).toBe(true);
    const flow = emptyFlow();
    const text = serializeFlow(flow);
    expect(await api.save(flow, text)).toEqual({ ok: true });
    expect(stored.get('untitled')).toBe(text);
    expect(await api.list()).toEqual([{ id: 'untitled', name: 'untitled', description: undefined }]);
    expect(JSON.parse(await api.get('untitled'))).toEqual(flow);
    await api.remove('untitled');
    expect(await api.list()).toEqual([]);
    expect(seen.filter((r) => r.auth !== 'Bearer s3cret').every((r) => r.method === 'GET')).toBe(true);
  });

  it('returns the problems of a refused save', async () => {
    const api = new FlowApi(base, 's3cret');
    const flow = { ...emptyFlow(), name: '' };
    const r = await api.save(flow, JSON.stringify(flow));
    expect(r).toEqual({
      ok: false,
      errors: [{ code: 'schema', path: '/name', message: 'name is missing' }],
      message: 'Saving failed: HTTP 400',
    });
  });

  it('says a token is needed when the server refuses', async () => {
    const r = await new FlowApi(base).save(emptyFlow(), serializeFlow(emptyFlow()));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain('reload the page');
  });
});
