/**
 * Co-editing one flow across server instances through a real `redis-server`: stock y-websocket
 * clients, some on each instance, make the random edits of the convergence test (with
 * disconnects and reconnects); every editor, both rooms and both catalogs end on the same flow,
 * fields one editor alone touched hold its last value, typed runs are whole, and only the
 * room's owner saved it. Then the owning instance (a process) is killed -9: its editors move to
 * the other instance, which takes the room over and saves it with nothing lost. A flow created
 * on one instance is readable on the other; a delete on one closes the room on the other.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serializeFlow } from '@switchboard/schemas';
import { docToFlow, ROOM_STATUS_FIELD } from '@switchboard/schemas/ydoc';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { createServer, type SwitchboardServer } from '../../runtime/src/server/index.js';
import {
  applyEdit,
  baseFlow,
  type Client,
  checkFinal,
  L,
  newClient,
  type Op,
  opArb,
  Touches,
} from '../coedit/sim.js';
import { until } from '../server/helpers.js';
import { startServer } from './cluster.js';
import { startRedis, type TestRedis } from './redis-server.js';

const SEED = process.env.SWITCHBOARD_SEED ? Number(process.env.SWITCHBOARD_SEED) : Date.now() % 2 ** 31;
const ROOMS = { saveDelayMs: 30, saveMaxDelayMs: 100, idleMs: 500 };
const RELAY = { lockMs: 1500, tickMs: 250 };

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'sb-coedit-'));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const text = (d: Y.Doc) => serializeFlow(docToFlow(d, L));

async function redis(): Promise<TestRedis> {
  const r = await startRedis();
  cleanups.push(() => r.stop());
  return r;
}

async function instance(
  url: string,
  relay: { compactAt?: number } = {},
  rooms: Partial<typeof ROOMS> = {},
): Promise<SwitchboardServer & { port: number }> {
  const s = await createServer({
    dataDir: tmp(),
    editorDir: false,
    templatesDir: false,
    port: 0,
    rooms: { ...ROOMS, ...rooms },
    redis: { url, rooms: { ...RELAY, ...relay } },
  });
  cleanups.push(() => s.close());
  const { port } = await s.listen();
  return Object.assign(s, { port });
}

function editor(port: number, room: string, doc = new Y.Doc()): WebsocketProvider {
  const p = new WebsocketProvider(`ws://127.0.0.1:${port}/api/yjs`, room, doc, {
    WebSocketPolyfill: WebSocket as never,
    disableBc: true,
    maxBackoffTime: 100,
  });
  cleanups.push(() => p.destroy());
  return p;
}

async function put(port: number, id: string, body: object): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/api/flows/${id}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return res.status;
}

async function getFlow(port: number, id: string): Promise<{ status: number; rev?: number; flow?: unknown }> {
  const res = await fetch(`http://127.0.0.1:${port}/api/flows/${id}`);
  if (!res.ok) return { status: res.status };
  const rev = Number(res.headers.get('etag')?.replaceAll('"', ''));
  return { status: res.status, rev, flow: await res.json() };
}

/** Every room save shared through Redis, by the instance that made it. */
async function roomSaves(
  url: string,
): Promise<{ from: string[]; byFlow: Map<string, string[]>; stop(): void }> {
  const sub = new Redis(url);
  const reader = new Redis(url);
  const from: string[] = [];
  const byFlow = new Map<string, string[]>();
  sub.on('message', (_c: string, id: string) => {
    void reader.hget('sb:flows', id).then((raw) => {
      if (!raw) return;
      const e = JSON.parse(raw.slice(raw.indexOf('|') + 1)) as { source: string; from: string };
      if (e.source !== 'room') return;
      from.push(e.from);
      byFlow.set(id, [...(byFlow.get(id) ?? []), e.from]);
    });
  });
  await sub.subscribe('sb:flowch');
  const stop = () => {
    sub.disconnect();
    reader.disconnect();
  };
  cleanups.push(stop);
  return { from, byFlow, stop };
}

/** The servers' awareness states (their room save status) a client sees. */
const statusesOf = (aw: WebsocketProvider['awareness']) =>
  [...aw.getStates().values()].filter(
    (st) => (st as { user?: unknown }).user === undefined && ROOM_STATUS_FIELD in st,
  );

