import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serializeFlow } from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agent, edge, flow, node } from '../runtime/src/engine/testing/index.js';
import { FlowInvalidError } from '../runtime/src/server/run-manager.js';
import { scanEventLog } from '../runtime/src/store/event-log.js';
import { simpleFlow, testServer, until } from './server/helpers.js';

type S = Awaited<ReturnType<typeof testServer>>;
let s: S;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

const json = (body: unknown) => ({
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

describe('flows API', () => {
  it('creates, lists, gets, replaces, exports and deletes a flow', async () => {
    const f = simpleFlow('doc');
    let r = await s.req({ method: 'POST', url: '/api/flows', ...json(f) });
    expect(r.statusCode).toBe(201);
    expect(r.json()).toMatchObject({ id: 'doc', rev: 1 });
    expect((await s.req({ method: 'POST', url: '/api/flows', ...json(f) })).statusCode).toBe(409);

    r = await s.req({ method: 'GET', url: '/api/flows' });
    expect(r.json().flows).toEqual([
      expect.objectContaining({ id: 'doc', name: 'Flow doc', rev: 1, nodes: 3 }),
    ]);
    r = await s.req({ method: 'GET', url: '/api/flows/doc' });
    expect(r.json()).toEqual(f);
    expect(r.headers.etag).toBe('"1"');

    const changed = { ...f, name: 'Renamed' };
    r = await s.req({ method: 'PUT', url: '/api/flows/doc', ...json(changed) });
    expect(r.statusCode).toBe(200);
    expect(r.json().rev).toBe(2);
    // A stale If-Match is refused.
    r = await s.req({
      method: 'PUT',
      url: '/api/flows/doc',
      ...json(f),
      headers: { 'content-type': 'application/json', 'if-match': '"1"' },
    });
    expect(r.statusCode).toBe(412);

    r = await s.req({ method: 'GET', url: '/api/flows/doc/export' });
    expect(r.body).toBe(serializeFlow(changed));
    expect(r.headers['content-disposition']).toContain('doc.json');

    // The catalog on disk holds it: its index names the flow's own file.
    const indexed = JSON.parse(readFileSync(join(s.dir, 'catalog.json'), 'utf8')).flows.doc;
    expect(indexed.rev).toBe(2);
    expect(JSON.parse(readFileSync(join(s.dir, 'flows', indexed.file), 'utf8')).name).toBe('Renamed');

    expect((await s.req({ method: 'DELETE', url: '/api/flows/doc' })).statusCode).toBe(204);
    // Deleted, not unknown: 410 says who deleted it (test/server/lifecycle.test.ts).
    expect((await s.req({ method: 'GET', url: '/api/flows/doc' })).statusCode).toBe(410);
    expect((await s.req({ method: 'DELETE', url: '/api/flows/doc' })).statusCode).toBe(410);
    expect((await s.req({ method: 'DELETE', url: '/api/flows/never' })).statusCode).toBe(404);
  });

  it('refuses an invalid write with 400 and the validator’s errors, leaving the stored flow untouched', async () => {
    const f = simpleFlow('doc');
    await s.req({ method: 'PUT', url: '/api/flows/doc', ...json(f) });
    const bad = {
      ...f,
      nodes: f.nodes.map((n) => (n.id === 'writer' ? { ...n, config: { ...n.config, model: 'nope' } } : n)),
    };
    const r = await s.req({ method: 'PUT', url: '/api/flows/doc', ...json(bad) });
    expect(r.statusCode).toBe(400);
    const body = r.json();
    expect(body.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'unknown-model', path: '/nodes/1/config/model' }),
      ]),
    );
    expect((await s.req({ method: 'GET', url: '/api/flows/doc' })).json()).toEqual(f);
    // id in the body must match the URL.
    expect((await s.req({ method: 'PUT', url: '/api/flows/other', ...json(f) })).json().error.code).toBe(
      'id-mismatch',
    );
    // validate does not store.
    const v = await s.req({ method: 'POST', url: '/api/flows/validate', ...json(bad) });
    expect(v.json()).toMatchObject({ ok: false });
    expect(v.json().errors[0].path).toBe('/nodes/1/config/model');
  });

  it('imports an exported file byte-for-byte', async () => {
    const f = simpleFlow('imp');
    const text = serializeFlow(f);
    let r = await s.req({
      method: 'POST',
      url: '/api/flows/import',
      payload: text,
      headers: { 'content-type': 'application/json' },
    });
    expect(r.statusCode).toBe(201);
    r = await s.req({
      method: 'POST',
      url: '/api/flows/import',
      payload: text,
      headers: { 'content-type': 'application/json' },
    });
    expect(r.statusCode).toBe(409);
    r = await s.req({
      method: 'POST',
      url: '/api/flows/import?overwrite=true',
      payload: text,
      headers: { 'content-type': 'application/json' },
    });
    expect(r.statusCode).toBe(200);
    expect((await s.req({ method: 'GET', url: '/api/flows/imp/export' })).body).toBe(text);
  });

  it('answers bad requests with clear JSON errors and never a stack trace', async () => {
    const cases = [
      {
        method: 'POST',
        url: '/api/flows',
        payload: '{"a":',
        headers: { 'content-type': 'application/json' },
      },
      {
        method: 'POST',
        url: '/api/flows',
        payload: 'x=1',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      },
      {
        method: 'POST',
        url: '/api/flows',
        payload: '{"__proto__":{"x":1}}',
        headers: { 'content-type': 'application/json' },
      },
      {
        method: 'POST',
        url: '/api/flows',
        payload: `${'['.repeat(10_000)}${']'.repeat(10_000)}`,
        headers: { 'content-type': 'application/json' },
      },
      {
        method: 'POST',
        url: '/api/flows',
        payload: 'x'.repeat(10 * 1024 * 1024),
        headers: { 'content-type': 'application/json' },
      },
      { method: 'GET', url: '/api/flows/..%2F..%2Fetc%2Fpasswd' },
      { method: 'GET', url: '/api/runs/..%2Fx' },
      { method: 'GET', url: '/api/nope' },
      { method: 'POST', url: '/api/runs', payload: '{}', headers: { 'content-type': 'application/json' } },
      { method: 'GET', url: '/api/runs?limit=-1' },
    ] as const;
    for (const c of cases) {
      const r = await s.req(c as never);
      expect(r.statusCode, `${c.method} ${c.url}`).toBeGreaterThanOrEqual(400);
      expect(r.statusCode, `${c.method} ${c.url}`).toBeLessThan(500);
      const body = r.json();
      expect(typeof body.error.code).toBe('string');
      expect(typeof body.error.message).toBe('string');
      expect(r.body).not.toMatch(/\bat .*\.(ts|js):\d+/);
    }
    expect((await s.req({ method: 'GET', url: '/api/health' })).json()).toMatchObject({
      ok: true,
      status: 'ok',
      storage: { status: 'ok' },
    });
  });

  it('documents every route in the generated OpenAPI document', async () => {
    const doc = (await s.req({ method: 'GET', url: '/api/openapi.json' })).json();
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/health',
        '/api/flows',
        '/api/flows/{id}',
        '/api/flows/validate',
        '/api/flows/import',
        '/api/flows/{id}/export',
        '/api/runs',
        '/api/runs/{id}',
        '/api/runs/{id}/events',
        '/api/runs/{id}/commands',
        '/api/ws',
        '/api/yjs/{room}',
      ]),
    );
    expect(doc.paths['/api/flows/{id}'].put.summary).toMatch(/Replace/);
  });
});

