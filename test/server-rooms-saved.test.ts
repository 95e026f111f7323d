/**
 * Co-edited rooms are saved to the catalog (room-persistence.ts), with real servers, real
 * y-websocket clients and real files: edits survive everyone leaving and a restart; an invalid
 * document is never written and is written once it is valid again; opening a flow saves nothing;
 * REST writes and room saves do not clobber each other (REST settles the room first, If-Match sees
 * the editors' work, a write lands in the open room); a stdio command first seen in a co-edit
 * stays quarantined.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultRegistry } from '@switchboard/nodes';
import { type Flow, serializeFlow } from '@switchboard/schemas';
import {
  applyFlowToDoc,
  configLayout,
  docToFlow as docToFlowIn,
  edgeToYMap,
  flowTextHash,
  loadFlowIntoDoc,
  parts,
  ROOM_STATUS_FIELD,
  readRoomStatus,
  setConfigField,
} from '@switchboard/schemas/ydoc';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { approveFlow, isFlowApproved } from '../runtime/src/mcp/consent.js';
import { shutdownMcpPool } from '../runtime/src/mcp/pool.js';
import { TrustStore } from '../runtime/src/mcp/trust.js';
import { createServer, type ServerOptions, type SwitchboardServer } from '../runtime/src/server/index.js';
import { prepareDangerousForms } from './fixtures/mcp/dangerous.js';
import { simpleFlow, until } from './server/helpers.js';

let dir: string | undefined;
const servers: SwitchboardServer[] = [];
const providers: WebsocketProvider[] = [];
const savedHome = process.env.SWITCHBOARD_HOME;

beforeAll(() => {
  // Trust decisions go to a file of this test's own (and must stay empty).
  process.env.SWITCHBOARD_HOME = mkdtempSync(join(tmpdir(), 'sb-rooms-home-'));
});
afterAll(async () => {
  await shutdownMcpPool();
  rmSync(process.env.SWITCHBOARD_HOME!, { recursive: true, force: true });
  if (savedHome === undefined) delete process.env.SWITCHBOARD_HOME;
  else process.env.SWITCHBOARD_HOME = savedHome;
});
afterEach(async () => {
  for (const p of providers.splice(0)) p.destroy();
  for (const s of servers.splice(0)) await s.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A server over `dir` (kept across restarts within a test), listening on a free port. */
async function start(rooms: ServerOptions['rooms'] = { saveDelayMs: 60_000, saveMaxDelayMs: 60_000 }) {
  dir ??= mkdtempSync(join(tmpdir(), 'sb-rooms-'));
  const s = await createServer({ dataDir: dir, editorDir: false, port: 0, rooms });
  servers.push(s);
  const { port } = await s.listen();
  const json = (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) =>
    s.app.inject({
      method: method as 'GET',
      url,
      headers: {
        host: `127.0.0.1:${port}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
  return { s, port, json };
}

async function stop(s: SwitchboardServer): Promise<void> {
  servers.splice(servers.indexOf(s), 1);
  await s.close();
}

/** An editor's view of a room: a y-websocket client with the Origin of the editor's page. */
async function enter(port: number, room: string, doc = new Y.Doc()) {
  const origin = `http://127.0.0.1:${port}`;
  const Polyfill = class extends WebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols, { origin });
    }
  };
  const provider = new WebsocketProvider(`ws://127.0.0.1:${port}/api/yjs`, room, doc, {
    WebSocketPolyfill: Polyfill as never,
    disableBc: true,
  });
  providers.push(provider);
  await until(() => provider.synced, `synced with ${room}`);
  return { doc, provider, leave: () => provider.destroy() };
}

/** The layout the server and the editor share (the built-in kinds' schemas). */
const L = configLayout(defaultRegistry);
const docToFlow = (doc: Y.Doc) => docToFlowIn(doc, L);

/** What an editor does for a config change: the field's smallest change, in one transaction. */
function setConfig(doc: Y.Doc, node: string, key: string, value: unknown): void {
  const m = parts(doc).nodes.get(node)!;
  doc.transact(() =>
    setConfigField(m.get('config') as Y.Map<unknown>, key, value, L.node(String(m.get('kind')))),
  );
}

const stored = (s: SwitchboardServer, id: string) => s.store.catalog.data.flows[id];
const writerRole = (f: Flow | undefined) =>
  (f?.nodes.find((n) => n.id === 'writer')?.config as { role?: string } | undefined)?.role;

