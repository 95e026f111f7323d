/**
 * The editor's live clients, headless, against a real `switchboard serve` on 127.0.0.1: the
 * run-event feed (reconnects resume from the last seq and miss nothing), the run session
 * (breakpoints, answers, commands, two editors watching one run, a late joiner), and
 * co-editing (seeding a room, adopting a live room, edits and selections travelling).
 * Real WebSockets (`ws` with the Origin a browser on the editor's page sends), real files.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultRegistry } from '@switchboard/nodes';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { Collab } from '../../editor/src/collab/collab.js';
import { FlowApi } from '../../editor/src/model/api.js';
import { RunEventsSocket, type SocketLike } from '../../editor/src/run/eventsSocket.js';
import { RunSession } from '../../editor/src/run/runSession.js';
import { EditorStore } from '../../editor/src/store/editorStore.js';
import { slowChain, testServer, until } from '../server/helpers.js';
import { ROOT } from './harness.js';

type S = Awaited<ReturnType<typeof testServer>>;
let s: S | undefined;
const cleanups: Array<() => void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) c();
  await s?.close();
  s = undefined;
});

const triage = (): Flow =>
  JSON.parse(readFileSync(join(ROOT, 'flows', 'support-triage.json'), 'utf8')) as Flow;
const EXAMPLE = 'I was charged twice on invoice INV-1042, please refund';

async function listening() {
  s = await testServer({ port: 0 });
  const { url, port } = await s.listen();
  const origin = `http://127.0.0.1:${port}`;
  return { s, url, origin };
}

/** `ws` sending the Origin of the editor's page, as a browser would. */
function socketFactory(origin: string) {
  return (url: string, protocols: string[]) =>
    new WebSocket(url, protocols, { origin }) as unknown as SocketLike;
}

function wsWithOrigin(origin: string): unknown {
  return class extends WebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols, { origin });
    }
  };
}

function session(url: string, origin: string): { runs: RunSession; store: EditorStore } {
  const store = new EditorStore({ registry: defaultRegistry, validateDelay: 5 });
  const runs = new RunSession({ api: new FlowApi(url), store, createSocket: socketFactory(origin) });
  runs.start();
  cleanups.push(() => {
    runs.stop();
    store.dispose();
  });
  return { runs, store };
}