describe('runs API', () => {
  it('runs a stored flow and an inline flow with a models override; lists, gets and reads events', async () => {
    await s.req({ method: 'PUT', url: '/api/flows/simple', ...json(simpleFlow()) });
    let r = await s.req({ method: 'POST', url: '/api/runs', ...json({ flowId: 'simple', input: 'write' }) });
    expect(r.statusCode).toBe(201);
    const id1 = r.json().run.id as string;
    r = await s.req({
      method: 'POST',
      url: '/api/runs',
      ...json({
        flow: simpleFlow('inline'),
        input: 'x',
        models: { default: { provider: 'scripted', script: [{ node: 'writer', text: 'overridden' }] } },
      }),
    });
    const id2 = r.json().run.id as string;
    await until(
      async () => (await s.req({ method: 'GET', url: `/api/runs/${id2}` })).json().run.status === 'completed',
      'run 2',
    );
    await until(
      async () => (await s.req({ method: 'GET', url: `/api/runs/${id1}` })).json().run.status === 'completed',
      'run 1',
    );
    const run2 = (await s.req({ method: 'GET', url: `/api/runs/${id2}` })).json().run;
    expect(run2).toMatchObject({
      flowId: 'inline',
      output: 'overridden',
      scripted: true,
      counters: { turns: 1 },
    });
    expect((await s.req({ method: 'GET', url: `/api/runs/${id1}` })).json().run.output).toBe('the draft');

    const all = (await s.req({ method: 'GET', url: '/api/runs' })).json().runs;
    expect(all.map((x: { id: string }) => x.id).sort()).toEqual([id1, id2].sort());
    expect(
      (await s.req({ method: 'GET', url: '/api/runs?flowId=simple' }))
        .json()
        .runs.map((x: { id: string }) => x.id),
    ).toEqual([id1]);
    expect((await s.req({ method: 'GET', url: '/api/runs?status=running,failed' })).json().runs).toEqual([]);

    const ev = (await s.req({ method: 'GET', url: `/api/runs/${id1}/events?after=3&limit=2` })).json();
    expect(ev.events.map((e: { seq: number }) => e.seq)).toEqual([4, 5]);
    const allEv = (await s.req({ method: 'GET', url: `/api/runs/${id1}/events` })).json().events;
    expect(allEv[0].type).toBe('run.started');
    expect(allEv.at(-1).type).toBe('run.completed');
    expect(allEv.map((e: { seq: number }) => e.seq)).toEqual(allEv.map((_: unknown, i: number) => i + 1));
    // The log on disk has the same events.
    const disk = scanEventLog(join(s.dir, 'runs', id1, 'events.jsonl'), id1).events;
    expect(disk).toEqual(allEv);
  });

  it('refuses an invalid models override with the validator’s errors', async () => {
    const r = await s.req({
      method: 'POST',
      url: '/api/runs',
      ...json({ flow: simpleFlow('x'), models: { default: { provider: 'scripted', apiKey: 'sk-literal' } } }),
    });
    expect(r.statusCode).toBe(400);
    expect(r.json().errors.length).toBeGreaterThan(0);
  });

  it('checks a flow once, at the start of a run: an invalid one is refused with its problems and nothing is recorded', async () => {
    const runsBefore = Object.keys(s.store.catalog.data.runs).length;
    const bad = {
      ...simpleFlow('bad'),
      edges: [{ id: 'e1', kind: 'handover', source: 'start', target: 'nowhere' }],
    };
    const err = await s.runs.start({ flow: bad as never, input: 'go', source: 'api' }).then(
      () => undefined,
      (e: unknown) => e as FlowInvalidError,
    );
    expect(err).toBeInstanceOf(FlowInvalidError);
    expect(err!.problems.some((p) => p.path.startsWith('/edges/0'))).toBe(true);
    expect(err!.message).toMatch(/the flow is invalid: \/edges\/0/);
    expect(Object.keys(s.store.catalog.data.runs)).toHaveLength(runsBefore);
    // A valid one runs, checked here and not again by the engine: it completes all the same.
    const rec = await s.runs.start({ flow: simpleFlow('good'), input: 'go', source: 'api' });
    expect((await s.runs.settled(rec.id))?.status).toBe('completed');
  });

  it('answers a human node, pauses, resumes and cancels through commands', async () => {
    const human = {
      ...flow(
        [
          node('start', 'start'),
          node('ask', 'human', { mode: 'ask', question: 'Which?' }),
          agent('writer'),
          node('end', 'end'),
        ],
        [edge('start', 'ask'), edge('ask', 'writer'), edge('writer', 'end')],
        [{ node: 'writer', text: 'done' }],
      ),
      id: 'human',
    };
    let r = await s.req({ method: 'POST', url: '/api/runs', ...json({ flow: human, input: 'go' }) });
    const id = r.json().run.id;
    await until(
      async () => (await s.req({ method: 'GET', url: `/api/runs/${id}` })).json().run.status === 'waiting',
      'waiting',
    );
    r = await s.req({
      method: 'POST',
      url: `/api/runs/${id}/commands`,
      ...json({ type: 'answer', nodeId: 'ask', answer: 'blue' }),
    });
    expect(r.statusCode).toBe(202);
    await until(
      async () => (await s.req({ method: 'GET', url: `/api/runs/${id}` })).json().run.status === 'completed',
      'completed',
    );
    const events = (await s.req({ method: 'GET', url: `/api/runs/${id}/events` })).json().events;
    expect(events.find((e: { type: string }) => e.type === 'input.received')).toMatchObject({
      answer: 'blue',
    });
    // Commands to a finished run, and bad commands, are refused clearly.
    expect(
      (await s.req({ method: 'POST', url: `/api/runs/${id}/commands`, ...json({ type: 'pause' }) }))
        .statusCode,
    ).toBe(409);
    expect(
      (await s.req({ method: 'POST', url: `/api/runs/${id}/commands`, ...json({ type: 'explode' }) })).json()
        .error.code,
    ).toBe('bad-command');
    expect(
      (await s.req({ method: 'POST', url: `/api/runs/${id}/commands`, ...json({ type: 'inject' }) })).json()
        .error.message,
    ).toContain('"text"');

    r = await s.req({ method: 'POST', url: '/api/runs', ...json({ flow: human, input: 'go' }) });
    const id2 = r.json().run.id;
    await until(
      async () => (await s.req({ method: 'GET', url: `/api/runs/${id2}` })).json().run.status === 'waiting',
      'waiting 2',
    );
    r = await s.req({
      method: 'POST',
      url: `/api/runs/${id2}/commands`,
      ...json({ type: 'cancel', reason: 'enough' }),
    });
    expect(r.statusCode).toBe(202);
    await until(
      async () => (await s.req({ method: 'GET', url: `/api/runs/${id2}` })).json().run.status === 'cancelled',
      'cancelled',
    );
  });
});