describe('co-edited rooms are saved', { timeout: 120_000 }, () => {
  it('everyone leaves: the catalog holds the edit (the last one out saves, no timer needed)', async () => {
    const { s, port, json } = await start();
    expect((await json('PUT', '/api/flows/simple', simpleFlow())).statusCode).toBe(201);
    const a = await enter(port, 'simple');
    // The room opened on the stored flow.
    expect(serializeFlow(docToFlow(a.doc))).toBe(serializeFlow(stored(s, 'simple')!.flow));
    const b = await enter(port, 'simple');
    setConfig(a.doc, 'writer', 'role', 'Edited together');
    await until(() => writerRole(docToFlow(b.doc)) === 'Edited together', 'the edit at b');
    expect(stored(s, 'simple')!.rev).toBe(1);
    a.leave();
    b.leave();
    await until(() => s.roomStore.statusOf('simple')?.state === 'saved', 'the room saved');
    expect(s.roomStore.statusOf('simple')).toMatchObject({ state: 'saved', rev: 2 });
    expect(stored(s, 'simple')!.rev).toBe(2);
    expect(writerRole(stored(s, 'simple')!.flow)).toBe('Edited together');
    // The REST view agrees, with the new revision as its ETag.
    const r = await json('GET', '/api/flows/simple');
    expect(r.headers.etag).toBe('"2"');
    expect(writerRole(r.json())).toBe('Edited together');
  });

  it('saves a quiet moment after the last change while people stay; a burst is one revision', async () => {
    const { s, port, json } = await start({ saveDelayMs: 400, saveMaxDelayMs: 60_000 });
    await json('PUT', '/api/flows/simple', simpleFlow());
    const a = await enter(port, 'simple');
    for (let i = 1; i <= 5; i++) setConfig(a.doc, 'writer', 'role', `draft ${i}`);
    // Editors learn how saving went from the server's awareness state, about their own text.
    const told = () =>
      [...a.provider.awareness.getStates().values()]
        .map((st) => readRoomStatus((st as Record<string, unknown>)[ROOM_STATUS_FIELD]))
        .find((x) => x !== undefined);
    await until(() => told()?.state === 'saved', 'the save told to the editor');
    expect(told()).toEqual({ state: 'saved', rev: 2, hash: flowTextHash(serializeFlow(docToFlow(a.doc))) });
    expect(stored(s, 'simple')!.rev).toBe(2);
    expect(writerRole(stored(s, 'simple')!.flow)).toBe('draft 5');
    await s.rooms.flush('simple');
    expect(stored(s, 'simple')!.rev).toBe(2);
  });

  it('never writes an invalid document; writes it once it is valid again', async () => {
    const { s, port, json } = await start();
    await json('PUT', '/api/flows/simple', simpleFlow());
    const before = serializeFlow(stored(s, 'simple')!.flow);
    const a = await enter(port, 'simple');
    // Mid-edit: an edge whose target is not drawn yet.
    a.doc.transact(() => {
      const p = parts(a.doc);
      p.edges.set(
        'dangling',
        edgeToYMap({ id: 'dangling', kind: 'handover', source: 'writer', target: 'nowhere' }),
      );
      p.edgeOrder.push(['dangling']);
    });
    await until(() => parts(s.rooms.docOf('simple')!).edges.has('dangling'), 'the edit in the room');
    await s.rooms.flush('simple');
    expect(s.roomStore.statusOf('simple')?.state).toBe('invalid');
    expect(s.roomStore.statusOf('simple')?.hash).toBe(flowTextHash(serializeFlow(docToFlow(a.doc))));
    expect(s.roomStore.statusOf('simple')?.errors).toBeGreaterThan(0);
    expect(stored(s, 'simple')!.rev).toBe(1);
    expect(serializeFlow(stored(s, 'simple')!.flow)).toBe(before);
    // A REST reader sees the last valid revision meanwhile.
    expect((await json('GET', '/api/flows/simple')).headers.etag).toBe('"1"');
    // Leaving does not write it either.
    a.leave();
    await until(() => s.rooms.pending('simple') === false, 'the leave flush');
    await s.rooms.flush('simple');
    expect(stored(s, 'simple')!.rev).toBe(1);
    // Someone fixes it (and changes something else): now it is saved.
    const b = await enter(port, 'simple');
    expect(parts(b.doc).edges.has('dangling')).toBe(true);
    b.doc.transact(() => {
      const p = parts(b.doc);
      p.edges.delete('dangling');
      p.edgeOrder.delete(p.edgeOrder.toArray().indexOf('dangling'), 1);
    });
    setConfig(b.doc, 'writer', 'role', 'Fixed');
    b.leave();
    await until(() => stored(s, 'simple')!.rev === 2, 'the fixed flow saved');
    expect(writerRole(stored(s, 'simple')!.flow)).toBe('Fixed');
    expect(stored(s, 'simple')!.flow.edges.some((e) => e.id === 'dangling')).toBe(false);
  });

  it('a restart keeps the saved version, and an editor holding the old document merges back without doubling', async () => {
    const first = await start();
    await first.json('PUT', '/api/flows/simple', simpleFlow());
    const a = await enter(first.port, 'simple');
    setConfig(a.doc, 'writer', 'role', 'Before the restart');
    await until(
      () => writerRole(docToFlow(first.s.rooms.docOf('simple')!)) === 'Before the restart',
      'the edit in the room',
    );
    // Shutdown saves what is pending, with the editor still connected.
    await stop(first.s);
    a.leave();
    expect(readdirSync(join(dir!, 'rooms'))).toEqual(['simple.ydoc']);

    const second = await start();
    expect(writerRole(stored(second.s, 'simple')!.flow)).toBe('Before the restart');
    expect(stored(second.s, 'simple')!.rev).toBe(2);
    // The editor kept its document (and changed it while the server was down), then reconnects.
    setConfig(a.doc, 'writer', 'role', 'While it was down');
    const again = await enter(second.port, 'simple', a.doc);
    const room = () => second.s.rooms.docOf('simple')!;
    await until(() => writerRole(docToFlow(room())) === 'While it was down', 'the offline edit in the room');
    const nodes = stored(second.s, 'simple')!.flow.nodes.length;
    expect(parts(room()).nodeOrder.length).toBe(nodes);
    expect(parts(again.doc).nodeOrder.length).toBe(nodes);
    again.leave();
    await until(() => stored(second.s, 'simple')!.rev === 3, 'the offline edit saved');
    expect(writerRole(stored(second.s, 'simple')!.flow)).toBe('While it was down');
  });

  it('control: without the saved history a reconnecting editor doubles the order lists', async () => {
    const first = await start();
    await first.json('PUT', '/api/flows/simple', simpleFlow());
    const a = await enter(first.port, 'simple');
    setConfig(a.doc, 'writer', 'role', 'x');
    await until(() => writerRole(docToFlow(first.s.rooms.docOf('simple')!)) === 'x', 'the edit in the room');
    await stop(first.s);
    a.leave();
    rmSync(join(dir!, 'rooms'), { recursive: true });
    const second = await start();
    await enter(second.port, 'simple', a.doc);
    const nodes = stored(second.s, 'simple')!.flow.nodes.length;
    await until(() => parts(a.doc).nodeOrder.length > nodes, 'the doubled order list');
  });

  it('opening a flow the server does not have saves nothing; the first change saves it', async () => {
    const { s, port } = await start();
    const a = await enter(port, 'fresh');
    // The editor seeds an empty room with what it opened (a template, a new flow).
    loadFlowIntoDoc(a.doc, simpleFlow('fresh'), L);
    await until(() => s.rooms.docOf('fresh') && parts(s.rooms.docOf('fresh')!).nodes.size > 0, 'the seed');
    await s.rooms.flush('fresh');
    expect(stored(s, 'fresh')).toBeUndefined();
    expect(s.roomStore.statusOf('fresh')?.state).toBe('unchanged');
    setConfig(a.doc, 'writer', 'role', 'Worth keeping');
    a.leave();
    await until(() => stored(s, 'fresh'), 'the new flow saved');
    expect(stored(s, 'fresh')!.rev).toBe(1);
    expect(writerRole(stored(s, 'fresh')!.flow)).toBe('Worth keeping');
  });

  it('a document whose id is not the room’s is not written (no flow is created or overwritten by a rename)', async () => {
    const { s, port, json } = await start();
    await json('PUT', '/api/flows/simple', simpleFlow());
    await json('PUT', '/api/flows/other', simpleFlow('other'));
    const a = await enter(port, 'simple');
    a.doc.transact(() => parts(a.doc).meta.set('id', 'other'));
    a.leave();
    await until(() => s.roomStore.statusOf('simple')?.state === 'id-mismatch', 'the refused save');
    expect(stored(s, 'simple')!.rev).toBe(1);
    expect(stored(s, 'other')!.rev).toBe(1);
    expect(stored(s, 'other')!.flow.name).toBe('Flow other');
  });
});

