/**
 * Issue 13, part 2: no user-chosen string becomes a key of a plain object. Each case below is an
 * attack that polluted `Object.prototype` (or read it as data) before the fix: a node id, a human
 * node id or a model name `__proto__` in a run; a model endpoint answering `"model": "__proto__"`;
 * REST paths and bodies naming `__proto__` or `constructor`. Real engine, real HTTP (fastify
 * inject and a real fake OpenAI server), real files.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validate } from '@switchboard/nodes';
import type { Flow } from '@switchboard/schemas';
import { docToFlow, nodeToYMap, parts } from '@switchboard/schemas/ydoc';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { WebsocketProvider } from 'y-websocket';
import type * as Y from 'yjs';
import { runFlow } from '../../runtime/src/engine/index.js';
import { agent, collectRun, edge, flow, node } from '../../runtime/src/engine/testing/index.js';
import { makeOpenAIProvider } from '../../runtime/src/models/openai.js';
import {
  type FakeOpenAIServer,
  startFakeOpenAIServer,
} from '../../runtime/src/models/testing/fake-openai-server.js';
import { createServer, type SwitchboardServer } from '../../runtime/src/server/index.js';
import { simpleFlow, testServer, until } from '../server/helpers.js';
import { enterRoom } from './helpers.js';
import { pollution, repair } from './pollution.js';

afterEach(() => {
  const dirty = pollution();
  repair();
  expect(dirty, 'Object.prototype was polluted').toEqual([]);
});

/** start → <id> (agent) → end. */
function agentWithId(id: string): Flow {
  return flow(
    [node('start', 'start'), agent(id), node('end', 'end')],
    [edge('start', id, 'handover', undefined, 'e1'), edge(id, 'end', 'handover', undefined, 'e2')],
    [{ fallback: true, text: 'ok' }],
  );
}

describe('the validator refuses reserved ids with a named error', () => {
  it.each([
    [
      'a node id',
      (f: Flow) => ({ ...f, nodes: f.nodes.map((n) => (n.id === 'a' ? { ...n, id: '__proto__' } : n)) }),
      '/nodes/1/id',
    ],
    ['the flow id', (f: Flow) => ({ ...f, id: 'constructor' }), '/id'],
    [
      'an edge id',
      (f: Flow) => ({ ...f, edges: f.edges.map((e, i) => (i === 0 ? { ...e, id: 'prototype' } : e)) }),
      '/edges/0/id',
    ],
    [
      'a model name',
      (f: Flow) => ({ ...f, models: { default: { provider: 'scripted', model: '__proto__', script: [] } } }),
      '/models/default/model',
    ],
  ])('%s', (_what, change, path) => {
    const v = validate(change(agentWithId('a')));
    expect(v.ok).toBe(false);
    expect(v.errors).toContainEqual(expect.objectContaining({ code: 'reserved-id', path }));
    expect(v.errors.find((e) => e.code === 'reserved-id')?.message).toMatch(
      /__proto__, constructor or prototype/,
    );
  });
});

