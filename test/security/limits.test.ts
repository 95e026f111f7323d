/**
 * One flow size limit and one id length limit, the same for every entry point: what the REST API
 * or a room stores, `switchboard validate`/`run`, the editor's import and the router all accept;
 * what one refuses, all refuse, with an error naming the limit.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { validate } from '@switchboard/nodes';
import {
  type Flow,
  FlowDocument,
  MAX_FLOW_BYTES,
  MAX_ID_LENGTH,
  parseFlowText,
  serializeFlow,
} from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { BODY_LIMIT } from '../../runtime/src/server/index.js';
import { simpleFlow, tempDir, testServer } from '../server/helpers.js';
import { cli } from '../support/cli.js';

let s: Awaited<ReturnType<typeof testServer>>;
let tmp: ReturnType<typeof tempDir>;
beforeEach(async () => {
  s = await testServer();
  tmp = tempDir('sb-limits-');
});
afterEach(async () => {
  await s.close();
  tmp.cleanup();
});

const json = (body: unknown) => ({
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

/** A valid flow whose saved form (serializeFlow) is `bytes` long, give or take the blob's char. */
function flowOfSize(id: string, bytes: number, char = 'x'): Flow {
  const f = simpleFlow(id);
  f.metadata = { blob: '' };
  const base = Buffer.byteLength(serializeFlow(f));
  f.metadata.blob = char.repeat(Math.ceil((bytes - base) / Buffer.byteLength(char)));
  return f;
}

describe('one flow size limit', () => {
  it('the REST API refuses a flow that validate, run and import would refuse (canonical bytes)', async () => {
    for (const [char, n] of [
      ['x', MAX_FLOW_BYTES + 10],
      ['é', MAX_FLOW_BYTES + 10], // fewer characters than the limit, more bytes
    ] as const) {
      const big = flowOfSize('big', n, char);
      const text = serializeFlow(big);
      expect(Buffer.byteLength(text)).toBeGreaterThan(MAX_FLOW_BYTES);
      expect(Buffer.byteLength(JSON.stringify(big))).toBeLessThan(BODY_LIMIT);
      for (const [method, url] of [
        ['POST', '/api/flows'],
        ['PUT', '/api/flows/big'],
        ['POST', '/api/flows/import'],
      ]) {
        const r = await s.req({ method: method!, url: url!, ...json(big) });
        expect(r.statusCode, `${method} ${url} (${char})`).toBe(400);
        expect(r.json().errors[0]).toMatchObject({ code: 'too-large', path: '' });
        expect(r.json().errors[0].message).toContain(String(MAX_FLOW_BYTES));
      }
      const run = await s.req({ method: 'POST', url: '/api/runs', ...json({ flow: big, input: 'x' }) });
      expect(run.statusCode).toBe(400);
      expect(run.json().errors[0].code).toBe('too-large');
      // A co-editing room saves through the same validator.
      expect(validate(big).errors.map((e) => e.code)).toEqual(['too-large']);
      // ...and the file readers agree.
      expect(parseFlowText(text).ok).toBe(false);
    }
    expect((await s.req({ method: 'GET', url: '/api/flows' })).json().flows).toEqual([]);
  });

  it('what the REST API stores just under the limit, the CLI validates and runs and the editor imports', async () => {
    const f = flowOfSize('near', MAX_FLOW_BYTES - 64);
    expect((await s.req({ method: 'POST', url: '/api/flows', ...json(f) })).statusCode).toBe(201);
    const exported = (await s.req({ method: 'GET', url: '/api/flows/near/export' })).body;
    expect(Buffer.byteLength(exported)).toBeLessThanOrEqual(MAX_FLOW_BYTES);
    expect(parseFlowText(exported).ok).toBe(true);
    const file = join(tmp.dir, 'near.json');
    writeFileSync(file, exported);
    expect((await cli('validate', file)).code).toBe(0);
    const run = await cli('run', file, '--input', 'go', '--events', 'none');
    expect(run.err).not.toContain('too-large');
    expect(run.code).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(exported);
  });

  it('request bodies are bounded by the flow limit plus a small envelope', async () => {
    expect(BODY_LIMIT).toBeGreaterThan(MAX_FLOW_BYTES);
    expect(BODY_LIMIT).toBeLessThanOrEqual(MAX_FLOW_BYTES + 1024 * 1024);
    const r = await s.req({
      method: 'POST',
      url: '/api/flows',
      payload: `"${'x'.repeat(BODY_LIMIT)}"`,
      headers: { 'content-type': 'application/json' },
    });
    expect(r.statusCode).toBe(413);
    expect(r.json().error.code).toBe('too-large');
  });
});

describe('one id length limit', () => {
  it('is the schema’s limit', () => {
    expect(FlowDocument.properties.id.maxLength).toBe(MAX_ID_LENGTH);
    const schemaFile = JSON.parse(
      readFileSync(new URL('../../schemas/flow.schema.json', import.meta.url), 'utf8'),
    ) as { properties: { id: { maxLength: number } } };
    expect(schemaFile.properties.id.maxLength).toBe(MAX_ID_LENGTH);
  });

  it('every id the API stores is reachable by every route, up to the limit', async () => {
    for (const id of ['a'.repeat(MAX_ID_LENGTH), 'a:'.repeat(MAX_ID_LENGTH / 2)]) {
      expect(id.length).toBe(MAX_ID_LENGTH);
      const f = simpleFlow(id);
      expect((await s.req({ method: 'POST', url: '/api/flows', ...json(f) })).statusCode).toBe(201);
      const path = `/api/flows/${encodeURIComponent(id)}`;
      expect((await s.req({ method: 'GET', url: path })).statusCode, id).toBe(200);
      expect((await s.req({ method: 'GET', url: `${path}/export` })).statusCode).toBe(200);
      expect((await s.req({ method: 'PUT', url: path, ...json(f) })).statusCode).toBe(200);
      const run = await s.req({ method: 'POST', url: '/api/runs', ...json({ flowId: id, input: 'x' }) });
      expect(run.statusCode).toBe(201);
      await s.runs.settled(run.json().run.id);
      expect((await s.req({ method: 'DELETE', url: path })).statusCode).toBe(204);
    }
  });

  it('one character more is refused everywhere, naming the limit (not a missing route)', async () => {
    const id = 'a'.repeat(MAX_ID_LENGTH + 1);
    const post = await s.req({ method: 'POST', url: '/api/flows', ...json(simpleFlow(id)) });
    expect(post.statusCode).toBe(400);
    expect(JSON.stringify(post.json().errors)).toContain('/id');
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const r = await s.req({ method, url: `/api/flows/${id}`, ...json(simpleFlow(id)) });
      expect(r.statusCode, method).toBe(400);
      expect(r.json().error.message).toContain(String(MAX_ID_LENGTH));
    }
  });

  it('a co-editing room of a flow with the longest id opens', async () => {
    const own = await testServer({ port: 0 });
    const { port } = await own.listen();
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/yjs/${'r'.repeat(MAX_ID_LENGTH)}`, {
      origin: `http://127.0.0.1:${port}`,
    });
    const opened = await new Promise<boolean>((resolve) => {
      ws.once('open', () => resolve(true));
      ws.once('unexpected-response', (_q, res) => resolve(Boolean(res.statusCode === 101)));
      ws.once('error', () => resolve(false));
    });
    ws.close();
    await own.close();
    expect(opened).toBe(true);
  });
});