describe('co-editing across server instances (Redis)', () => {
  it('a flow created on one instance is readable on the other, an API write there lands in the room here, presence travels, a delete there closes the room here', {
    timeout: 60_000,
  }, async () => {
    const r = await redis();
    const a = await instance(r.url);
    const b = await instance(r.url);
    expect(await put(a.port, 'shared', { ...baseFlow(), id: 'shared' })).toBe(201);
    await until(async () => (await getFlow(b.port, 'shared')).rev === 1, 'B reads the flow A created');
    const p = editor(b.port, 'shared');
    await until(() => p.synced, 'an editor on B synced');
    // The room is open on B only: A's API write lands there once, through B (its owner).
    await until(() => b.relay!.owns('shared'), 'B owns the room');
    expect(await put(a.port, 'shared', { ...baseFlow(), id: 'shared', name: 'Renamed on A' })).toBe(200);
    await until(() => docToFlow(p.doc, L).name === 'Renamed on A', "the editor on B sees A's write");
    await sleep(300);
    expect(docToFlow(p.doc, L)).toEqual((await getFlow(a.port, 'shared')).flow);
    // Presence: an editor on A and the one on B see each other.
    const pa = editor(a.port, 'shared');
    await until(() => pa.synced, 'an editor on A synced');
    pa.awareness.setLocalStateField('user', { name: 'Ann on A' });
    p.awareness.setLocalStateField('user', { name: 'Bob on B' });
    const names = (aw: typeof p.awareness) =>
      [...aw.getStates().values()].map((st) => (st as { user?: { name?: string } }).user?.name);
    await until(() => names(p.awareness).includes('Ann on A'), 'B sees Ann');
    await until(() => names(pa.awareness).includes('Bob on B'), 'A sees Bob');
    let closed: { code: number; reason: string } | undefined;
    p.ws?.addEventListener('close', (e: { code: number; reason: string }) => {
      closed ??= { code: e.code, reason: e.reason };
    });
    const del = await fetch(`http://127.0.0.1:${a.port}/api/flows/shared`, { method: 'DELETE' });
    expect(del.status).toBeLessThan(300);
    await until(() => closed !== undefined, 'the room on B closed');
    expect(closed!.code).toBe(4410);
    expect((await getFlow(b.port, 'shared')).status).toBe(410);
  });

  it(`4 editors on 2 instances, random edits and disconnects converge; only the owner saves (seed ${SEED})`, {
    timeout: 120_000,
  }, async () => {
    const r = await redis();
    // Compacted often: late joiners read a snapshot and what came after it.
    const a = await instance(r.url, { compactAt: 10 });
    const b = await instance(r.url, { compactAt: 10 });
    const saves = await roomSaves(r.url);
    const cases = fc.sample(fc.array(opArb(4), { minLength: 60, maxLength: 120 }), {
      numRuns: 2,
      seed: SEED,
    });
    for (const [k, ops] of cases.entries()) {
      const id = `conv-${k}`;
      expect(await put(a.port, id, { ...baseFlow(), id })).toBe(201);
      await until(async () => (await getFlow(b.port, id)).rev === 1, 'B has the flow');
      const clients: Array<Client & { provider: WebsocketProvider }> = [];
      for (let i = 0; i < 4; i++) {
        const doc = new Y.Doc();
        const provider = editor(i % 2 === 0 ? a.port : b.port, id, doc);
        await until(() => provider.synced, `editor ${i} synced`);
        clients.push(Object.assign(newClient(doc, i), { provider }));
      }
      const touches = new Touches();
      const removed = new Set<string>();
      for (const op of ops as Op[]) {
        const cl = clients[op.c]!;
        if (op.t === 'deliver') await sleep(op.n);
        else if (op.t === 'disconnect') cl.provider.disconnect();
        else if (op.t === 'reconnect') void cl.provider.connect();
        else applyEdit(cl, op, touches, removed);
      }
      for (const cl of clients) if (!cl.provider.wsconnected) void cl.provider.connect();
      const roomA = () => a.rooms.docOf(id)!;
      const roomB = () => b.rooms.docOf(id)!;
      await until(
        () =>
          clients.every((c) => c.provider.synced && text(c.doc) === text(roomA())) &&
          text(roomA()) === text(roomB()),
        'every editor and both rooms hold the same flow',
        30_000,
      );
      const owner = a.relay!.owns(id) ? a : b;
      const other = owner === a ? b : a;
      expect(other.relay!.owns(id)).toBe(false);
      await owner.rooms.flush(id);
      const want = text(roomA());
      await until(
        () =>
          other.store.catalog.data.flows[id] &&
          serializeFlow(other.store.catalog.data.flows[id].flow) === want,
        'the other instance adopted the saved flow',
      );
      const saved = serializeFlow(owner.store.catalog.data.flows[id]!.flow);
      expect(saved).toBe(want);
      expect(other.store.catalog.data.flows[id]!.rev).toBe(owner.store.catalog.data.flows[id]!.rev);
      checkFinal(
        saved,
        clients,
        touches,
        removed,
        (got, w, what) => expect(got, what).toEqual(w),
        (t, part, what) => expect(t, what).toContain(part),
      );
      // Every save of this room came from its owner, and there were some.
      await until(() => saves.byFlow.get(id)?.length, 'the room was saved');
      await sleep(200);
      expect(saves.byFlow.get(id)!.every((f) => f === owner.relay!.id)).toBe(true);
      expect(other.roomStore.statusOf(id)?.state).not.toBe('saved');
      const probe = new Redis(r.url);
      cleanups.push(() => probe.disconnect());
      expect(await probe.hexists(`sb:room:${id}:snap`, 'data'), 'the stream was compacted').toBe(1);
      // A third instance opening the room now reads it from Redis (snapshot + stream).
      const c = await instance(r.url, { compactAt: 10 });
      const late = editor(c.port, id);
      await until(() => late.synced && text(late.doc) === want, 'a late joiner on a third instance');
      late.destroy();
      for (const c of clients) c.provider.destroy();
    }
  });

  it("a read on an instance that does not own the room sees its editors' latest change (the owner saves it first)", {
    timeout: 60_000,
  }, async () => {
    const r = await redis();
    // Saves wait long here: only the read's request makes the owner save at once.
    const slow = { saveDelayMs: 20_000, saveMaxDelayMs: 40_000 };
    const a = await instance(r.url, {}, slow);
    const b = await instance(r.url, {}, slow);
    const id = 'settled';
    expect(await put(a.port, id, { ...baseFlow(), id })).toBe(201);
    await until(async () => (await getFlow(b.port, id)).rev === 1, 'B has the flow');
    const pa = editor(a.port, id);
    await until(() => pa.synced && a.relay!.owns(id), 'A owns the room');
    const docB = new Y.Doc();
    const pb = editor(b.port, id, docB);
    await until(() => pb.synced, 'editor on B synced');
    const cb = newClient(docB, 1);
    for (let i = 0; i < 5; i++) applyEdit(cb, { t: 'type', c: 1 }, new Touches(), new Set());
    const t0 = Date.now();
    const got = await getFlow(b.port, id);
    expect(got.rev).toBe(2);
    expect(serializeFlow(got.flow as never)).toBe(text(docB));
    expect(Date.now() - t0).toBeLessThan(5000);
    // Saved by the owner, not by B.
    expect(a.roomStore.statusOf(id)?.state).toBe('saved');
    expect(b.roomStore.statusOf(id)?.state).not.toBe('saved');
  });

  it('the owner whose editors left closes its room while others keep editing; the other instance takes over saving', {
    timeout: 60_000,
  }, async () => {
    const r = await redis();
    const a = await instance(r.url);
    const b = await instance(r.url);
    const id = 'handover';
    expect(await put(a.port, id, { ...baseFlow(), id })).toBe(201);
    await until(async () => (await getFlow(b.port, id)).rev === 1, 'B has the flow');
    const pa = editor(a.port, id);
    await until(() => pa.synced && a.relay!.owns(id), 'A owns the room');
    const docB = new Y.Doc();
    const pb = editor(b.port, id, docB);
    await until(() => pb.synced, 'editor on B synced');
    pa.destroy();
    // B's editor types through A's idle time (500 ms) and a while after.
    const cb = newClient(docB, 1);
    const touches = new Touches();
    for (let i = 0; i < 40; i++) {
      applyEdit(cb, { t: 'type', c: 1 }, touches, new Set());
      await sleep(25);
    }
    await until(() => a.rooms.docOf(id) === undefined, "A's empty room closed", 10_000);
    await until(() => b.relay!.owns(id), 'B took the room over', 10_000);
    applyEdit(cb, { t: 'type', c: 1 }, touches, new Set());
    const want = text(docB);
    await until(() => text(b.rooms.docOf(id)!) === want, 'the room on B has every letter');
    await b.rooms.flush(id);
    expect(serializeFlow(b.store.catalog.data.flows[id]!.flow)).toBe(want);
    await until(() => serializeFlow(a.store.catalog.data.flows[id]!.flow) === want, 'A adopted what B saved');
    expect(want).toContain(cb.typed);
  });

  it('the owning instance killed -9: its editors move to the other, which takes over saving; no edit lost', {
    timeout: 120_000,
  }, async () => {
    const r = await redis();
    const a = await startServer(r.url, tmp(), {
      SB_TEST_ROOMS: JSON.stringify({ rooms: ROOMS, relay: RELAY }),
    });
    cleanups.push(() => a.kill9());
    const b = await instance(r.url);
    const saves = await roomSaves(r.url);
    const id = 'takeover';
    expect(await put(a.port, id, { ...baseFlow(), id })).toBe(201);
    await until(async () => (await getFlow(b.port, id)).rev === 1, 'B has the flow');
    // A's editor first: A opens the room first and owns it.
    const docA = new Y.Doc();
    const pa = editor(a.port, id, docA);
    await until(() => pa.synced, 'editor on A synced');
    const ownerKey = new Redis(r.url);
    cleanups.push(() => ownerKey.disconnect());
    await until(async () => (await ownerKey.get(`sb:room:${id}:owner`)) === a.relayId, 'A owns the room');
    const docB = new Y.Doc();
    const pb = editor(b.port, id, docB);
    await until(() => pb.synced, 'editor on B synced');
    await until(() => statusesOf(pb.awareness).length === 2, "B's editor sees A's save status too");
    const ca = newClient(docA, 0);
    const cb = newClient(docB, 1);
    const touches = new Touches();
    const removed = new Set<string>();
    const ops = fc.sample(fc.array(opArb(2), { minLength: 40, maxLength: 60 }), {
      numRuns: 1,
      seed: SEED,
    })[0]!;
    const edit = (op: Op) => {
      if (op.t !== 'deliver' && op.t !== 'disconnect' && op.t !== 'reconnect')
        applyEdit(op.c === 0 ? ca : cb, op, touches, removed);
    };
    const half = Math.floor(ops.length / 2);
    for (const op of ops.slice(0, half)) {
      edit(op);
      await sleep(5);
    }
    await until(() => text(docA) === text(docB), 'both editors converge before the kill');
    // Some edits A's editor makes right before A dies may never have left A: the editor still
    // holds them and sends them to B when it moves there.
    for (const op of ops.slice(half)) edit(op);
    const killedAt = Date.now();
    await a.kill9();
    pa.destroy();
    const pa2 = editor(b.port, id, docA);
    await until(() => pa2.synced, "A's editor moved to B");
    await until(() => b.relay!.owns(id), 'B took the room over', 10_000);
    // Within the lock's TTL (1.5 s here) plus a tick, give or take a loaded machine.
    console.log(`takeover of the room ${Date.now() - killedAt} ms after the kill (lock ${RELAY.lockMs} ms)`);
    const room = () => b.rooms.docOf(id)!;
    await until(
      () => text(docA) === text(room()) && text(docB) === text(room()),
      'both editors and the room on B hold the same flow',
      20_000,
    );
    await b.rooms.flush(id);
    // The editors see one save status, B's (A's, relayed while it owned the room, is gone).
    await until(() => statusesOf(pb.awareness).length === 1, 'one save status');
    const saved = serializeFlow(b.store.catalog.data.flows[id]!.flow);
    expect(saved).toBe(text(room()));
    checkFinal(
      saved,
      [ca, cb],
      touches,
      removed,
      (got, w, what) => expect(got, what).toEqual(w),
      (t, part, what) => expect(t, what).toContain(part),
    );
    await sleep(200);
    expect(saves.from).toContain(b.relay!.id);
    // Before the kill only A saved; after it only B.
    const firstB = saves.from.indexOf(b.relay!.id);
    expect(saves.from.slice(firstB).every((f) => f === b.relay!.id)).toBe(true);
    expect(saves.from.slice(0, firstB).every((f) => f === a.relayId)).toBe(true);
    expect((await getFlow(b.port, id)).flow).toEqual(JSON.parse(saved));
  });
});