describe('run events feed', { timeout: 120_000 }, () => {
  it('reconnects after drops (client side and server side) and ends with exactly the log', async () => {
    const { s, url, origin } = await listening();
    const got: RunEvent[] = [];
    let runId = '';
    const feed = new RunEventsSocket({
      url: `${url.replace('http', 'ws')}/api/ws`,
      createSocket: socketFactory(origin),
      minBackoffMs: 10,
      maxBackoffMs: 50,
      onEvents: (id, events) => {
        if (id === runId || runId === '') got.push(...events);
      },
    });
    cleanups.push(() => feed.stop());
    feed.start();
    const flow = slowChain('reconnect', 20, 30);
    feed.watchFlow(flow.id);
    await until(() => feed.state === 'open', 'the feed open');
    const r = await fetch(`${url}/api/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ flow, input: 'go' }),
    });
    runId = ((await r.json()) as { run: { id: string } }).run.id;
    // Drop the connection again and again while the run goes on, from both ends.
    let drops = 0;
    while (s.runs.isLive(runId)) {
      await new Promise((res) => setTimeout(res, 35));
      if (drops % 3 === 2) s.hub.closeAll();
      else feed.dropConnection();
      drops++;
    }
    await until(() => got.at(-1)?.type === 'run.completed', 'the end of the run after the last reconnect');
    const log = s.store.readEvents(runId, 0);
    expect(got).toEqual(log);
    expect(new Set(got.map((e) => e.seq)).size).toBe(got.length);
    expect(drops).toBeGreaterThan(2);
    expect(feed.connections).toBeGreaterThan(2);
    expect(feed.lastSeq(runId)).toBe(log.at(-1)!.seq);
  });
});

describe('run events feed against a misbehaving server', { timeout: 60_000 }, () => {
  it('drops duplicates, ignores runs it does not track, and reconnects from its last seq on a hole', async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    cleanups.push(() => wss.close());
    await new Promise((r) => wss.once('listening', r));
    const port = (wss.address() as { port: number }).port;
    const ev = (seq: number): RunEvent =>
      ({ runId: 'r1', seq, ts: seq, type: 'log', level: 'info', text: `e${seq}` }) as RunEvent;
    const frame = (runId: string, seqs: number[]) =>
      JSON.stringify({ type: 'events', runId, events: seqs.map((q) => ({ ...ev(q), runId })) });
    const subscriptions: unknown[] = [];
    let conn = 0;
    wss.on('connection', (ws) => {
      const n = ++conn;
      ws.on('message', (data) => {
        const msg = JSON.parse(String(data));
        subscriptions.push(msg);
        if (msg.type !== 'subscribe' || msg.runId !== 'r1') return;
        if (n === 1) {
          ws.send(frame('r1', [1, 2, 3]));
          ws.send(frame('r1', [2, 3, 4])); // overlaps: only 4 is new
          ws.send(frame('other', [7, 8])); // a run never tracked, mid-way: ignored
          ws.send(frame('r1', [6, 7])); // a hole (5 is missing): reconnect
        } else ws.send(frame('r1', [5, 6, 7]));
      });
    });
    const got: Array<[string, number]> = [];
    const feed = new RunEventsSocket({
      url: `ws://127.0.0.1:${port}`,
      createSocket: socketFactory('http://127.0.0.1'),
      minBackoffMs: 10,
      onEvents: (runId, events) => {
        for (const e of events) got.push([runId, e.seq]);
      },
    });
    cleanups.push(() => feed.stop());
    feed.watchRun('r1');
    feed.start();
    await until(() => got.length === 7, 'seven events', 10_000);
    expect(got).toEqual([1, 2, 3, 4, 5, 6, 7].map((q) => ['r1', q]));
    expect(conn).toBe(2);
    // The second connection asked for what came after the last seq the client held.
    expect(subscriptions).toEqual([
      { type: 'subscribe', runId: 'r1', after: 0 },
      { type: 'subscribe', runId: 'r1', after: 4 },
    ]);
  });
});

