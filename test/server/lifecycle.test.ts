/**
 * The flow lifecycle over real HTTP and real y-websocket clients: a delete closes the room for
 * everyone in it with a named reason (who deleted it), leaves a tombstone that no room, cache,
 * late edit or restart brings back; shipped examples are read-only templates copied into new
 * flows (`POST /api/flows/from-template/:templateId`); every write names who made it.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultRegistry } from '@switchboard/nodes';
import { type Flow, serializeFlow } from '@switchboard/schemas';
import {
  applyFlowToDoc as applyFlowToDocIn,
  configLayout,
  docToFlow as docToFlowIn,
} from '@switchboard/schemas/ydoc';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { createServer, type ServerOptions, type SwitchboardServer } from '../../runtime/src/server/index.js';
import { simpleFlow, until } from './helpers.js';

/** The layout the server and the editor share (the built-in kinds' schemas). */
const L = configLayout(defaultRegistry);
const docToFlow = (doc: Y.Doc) => docToFlowIn(doc, L);
const applyFlowToDoc = (doc: Y.Doc, flow: unknown, origin?: unknown) =>
  applyFlowToDocIn(doc, flow, L, ...(origin === undefined ? [] : [origin]));

const ROOT = join(import.meta.dirname, '..', '..');
const TRIAGE_TEXT = readFileSync(join(ROOT, 'flows', 'support-triage.json'), 'utf8');
const TRIAGE = JSON.parse(TRIAGE_TEXT) as Flow;
/** The close code of a deleted flow's room (runtime/src/server/flow-lifecycle.ts). */
const DELETED = 4410;