describe('REST writes and open rooms', { timeout: 120_000 }, () => {
  it('reads settle the room first; If-Match refuses a write over the editors’ work; a write lands in the room as the smallest change', async () => {
    const { s, port, json } = await start();
    await json('PUT', '/api/flows/simple', simpleFlow());
    const a = await enter(port, 'simple');
    setConfig(a.doc, 'writer', 'role', 'Editor’s work');
    await until(() => s.rooms.pending('simple'), 'the edit pending in the room');
    // A REST client that read revision 1 before the edit…
    const stale = await json(
      'PUT',
      '/api/flows/simple',
      { ...simpleFlow(), name: 'Stale' },
      { 'if-match': '"1"' },
    );
    expect(stale.statusCode).toBe(412);
    expect(stale.json().error.code).toBe('conflict');
    expect(writerRole(stored(s, 'simple')!.flow)).toBe('Editor’s work');
    expect(stored(s, 'simple')!.rev).toBe(2);
    // …reads again: it sees the editors' version, and its write goes through.
    const got = await json('GET', '/api/flows/simple');
    expect(got.headers.etag).toBe('"2"');
    expect(writerRole(got.json())).toBe('Editor’s work');
    const writer = parts(a.doc).nodes.get('writer');
    const start_ = parts(a.doc).nodes.get('start');
    const put = await json(
      'PUT',
      '/api/flows/simple',
      { ...(got.json() as Flow), name: 'Renamed by the API' },
      { 'if-match': '"2"' },
    );
    expect(put.statusCode).toBe(200);
    expect(put.json().rev).toBe(3);
    await until(() => parts(a.doc).meta.get('name') === 'Renamed by the API', 'the REST write in the room');
    // Only the name changed in the shared document: the nodes are the same Yjs maps.
    expect(parts(a.doc).nodes.get('writer')).toBe(writer);
    expect(parts(a.doc).nodes.get('start')).toBe(start_);
    expect(writerRole(docToFlow(a.doc))).toBe('Editor’s work');
    // The room does not write it again.
    await s.rooms.flush('simple');
    expect(stored(s, 'simple')!.rev).toBe(3);
    // A write without If-Match wins too, and everyone sees it.
    const f = { ...(got.json() as Flow), name: 'Replaced' };
    (f.nodes.find((n) => n.id === 'writer')!.config as Record<string, unknown>).role = 'From the API';
    expect((await json('PUT', '/api/flows/simple', f)).statusCode).toBe(200);
    await until(() => writerRole(docToFlow(a.doc)) === 'From the API', 'the overwrite in the room');
    a.leave();
    await s.rooms.flush('simple');
    expect(stored(s, 'simple')!.rev).toBe(4);
    expect(serializeFlow(stored(s, 'simple')!.flow)).toBe(serializeFlow(docToFlow(a.doc)));
  });

  it('a run of a stored flow runs what its editors see, not the last quiet-moment save', async () => {
    const { s, port, json } = await start();
    await json('PUT', '/api/flows/simple', simpleFlow());
    const a = await enter(port, 'simple');
    setConfig(a.doc, 'writer', 'role', 'Role from the room');
    await until(() => s.rooms.pending('simple'), 'the edit pending in the room');
    expect(stored(s, 'simple')!.rev).toBe(1);
    const started = await json('POST', '/api/runs', { flowId: 'simple', input: 'go' });
    expect(started.statusCode).toBe(201);
    // The room was saved before the run was recorded, and the run's spec holds the edit.
    expect(stored(s, 'simple')!.rev).toBe(2);
    const runId = started.json().run.id as string;
    await s.runs.settled(runId);
    const spec = await s.store.readSpec(runId);
    expect(writerRole(spec!.flow)).toBe('Role from the room');
  });

  it('an import with overwrite lands in the room; a delete closes the room and a later edit does not bring it back', async () => {
    const { s, port, json } = await start();
    await json('PUT', '/api/flows/simple', simpleFlow());
    const a = await enter(port, 'simple');
    const imported = { ...simpleFlow(), name: 'Imported' };
    expect((await json('POST', '/api/flows/import?overwrite=true', imported)).statusCode).toBe(200);
    await until(() => parts(a.doc).meta.get('name') === 'Imported', 'the import in the room');
    expect((await json('DELETE', '/api/flows/simple')).statusCode).toBe(204);
    expect(existsSync(join(dir!, 'rooms', 'simple.ydoc'))).toBe(false);
    await s.rooms.flush('simple');
    expect(stored(s, 'simple')).toBeUndefined();
    // The room is gone (test/server/lifecycle.test.ts covers what its editors are told).
    expect(s.rooms.docOf('simple')).toBeUndefined();
    await until(() => !a.provider.shouldConnect, 'the editor stops reconnecting');
    setConfig(a.doc, 'writer', 'role', 'Still editing');
    a.leave();
    await new Promise((r) => setTimeout(r, 200));
    expect(stored(s, 'simple')).toBeUndefined();
  });
});