describe('run session', { timeout: 120_000 }, () => {
  it('a breakpoint set before the run pauses it there; an answer and a resume finish it', async () => {
    const { s, url, origin } = await listening();
    const { runs, store } = session(url, origin);
    store.load(triage());
    await runs.watchFlow('support-triage');
    runs.toggleBreakpoint('sender');
    const runId = await runs.run(EXAMPLE);
    expect(runId, runs.getSnapshot().problem).toBeTruthy();
    const view = () => runs.getSnapshot().view;
    await until(() => view().phase === 'waiting', 'the approval question');
    expect(view().waiting).toMatchObject({ nodeId: 'approval', options: ['yes', 'no'] });
    expect(store.runState.get('approval')).toEqual({ status: 'waiting', active: true });
    expect(store.runState.edges.get('billing-done')).toBe('active');
    expect(await runs.command({ type: 'answer', nodeId: 'approval', answer: 'yes' })).toBe(true);
    await until(() => view().phase === 'paused', 'the breakpoint');
    expect(view().pauseReason).toBe('breakpoint at sender');
    // The node it stopped before has the glow and the paused status; the one before it, neither.
    expect(store.runState.get('sender')).toEqual({ status: 'paused', active: true });
    expect(store.runState.get('approval').active).toBe(false);
    expect(await runs.command({ type: 'resume' })).toBe(true);
    await until(() => view().phase === 'completed', 'completion');
    // The editor's live view may be ahead of the durable log (and the run's record, which only
    // says what is on disk) until the run's last sync ends.
    await s.runs.settled(runId!);
    const rec = s.store.catalog.data.runs[runId!]!;
    expect(view().output).toEqual(rec.output);
    expect(view().scripted).toBe(true);
    expect(view().lastSeq).toBe(s.store.readEvents(runId!, 0).at(-1)!.seq);
    for (const e of ['begin', 'to-billing', 'decided', 'billing-done', 'approved', 'sent'])
      expect(store.runState.edges.get(e), e).toBe('taken');
    for (const n of ['triage', 'billing-agent', 'refund-writer', 'approval', 'sender'])
      expect(store.runState.get(n).status, n).toBe('completed');
    expect(store.runState.get('diagnoser').status).toBe('idle');
    // A command to a finished run is refused with the server's reason.
    expect(await runs.command({ type: 'pause' })).toBe(false);
    expect(runs.getSnapshot().problem).toMatch(/not live/);
  });

  it('pause holds the run, step runs one node and pauses again, resume lets it go', async () => {
    const { url, origin } = await listening();
    const { runs, store } = session(url, origin);
    store.load(triage());
    await runs.watchFlow('support-triage');
    const view = () => runs.getSnapshot().view;
    // Nodes of the billing path the canvas shows as completed.
    const completedNodes = () =>
      ['start', 'triage', 'billing', 'billing-agent', 'refund-writer', 'approval', 'sender', 'end'].filter(
        (id) => store.runState.get(id).status === 'completed',
      ).length;
    expect(await runs.run(EXAMPLE, 400)).toBeTruthy();
    await until(() => store.runState.get('billing-agent').status === 'running', 'the billing agent at work');
    expect(await runs.command({ type: 'pause' })).toBe(true);
    await until(() => view().phase === 'paused', 'paused');
    expect(view().pauseReason).toBe('requested');
    const before = completedNodes();
    expect(await runs.command({ type: 'step' })).toBe(true);
    const pauses = () => view().entries.filter((e) => e.type === 'run.paused').length;
    await until(() => pauses() === 2 && view().phase === 'paused', 'paused again after one step');
    expect(completedNodes()).toBeGreaterThan(before);
    expect(store.runState.get('sender').status).toBe('idle');
    expect(await runs.command({ type: 'resume' })).toBe(true);
    await until(() => view().phase === 'waiting', 'the approval question');
  });

  it('an invalid flow is refused with the validator’s problems on the canvas', async () => {
    const { url, origin } = await listening();
    const { runs, store } = session(url, origin);
    const flow = triage();
    flow.edges.push({ id: 'dangling', kind: 'handover', source: 'sender', target: 'nowhere' });
    store.load(flow);
    expect(await runs.run(EXAMPLE)).toBeUndefined();
    expect(runs.getSnapshot().problem).toMatch(/Starting the run failed: the flow is invalid/);
    expect(store.problems.errors.some((p) => p.edgeId === 'dangling')).toBe(true);
  });

  it('two editors on one flow see the same run live; a late joiner sees the last run', async () => {
    const { s, url, origin } = await listening();
    const a = session(url, origin);
    const b = session(url, origin);
    a.store.load(triage());
    b.store.load(triage());
    await a.runs.watchFlow('support-triage');
    await b.runs.watchFlow('support-triage');
    await until(() => b.runs.getSnapshot().connection === 'open', 'b connected');
    const runId = await a.runs.run(EXAMPLE, 20);
    await until(() => b.runs.runId === runId, 'b following a’s run');
    await until(() => b.runs.getSnapshot().view.phase === 'waiting', 'b seeing the question');
    // b answers; a sees the run finish.
    expect(await b.runs.command({ type: 'answer', nodeId: 'approval', answer: 'yes' })).toBe(true);
    await until(() => a.runs.getSnapshot().view.phase === 'completed', 'a seeing completion');
    await until(() => b.runs.getSnapshot().view.phase === 'completed', 'b seeing completion');
    await s.runs.settled(runId!);
    const last = s.store.readEvents(runId!, 0).at(-1)!.seq;
    expect(a.runs.getSnapshot().view.lastSeq).toBe(last);
    expect(b.runs.getSnapshot().view.lastSeq).toBe(last);
    expect(b.runs.getSnapshot().view.entries).toEqual(a.runs.getSnapshot().view.entries);
    const c = session(url, origin);
    c.store.load(triage());
    await c.runs.watchFlow('support-triage');
    await until(() => c.runs.getSnapshot().view.phase === 'completed', 'c showing the last run');
    expect(c.runs.getSnapshot().view.entries).toEqual(a.runs.getSnapshot().view.entries);
    expect(c.store.runState.get('sender').status).toBe('completed');
  });
});