describe('the engine keeps data out of Object.prototype', () => {
  it('a node id __proto__ is refused before the run, and nothing is polluted', async () => {
    const { result } = await collectRun(agentWithId('__proto__'), 'go');
    expect(result.status).toBe('failed');
    expect(result.error?.message).toMatch(/__proto__/);
  });

  it('with validation off, a node id __proto__ runs without touching Object.prototype', async () => {
    const { result } = await collectRun(agentWithId('__proto__'), 'go', { validate: false });
    expect(result.status).toBe('completed');
    // Afterwards a good flow still validates (it was refused with 163 errors before the fix).
    expect(validate(simpleFlow()).errors).toEqual([]);
  });

  it('a human node id __proto__ with an answer (validation off) stays out of Object.prototype', async () => {
    const f = flow(
      [node('start', 'start'), node('__proto__', 'human', { question: 'ok?' }), node('end', 'end')],
      [
        edge('start', '__proto__', 'handover', undefined, 'e1'),
        edge('__proto__', 'end', 'handover', undefined, 'e2'),
      ],
    );
    // Parsed, as a request body would be: a `__proto__` literal key would set the prototype instead.
    const answers = JSON.parse('{"__proto__": "yes"}') as Record<string, string>;
    const { result } = await collectRun(f, 'go', { validate: false, answers, humanInput: 'fail' });
    expect(result).toMatchObject({ status: 'completed', output: 'yes' });
  });

  it('a scripted model named __proto__ (validation off) counts usage in its own entry', async () => {
    const f = agentWithId('a');
    f.models = {
      default: { provider: 'scripted', model: '__proto__', script: [{ fallback: true, text: 'ok' }] },
    };
    const { result } = await collectRun(f, 'go', { validate: false });
    expect(result.status).toBe('completed');
  });

  describe('a model endpoint answering "model": "__proto__"', () => {
    let fake: FakeOpenAIServer;
    beforeAll(async () => {
      fake = await startFakeOpenAIServer({ model: '__proto__', fallback: { text: 'hello' } });
    });
    afterAll(async () => {
      await fake.close();
    });

    it('is counted under its name and pollutes nothing', async () => {
      const f = agentWithId('a');
      f.models = { default: { provider: 'openai', model: 'm', baseURL: fake.url } };
      const cps: unknown[] = [];
      const h = runFlow(f, 'go', {
        models: {
          default: makeOpenAIProvider(
            'default',
            f.models.default!,
            { resolveEnv: (v) => v },
            {
              allowLocalEndpoints: true,
            },
          ),
        },
        checkpoint: (cp) => {
          cps.push(cp.data);
          return undefined;
        },
      });
      const r = await h.result;
      expect(r.status).toBe('completed');
      expect(fake.requests.length).toBeGreaterThan(0);
      const last = cps.at(-1) as { data: { counters: { byModel: Record<string, { turns: number }> } } };
      expect(Object.hasOwn(last.data.counters.byModel, '__proto__')).toBe(true);
      expect(Object.getOwnPropertyDescriptor(last.data.counters.byModel, '__proto__')?.value).toMatchObject({
        turns: 1,
      });
    });
  });
});