let dir: string | undefined;
const servers: SwitchboardServer[] = [];
const providers: WebsocketProvider[] = [];
afterEach(async () => {
  for (const p of providers.splice(0)) p.destroy();
  for (const s of servers.splice(0)) await s.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A server over `dir` (kept across restarts within a test) on a free port. */
async function start(rooms: ServerOptions['rooms'] = { saveDelayMs: 50, saveMaxDelayMs: 200 }) {
  dir ??= mkdtempSync(join(tmpdir(), 'sb-lifecycle-'));
  const s = await createServer({ dataDir: dir, editorDir: false, port: 0, rooms });
  servers.push(s);
  const { port, url } = await s.listen();
  /** Real HTTP, as the editor sends it (`X-Switchboard-User` names the person). */
  const http = async (method: string, path: string, body?: unknown, user?: string) => {
    const headers: Record<string, string> = { origin: url };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (user !== undefined) headers['x-switchboard-user'] = encodeURIComponent(user);
    const r = await fetch(`${url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    // biome-ignore lint/suspicious/noExplicitAny: test convenience
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: r.status, json, text };
  };
  return { s, port, url, http };
}

async function stop(s: SwitchboardServer): Promise<void> {
  servers.splice(servers.indexOf(s), 1);
  await s.close();
}

interface Editor {
  doc: Y.Doc;
  provider: WebsocketProvider;
  /** How the server closed the room for this editor (a terminal close), once it did. */
  closed(): { code: number; reason: string } | undefined;
}

/** An editor in a room: a stock y-websocket client with the editor page's Origin and a name. */
function enter(port: number, room: string, name: string, doc = new Y.Doc()): Editor {
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
  provider.awareness.setLocalStateField('user', { name, color: '#2563eb' });
  providers.push(provider);
  let closed: { code: number; reason: string } | undefined;
  provider.on('closed', (e: { code: number; reason: string }) => {
    closed = e;
  });
  return { doc, provider, closed: () => closed };
}

async function synced(e: Editor): Promise<void> {
  await until(() => e.provider.synced, 'synced');
}

/** What an editor does to change the flow's name (the same whatever the document's layout). */
function rename(doc: Y.Doc, name: string): void {
  applyFlowToDoc(doc, { ...docToFlow(doc), name }, 'test-edit');
}

describe('delete', { timeout: 60_000 }, () => {
  it('two editors in the room are both told, with who deleted it; their next edits recreate nothing', async () => {
    const { s, port, http } = await start();
    expect((await http('PUT', '/api/flows/simple', simpleFlow(), 'Ada')).status).toBe(201);
    const ada = enter(port, 'simple', 'Ada');
    const bob = enter(port, 'simple', 'Bob');
    await synced(ada);
    await synced(bob);
    rename(bob.doc, 'Edited by Bob');
    await until(() => s.store.catalog.data.flows.simple?.flow.name === 'Edited by Bob', 'the room saved');
    expect(s.store.catalog.data.flows.simple!.updatedBy).toBe('Bob');
    await until(() => existsSync(join(dir!, 'rooms', 'simple.ydoc')), 'the room history on disk');

    expect((await http('DELETE', '/api/flows/simple', undefined, 'Carol Ødegård')).status).toBe(204);
    for (const e of [ada, bob]) {
      await until(() => e.closed(), 'the room closed for an editor');
      expect(e.closed()).toEqual({ code: DELETED, reason: 'deleted by Carol Ødegård' });
      // y-websocket stops: its next edit goes nowhere.
      expect(e.provider.shouldConnect).toBe(false);
    }
    expect(s.rooms.docOf('simple')).toBeUndefined();
    expect(existsSync(join(dir!, 'rooms', 'simple.ydoc'))).toBe(false);

    // Editing on anyway, and even forcing a reconnect: the room refuses; nothing is recreated.
    rename(ada.doc, 'Ada keeps typing');
    ada.provider.connect();
    await until(() => !ada.provider.shouldConnect, 'the reconnect refused');
    await new Promise((r) => setTimeout(r, 300));
    expect(s.store.catalog.data.flows.simple).toBeUndefined();
    expect(s.rooms.docOf('simple')).toBeUndefined();

    const gone = await http('GET', '/api/flows/simple');
    expect(gone.status).toBe(410);
    expect(gone.json).toMatchObject({ error: { code: 'deleted' }, deletedBy: 'Carol Ødegård' });
    expect(gone.json.error.message).toContain('was deleted by Carol Ødegård');
    expect((await http('GET', '/api/flows')).json.flows).toEqual([]);
  });

  it('reopened within 1 s, after the idle-room time, and after a restart: the deleted content never returns', async () => {
    // Rooms idle for 300 ms stand in for the 30 s default, so "60 s later" is one second here.
    const { s, port, http } = await start({ saveDelayMs: 50, saveMaxDelayMs: 200, idleMs: 300 });
    await http('PUT', '/api/flows/simple', simpleFlow());
    const ada = enter(port, 'simple', 'Ada');
    await synced(ada);
    rename(ada.doc, 'Secret draft');
    await until(() => s.store.catalog.data.flows.simple?.flow.name === 'Secret draft', 'saved');
    expect((await http('DELETE', '/api/flows/simple', undefined, 'Ada')).status).toBe(204);
    await until(() => ada.closed(), 'closed');

    /** Someone opens the id with an empty document, as a new browser does. */
    const reopen = async (who: string) => {
      const e = enter(port, 'simple', who);
      await until(() => e.closed(), `${who} refused`);
      expect(e.closed()).toEqual({ code: DELETED, reason: 'deleted by Ada' });
      expect(e.doc.share.size === 0 || docToFlow(e.doc).name !== 'Secret draft').toBe(true);
      expect((await http('GET', '/api/flows/simple')).status).toBe(410);
      expect((await http('GET', '/api/flows/simple/export')).status).toBe(410);
      expect(s.rooms.docOf('simple')).toBeUndefined();
    };
    await reopen('Within a second');
    await new Promise((r) => setTimeout(r, 1000));
    await reopen('After the idle time');

    // A restart keeps the tombstone (it is in the catalog).
    await stop(s);
    const again = await start();
    const e = enter(again.port, 'simple', 'After a restart');
    await until(() => e.closed(), 'refused after a restart');
    expect(e.closed()?.code).toBe(DELETED);
    expect((await again.http('GET', '/api/flows/simple')).json.deletedBy).toBe('Ada');
    expect(existsSync(join(dir!, 'rooms', 'simple.ydoc'))).toBe(false);
  });

  it('a deliberate REST write brings the id back with the new content only', async () => {
    const { s, port, http } = await start();
    await http('PUT', '/api/flows/simple', { ...simpleFlow(), name: 'Old content' });
    const ada = enter(port, 'simple', 'Ada');
    await synced(ada);
    await http('DELETE', '/api/flows/simple');
    await until(() => ada.closed(), 'closed');
    const fresh = { ...simpleFlow('simple', 'new draft'), name: 'New content' };
    expect((await http('PUT', '/api/flows/simple', fresh, 'Bob')).status).toBe(201);
    const bob = enter(port, 'simple', 'Bob');
    await synced(bob);
    expect(serializeFlow(docToFlow(bob.doc))).toBe(serializeFlow(fresh));
    expect(s.store.catalog.data.flows.simple).toMatchObject({ rev: 1, updatedBy: 'Bob' });
  });

  it('a room never saved (a new flow) can be deleted by the people in it', async () => {
    const { s, port, http } = await start();
    const ada = enter(port, 'untitled-abcd', 'Ada');
    await synced(ada);
    applyFlowToDoc(ada.doc, simpleFlow('untitled-abcd'));
    await until(() => s.rooms.docOf('untitled-abcd'), 'the room open');
    expect((await http('DELETE', '/api/flows/untitled-abcd', undefined, 'Ada')).status).toBe(204);
    await until(() => ada.closed(), 'closed');
    expect((await http('GET', '/api/flows/untitled-abcd')).status).toBe(410);
    expect((await http('DELETE', '/api/flows/nothing-here')).status).toBe(404);
  });
});

describe('templates', { timeout: 60_000 }, () => {
  it('POST /api/flows/from-template/support-triage → 201 and a new id each time, with the shipped content', async () => {
    const { s, port, http } = await start();
    const a = await http('POST', '/api/flows/from-template/support-triage', undefined, 'Ada');
    expect(a.status).toBe(201);
    expect(a.json).toMatchObject({ rev: 1, name: 'Support triage', template: 'support-triage' });
    expect(a.json.id).toMatch(/^support-triage-[a-z2-9]{4}$/);
    const got = await http('GET', `/api/flows/${a.json.id}`);
    expect(got.json).toEqual({ ...TRIAGE, id: a.json.id });
    expect(s.store.catalog.data.flows[a.json.id]!.updatedBy).toBe('Ada');

    // Someone edits their copy in its room…
    const ada = enter(port, a.json.id, 'Ada');
    await synced(ada);
    rename(ada.doc, 'Ada’s triage');
    await until(() => s.store.catalog.data.flows[a.json.id]?.flow.name === 'Ada’s triage', 'saved');
    // …and the next copy is the shipped one, under another id; the example is untouched.
    const b = await http('POST', '/api/flows/from-template/support-triage', { name: 'Bob’s triage' });
    expect(b.status).toBe(201);
    expect(b.json.id).not.toBe(a.json.id);
    const second = (await http('GET', `/api/flows/${b.json.id}`)).json as Flow;
    expect(second).toEqual({ ...TRIAGE, id: b.json.id, name: 'Bob’s triage' });
    expect(s.store.catalog.data.flows[b.json.id]!.updatedBy).toBe('local user');
    expect(s.store.catalog.data.flows['support-triage']).toBeUndefined();
    expect(readFileSync(join(ROOT, 'flows', 'support-triage.json'), 'utf8')).toBe(TRIAGE_TEXT);
  });

  it('an unknown template is 404; a name that could leave the folder is refused', async () => {
    const { http } = await start();
    const r = await http('POST', '/api/flows/from-template/no-such-template');
    expect(r.status).toBe(404);
    expect(r.json.error.message).toBe('no template no-such-template');
    for (const bad of ['..%2Fpackage', '.hidden', '%2Fetc%2Fpasswd'])
      expect([400, 404]).toContain((await http('POST', `/api/flows/from-template/${bad}`)).status);
    expect((await http('GET', '/api/flows')).json.flows).toEqual([]);
  });
});

describe('authors', { timeout: 60_000 }, () => {
  it('the list names who changed each flow last and when; names are cleaned', async () => {
    const { s, port, http } = await start();
    await http('PUT', '/api/flows/one', { ...simpleFlow('one'), name: 'Same name' }, 'Ada');
    await http('PUT', '/api/flows/two', { ...simpleFlow('two'), name: 'Same name' });
    expect(s.store.catalog.data.flows.two!.updatedBy).toBe('local user');
    await http('PUT', '/api/flows/three', simpleFlow('three'), `  Eve\u0007 ${'x'.repeat(80)}`);
    const bob = enter(port, 'one', 'Bob');
    await synced(bob);
    rename(bob.doc, 'Same name, by Bob');
    await until(() => s.store.catalog.data.flows.one?.updatedBy === 'Bob', 'the room save names Bob');
    // The usual end of an edit: the last person leaves, and the room saves as they go.
    const eve = enter(port, 'two', 'Eve');
    await synced(eve);
    rename(eve.doc, 'Same name');
    applyFlowToDoc(eve.doc, { ...docToFlow(eve.doc), description: 'by Eve' }, 'test-edit');
    eve.provider.destroy();
    await until(() => s.store.catalog.data.flows.two?.rev === 2, 'saved as Eve left');
    const list = (await http('GET', '/api/flows')).json.flows as Array<Record<string, unknown>>;
    const by = new Map(list.map((f) => [f.id, f]));
    expect(by.get('one')).toMatchObject({ name: 'Same name, by Bob', updatedBy: 'Bob', rev: 2 });
    expect(by.get('two')).toMatchObject({ name: 'Same name', updatedBy: 'Eve', rev: 2 });
    const cleaned = by.get('three')!.updatedBy as string;
    expect(cleaned.startsWith('Eve  x')).toBe(true);
    expect([...cleaned].length).toBeLessThanOrEqual(40);
    for (const f of list) expect(Date.parse(f.updatedAt as string)).toBeGreaterThan(Date.now() - 60_000);
  });
});