describe('co-editing', { timeout: 120_000 }, () => {
  function editor(url: string, origin: string, name: string, color: string) {
    const store = new EditorStore({ registry: defaultRegistry, validateDelay: 5 });
    const collab = new Collab({
      store,
      url: `${url.replace('http', 'ws')}/api/yjs`,
      identity: { name, color },
      WebSocketPolyfill: wsWithOrigin(origin),
    });
    cleanups.push(() => {
      collab.dispose();
      store.dispose();
    });
    return { store, collab };
  }

  it('the first editor seeds the room; the next adopts it; edits and selections travel both ways', async () => {
    const { s, url, origin } = await listening();
    const a = editor(url, origin, 'Ada', '#e11d48');
    const b = editor(url, origin, 'Bob', '#2563eb');
    a.collab.open(triage());
    await until(() => a.collab.getSnapshot().joined, 'a joined');
    expect(a.collab.getSnapshot().joined).toMatchObject({ room: 'support-triage', adopted: false });
    a.store.setMeta('name', 'Support triage (Ada)');
    // b opens its own, older copy of the flow: the live room wins.
    const older = triage();
    older.name = 'An older copy';
    b.collab.open(older);
    await until(() => b.collab.getSnapshot().joined, 'b joined');
    expect(b.collab.getSnapshot().joined).toMatchObject({ room: 'support-triage', adopted: true });
    expect(b.store.meta('name')).toBe('Support triage (Ada)');
    expect(b.store.serialize()).toBe(a.store.serialize());
    // Edits both ways.
    b.store.setConfig({ node: 'sender' }, 'role', 'Sends the reply politely');
    await until(
      () => a.store.readNode('sender')?.config.role === 'Sends the reply politely',
      'b’s edit at a',
    );
    a.store.addNode('agent', { x: 2000, y: 2000 });
    await until(() => b.store.readNode('agent1'), 'a’s new node at b');
    expect(b.store.serialize()).toBe(a.store.serialize());
    // Undo at b undoes b's own edit only.
    b.store.undo();
    await until(
      () => a.store.readNode('sender')?.config.role !== 'Sends the reply politely',
      'b’s undo at a',
    );
    expect(a.store.readNode('agent1')).toBeTruthy();
    // Presence: who is here, and what b has selected.
    await until(() => a.collab.getSnapshot().peers.length === 2, 'two peers at a');
    b.store.select({ nodes: ['triage'] });
    await until(() => a.store.presence.get('triage').startsWith('Bob|#2563eb'), 'b’s selection at a');
    expect(a.collab.getSnapshot().peers.map((p) => [p.name, p.self])).toEqual([
      ['Ada', true],
      ['Bob', false],
    ]);
    // The server's room holds the same document.
    expect(s.rooms.docOf('support-triage')).toBeTruthy();
    // b leaves: its selection and presence go.
    b.collab.leave();
    await until(() => a.collab.getSnapshot().peers.length === 1, 'b gone at a');
    expect(a.store.presence.get('triage')).toBe('');
  });

  it('opening another flow leaves the room without touching it; re-opening the room’s flow replaces it for all', async () => {
    const { url, origin } = await listening();
    const a = editor(url, origin, 'Ada', '#e11d48');
    const b = editor(url, origin, 'Bob', '#2563eb');
    a.collab.open(triage());
    await until(() => a.collab.getSnapshot().joined, 'a joined');
    b.collab.open(triage());
    await until(() => b.collab.getSnapshot().joined, 'b joined');
    const shared = a.store.serialize();
    b.collab.open({ ...triage(), id: 'elsewhere', name: 'Elsewhere' });
    await until(() => b.collab.getSnapshot().joined?.room === 'elsewhere', 'b in the other room');
    expect(b.collab.getSnapshot().joined?.adopted).toBe(false);
    expect(a.store.serialize()).toBe(shared);
    // a re-opens the template: the shared document is replaced, as one change.
    const c = editor(url, origin, 'Cy', '#16a34a');
    c.collab.open(triage());
    await until(() => c.collab.getSnapshot().joined, 'c joined');
    const fresh = triage();
    fresh.name = 'Reset by Ada';
    a.collab.open(fresh);
    await until(() => c.store.meta('name') === 'Reset by Ada', 'the reset at c');
    expect(c.store.serialize()).toBe(a.store.serialize());
  });
});