describe('REST routes answer 404 or 400 for reserved ids', () => {
  let s: Awaited<ReturnType<typeof testServer>>;
  beforeAll(async () => {
    s = await testServer();
  });
  afterAll(async () => {
    await s.close();
  });
  const json = (method: string, url: string, body?: unknown) =>
    s.req({
      method,
      url,
      ...(body === undefined
        ? {}
        : { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });

  it.each(['__proto__', 'constructor', 'prototype'])('GET /api/runs/%s and its events: 404', async (id) => {
    expect((await json('GET', `/api/runs/${id}`)).statusCode).toBe(404);
    expect((await json('GET', `/api/runs/${id}/events`)).statusCode).toBe(404);
    expect((await json('POST', `/api/runs/${id}/commands`, { type: 'pause' })).statusCode).toBe(404);
  });

  it.each(['__proto__', 'constructor', 'prototype'])('GET and DELETE /api/flows/%s: 404', async (id) => {
    expect((await json('GET', `/api/flows/${id}`)).statusCode).toBe(404);
    expect((await json('DELETE', `/api/flows/${id}`)).statusCode).toBe(404);
  });

  it.each(['__proto__', 'constructor', 'prototype'])('POST /api/runs {"flowId":"%s"}: 404', async (id) => {
    const r = await json('POST', '/api/runs', { flowId: id, input: 'x' });
    expect(r.statusCode).toBe(404);
    expect(Object.keys(s.store.catalog.data.runs)).toEqual([]);
  });

  it.each(['__proto__', 'constructor', 'prototype'])('PUT /api/flows/%s: 400 naming the id', async (id) => {
    const r = await json('PUT', `/api/flows/${id}`, { ...simpleFlow(), id });
    expect(r.statusCode).toBe(400);
    expect(r.body).toMatch(/reserved-id/);
    expect(Object.hasOwn(s.store.catalog.data.flows, id)).toBe(false);
  });

  it('POST /api/flows with a node id __proto__: 400 naming the node, and nothing stored', async () => {
    const f = { ...agentWithId('__proto__'), id: 'proto-node' };
    const r = await json('POST', '/api/flows', f);
    expect(r.statusCode).toBe(400);
    expect(r.json().problems ?? r.json().details ?? r.body).toBeTruthy();
    expect(r.body).toMatch(/\/nodes\/1\/id/);
    expect((await json('GET', '/api/flows/proto-node')).statusCode).toBe(404);
  });

  it('after all of that a known-good flow still validates, is stored and runs', async () => {
    expect((await json('PUT', '/api/flows/simple', simpleFlow())).statusCode).toBe(201);
    const r = await json('POST', '/api/runs', { flowId: 'simple', input: 'x' });
    expect(r.statusCode).toBe(201);
    expect((await json('GET', '/api/health')).statusCode).toBe(200);
  });
});

describe('a co-editing room (a real y-websocket client) cannot save a reserved id or key', () => {
  let s: SwitchboardServer;
  let port: number;
  const providers: WebsocketProvider[] = [];
  beforeAll(async () => {
    s = await createServer({
      dataDir: mkdtempSync(join(tmpdir(), 'sb-proto-rooms-')),
      editorDir: false,
      port: 0,
      rooms: { saveDelayMs: 60_000, saveMaxDelayMs: 60_000 },
    });
    ({ port } = await s.listen());
  });
  afterAll(async () => {
    for (const p of providers) p.destroy();
    const dir = s.store.dir;
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function enter(room: string): Promise<Y.Doc> {
    return enterRoom(port, room, providers);
  }

  async function put(id: string) {
    const r = await s.app.inject({
      method: 'PUT',
      url: `/api/flows/${id}`,
      headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json' },
      payload: JSON.stringify(simpleFlow(id)),
    });
    expect(r.statusCode).toBe(201);
  }

  it('a node with id __proto__ is never written, and runs of the stored flow stay clean', async () => {
    await put('room-id');
    const doc = await enter('room-id');
    doc.transact(() => {
      const p = parts(doc);
      p.nodes.set('__proto__', nodeToYMap(agent('__proto__')));
      p.nodeOrder.push(['__proto__']);
    });
    await until(() => parts(s.rooms.docOf('room-id')!).nodes.has('__proto__'), 'the edit in the room');
    await s.rooms.flush('room-id');
    expect(s.roomStore.statusOf('room-id')?.state).toBe('invalid');
    expect(s.store.catalog.data.flows['room-id']!.rev).toBe(1);
    expect(s.store.catalog.data.flows['room-id']!.flow.nodes.map((n) => n.id)).not.toContain('__proto__');
  });

  it('a config key __proto__ (lib0 decodes it as a prototype) is refused as a key, not read as fields', async () => {
    await put('room-key');
    const doc = await enter('room-key');
    const m = parts(doc).nodes.get('writer')!;
    // Parsed, so `__proto__` is an own key of the value the client encodes.
    const config = JSON.parse(
      '{"role": "r", "model": "default", "prompt": [{"text": "x"}], "__proto__": {"polluted": 1}}',
    );
    doc.transact(() => m.set('config', config));
    const roomConfig = () =>
      parts(s.rooms.docOf('room-key')!).nodes.get('writer')?.get('config') as { role?: string } | undefined;
    await until(() => roomConfig()?.role === 'r', 'the edit in the room');
    // What the server reads from the room holds the key as a key, not as a prototype.
    const read = docToFlow(s.rooms.docOf('room-key')!).nodes.find((n) => n.id === 'writer')!.config;
    expect(Object.hasOwn(read, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(read)).toBe(Object.prototype);
    expect((read as { polluted?: number }).polluted).toBeUndefined();
    expect(validate(docToFlow(s.rooms.docOf('room-key')!)).errors).toContainEqual(
      expect.objectContaining({ code: 'reserved-key', path: '/nodes/1/config/__proto__' }),
    );
    await s.rooms.flush('room-key');
    expect(s.roomStore.statusOf('room-key')?.state).toBe('invalid');
    expect(s.store.catalog.data.flows['room-key']!.rev).toBe(1);
    expect(({} as { polluted?: number }).polluted).toBeUndefined();
  });
});