describe('consent', { timeout: 120_000 }, () => {
  it('a stdio command first seen in a co-edit is saved but stays quarantined; saving approves nothing', async () => {
    const { s, port, json } = await start();
    const { markers, forms } = prepareDangerousForms(dir!);
    const form = forms[15]!;
    await json('PUT', '/api/flows/tooly', simpleFlow('tooly'));
    const a = await enter(port, 'tooly');
    // In the room: a tool node on a stdio server, granted to an agent whose script calls it.
    const f = docToFlow(a.doc);
    f.mcpServers = { s: form };
    f.models = {
      default: {
        provider: 'scripted',
        script: [
          { node: 'writer', toolCalls: [{ name: 't__echo', args: { text: 'x' } }] },
          { fallback: true, text: 'done' },
        ],
      },
    };
    f.nodes.push({ id: 't', kind: 'tool', position: { x: 0, y: 200 }, config: { server: 's' } });
    f.edges.push({ id: 'g', kind: 'tools', source: 't', target: 'writer' });
    applyFlowToDoc(a.doc, f, L);
    expect(parts(a.doc).nodes.get('t')).toBeInstanceOf(Y.Map);
    a.leave();
    await until(() => stored(s, 'tooly')?.rev === 2, 'the co-edit saved');
    expect(stored(s, 'tooly')!.flow.mcpServers?.s).toEqual(form);
    const trust = new TrustStore();
    expect(isFlowApproved(trust, stored(s, 'tooly')!.flow)).toBe(false);

    const run = await json('POST', '/api/runs', { flowId: 'tooly', input: 'go' });
    expect(run.statusCode).toBe(201);
    const id = run.json().run.id as string;
    const ended = await until(async () => {
      const r = (await json('GET', `/api/runs/${id}`)).json().run;
      return ['completed', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
    }, 'the run to end');
    expect(ended.status).toBe('failed');
    expect(JSON.stringify(ended.error)).toContain('not approved by the local operator');
    expect(readdirSync(markers)).toEqual([]);
    expect(isFlowApproved(new TrustStore(), stored(s, 'tooly')!.flow)).toBe(false);

    // Control: approved locally, the same saved flow runs it (the marker shows a spawn is seen).
    approveFlow(new TrustStore(), stored(s, 'tooly')!.flow);
    const again = (await json('POST', '/api/runs', { flowId: 'tooly', input: 'go' })).json().run.id as string;
    await until(async () => {
      const r = (await json('GET', `/api/runs/${again}`)).json().run;
      return ['completed', 'failed'].includes(r.status);
    }, 'the approved run');
    expect(existsSync(join(markers, 'm15'))).toBe(true);

    // The approved flow's server edited in a room (one more env key): quarantined again.
    rmSync(join(markers, 'm15'));
    const b = await enter(port, 'tooly');
    const g = docToFlow(b.doc);
    const srv = g.mcpServers!.s as { command: string; env?: Record<string, string> };
    g.mcpServers = { s: { ...srv, env: { ...srv.env, EXTRA: '1' } } };
    applyFlowToDoc(b.doc, g);
    b.leave();
    await until(() => stored(s, 'tooly')?.rev === 3, 'the second co-edit saved');
    const third = (await json('POST', '/api/runs', { flowId: 'tooly', input: 'go' })).json().run.id as string;
    const refused = await until(async () => {
      const r = (await json('GET', `/api/runs/${third}`)).json().run;
      return ['completed', 'failed'].includes(r.status) ? r : undefined;
    }, 'the run of the edited flow');
    expect(refused.status).toBe('failed');
    expect(JSON.stringify(refused.error)).toContain('changed since they were approved');
    expect(existsSync(join(markers, 'm15'))).toBe(false);
  });
});
