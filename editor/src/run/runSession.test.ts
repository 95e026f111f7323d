import { defaultRegistry } from '@switchboard/nodes';
import type { RunEvent } from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FlowApi, RunSummary } from '../model/api.js';
import { EditorStore } from '../store/editorStore.js';
import { RunState } from '../store/runState.js';
import { FakeSocket, frame } from '../testing/fakeSocket.js';
import { EVENTS_PER_FRAME, RunSession, SCRUB_STRIDE, STALE_MS } from './runSession.js';
import { EMPTY_VIEW, fold } from './transcript.js';

/** Events of run `r1` from seq `from` on, as the server's log holds them. */
function events(list: Array<Record<string, unknown>>, from = 1): RunEvent[] {
  return list.map((e, i) => ({ runId: 'r1', seq: from + i, ts: 1000 + from + i, ...e }) as RunEvent);
}

/** 1..6: on disk before the server's host lost power. */
const DURABLE = events([
  { type: 'run.started', flowId: 'f', input: 'hi' },
  { type: 'node.started', nodeId: 'a' },
  { type: 'message', nodeId: 'a', message: { seq: 1, role: 'assistant', author: 'a', content: 'from a' } },
  { type: 'handover', edgeId: 'e1', from: 'a', to: 'b' },
  { type: 'node.completed', nodeId: 'a' },
  { type: 'node.started', nodeId: 'b' },
]);
/** 7..10 as first sent: written, never synced, lost. */
const LOST = events(
  [
    {
      type: 'message',
      nodeId: 'b',
      message: { seq: 2, role: 'assistant', author: 'b', content: 'old reply' },
    },
    { type: 'handover', edgeId: 'e2', from: 'b', to: 'c' },
    { type: 'node.started', nodeId: 'c' },
    { type: 'input.requested', nodeId: 'c', question: 'Ship it?' },
  ],
  7,
);
/** 7..9 as the run wrote them again after the restart. */
const REDONE = events(
  [
    {
      type: 'message',
      nodeId: 'b',
      message: { seq: 2, role: 'assistant', author: 'b', content: 'new reply' },
    },
    { type: 'handover', edgeId: 'e3', from: 'b', to: 'd' },
    { type: 'node.started', nodeId: 'd' },
  ],
  7,
);

const stores: EditorStore[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
  for (const s of stores.splice(0)) s.dispose();
});

/** A session on fake sockets, watching flow `f` (whose runs the server lists as `runs`). */
async function session(
  provisional?: boolean,
  runs: RunSummary[] = [],
  logs = new Map<string, RunEvent[]>(),
  frame?: (fn: () => void) => unknown,
) {
  const sockets: FakeSocket[] = [];
  const api = {
    wsUrl: () => 'ws://server/api/ws',
    wsProtocols: () => [],
    runsOf: async () => runs,
    runEvents: async (id: string) => logs.get(id) ?? [],
  } as unknown as FlowApi;
  const store = new EditorStore({ registry: defaultRegistry, validateDelay: 1 });
  stores.push(store);
  const session = new RunSession({
    api,
    store,
    provisional,
    ...(frame ? { frame } : {}),
    createSocket: () => {
      const s = new FakeSocket();
      sockets.push(s);
      return s;
    },
  });
  session.start();
  sockets[0]!.open();
  await session.watchFlow('f');
  const now = () => sockets.at(-1)!;
  /** The server closes the connection; the session reconnects on a new socket. */
  const reconnect = (): FakeSocket => {
    now().close(1006, 'gone');
    vi.advanceTimersByTime(1000);
    now().open();
    return now();
  };
  return { runs: session, store, now, reconnect };
}

/** What the canvas and the run panel show. */
function shown(x: { runs: RunSession; store: EditorStore }) {
  const rs = x.store.runState;
  return {
    view: x.runs.getSnapshot().view,
    nodes: Object.fromEntries(['a', 'b', 'c', 'd'].map((id) => [id, rs.get(id)])),
    edges: Object.fromEntries(['e1', 'e2', 'e3'].map((id) => [id, rs.edges.get(id)])),
    activeNode: rs.activeNode,
    activeEdge: rs.activeEdge,
  };
}

describe('RunSession with provisional events', () => {
  it('subscribes provisionally by default', async () => {
    const { now } = await session();
    expect(now().sent).toEqual([{ type: 'subscribe', flowId: 'f', after: {}, provisional: true }]);
  });

  it('after a restart that replaced events above the watermark, shows exactly 1..6 and the new 7..9', async () => {
    const x = await session();
    // Held 1..10, of which 1..6 on disk (the watermark from a frame, then from a `durable` message).
    x.now().push(frame('r1', [...DURABLE, ...LOST.slice(0, 2)], 4));
    x.now().push({ type: 'durable', runId: 'r1', seq: 6 });
    x.now().push(frame('r1', LOST.slice(2), 6));
    expect(x.runs.runId).toBe('r1');
    expect(shown(x).view.phase).toBe('waiting');
    expect(x.runs.socket.durableSeq('r1')).toBe(6);
    const s = x.reconnect();
    expect(s.sent).toEqual([
      { type: 'subscribe', flowId: 'f', after: { r1: 6 }, provisional: true },
      { type: 'subscribe', runId: 'r1', after: 6, provisional: true },
    ]);
    s.push(frame('r1', REDONE, 7));

    // The same as a session that only ever received what the server's log now holds.
    const ref = await session(false);
    ref.now().push(frame('r1', [...DURABLE, ...REDONE]));
    expect(shown(x)).toEqual(shown(ref));

    // Spelled out: nothing of the lost 7..10 is left.
    const { view, nodes, edges, activeNode, activeEdge } = shown(x);
    expect(view.phase).toBe('running');
    expect(view.waiting).toBeUndefined();
    expect(view.lastSeq).toBe(9);
    expect(view.entries.map((e) => e.text)).toEqual(['from a', 'a → b', 'new reply', 'b → d']);
    expect(nodes.c).toEqual({ status: 'idle', active: false });
    expect(nodes.d).toEqual({ status: 'running', active: true });
    expect(edges).toEqual({ e1: 'taken', e2: '', e3: 'active' });
    expect([activeNode, activeEdge]).toEqual(['d', 'e3']);

    // And the run goes on from there.
    s.push(frame('r1', events([{ type: 'node.completed', nodeId: 'd' }], 10), 10));
    expect(x.store.runState.get('d').status).toBe('completed');
    expect(x.runs.getSnapshot().view.lastSeq).toBe(10);
  });

  it('rewinds across several reconnects when the watermark rose in between', async () => {
    const x = await session();
    x.now().push(frame('r1', [...DURABLE, ...LOST], 3));
    // The first reconnect: 4..10 resent unchanged (the server did not go down), watermark now 8.
    let s = x.reconnect();
    expect(s.sent.at(-1)).toMatchObject({ runId: 'r1', after: 3 });
    s.push(frame('r1', [...DURABLE.slice(3), ...LOST], 8));
    expect(shown(x).view.phase).toBe('waiting');
    // The second: the host went down; 9..10 lost, 9 written again differently.
    s = x.reconnect();
    expect(s.sent.at(-1)).toMatchObject({ runId: 'r1', after: 8 });
    const nine = events([{ type: 'node.started', nodeId: 'd' }], 9);
    s.push(frame('r1', nine, 9));
    const ref = await session(false);
    ref.now().push(frame('r1', [...DURABLE, ...LOST.slice(0, 2), ...nine]));
    expect(shown(x)).toEqual(shown(ref));
    expect(shown(x).edges).toEqual({ e1: 'taken', e2: 'active', e3: '' });
    expect(shown(x).nodes.c).toEqual({ status: 'idle', active: false });
    expect(shown(x).view.waiting).toBeUndefined();
  });

  it('without provisional, subscribes as before and a reconnect resumes from the last seq', async () => {
    const x = await session(false);
    expect(x.now().sent).toEqual([{ type: 'subscribe', flowId: 'f', after: {} }]);
    x.now().push(frame('r1', [...DURABLE, ...LOST]));
    const s = x.reconnect();
    expect(s.sent).toEqual([
      { type: 'subscribe', flowId: 'f', after: { r1: 10 } },
      { type: 'subscribe', runId: 'r1', after: 10 },
    ]);
    expect(shown(x).view.lastSeq).toBe(10);
  });
});

describe('RunSession: opening a flow', () => {
  const run = (id: string, status: string, ageMs: number): RunSummary => {
    const at = new Date(Date.now() - ageMs).toISOString();
    return { id, flowId: 'f', status, createdAt: at, updatedAt: at, lastSeq: 3 };
  };

  it('shows the latest run when it is recent, and says so', async () => {
    const { runs, now } = await session(true, [run('r1', 'running', 1000)]);
    expect(runs.runId).toBe('r1');
    expect(runs.getSnapshot().opened).toMatchObject({ runId: 'r1', how: 'latest' });
    expect(now().sent.some((m) => (m as { runId?: string }).runId === 'r1')).toBe(true);
  });

  it("does not open on someone's stale run: it is announced and left in the history", async () => {
    const { runs } = await session(true, [run('r1', 'waiting', STALE_MS + 60_000)]);
    expect(runs.runId).toBeUndefined();
    expect(runs.getSnapshot().opened).toBeUndefined();
    expect(runs.getSnapshot().skipped).toMatchObject({ id: 'r1', status: 'waiting' });
  });

  it('opens a run of the history on the canvas from its log, then follows it live', async () => {
    const log = events([
      { type: 'run.started', flowId: 'f', input: 'hi' },
      { type: 'node.started', nodeId: 'a' },
      { type: 'node.completed', nodeId: 'a' },
      { type: 'run.completed', output: 'x' },
    ]).map((e) => ({ ...e, runId: 'r2' }));
    const old = run('r2', 'completed', STALE_MS * 3);
    const { runs, store, now } = await session(true, [old], new Map([['r2', log]]));
    await runs.open(old);
    expect(runs.getSnapshot().opened).toMatchObject({ runId: 'r2', how: 'history' });
    // Asked the socket only for what comes after the log it read.
    expect(now().sent.at(-1)).toEqual({ type: 'subscribe', runId: 'r2', after: 4, provisional: true });
    expect(store.runState.get('a')).toEqual({ status: 'completed', active: false });
    expect(store.runState.counters.get('a')).toMatchObject({ status: 'completed' });
    expect(runs.events()).toHaveLength(4);
  });
});

describe('RunSession: the playhead', () => {
  it('shows the run as of an event, keeps taking events meanwhile, and goes back to live', async () => {
    const x = await session(true);
    const log = [...DURABLE, ...REDONE];
    x.now().push(frame('r1', log.slice(0, 8), 8));
    expect(x.runs.runId).toBe('r1');
    x.runs.scrubTo(3);
    expect(x.runs.getSnapshot().scrub).toBe(3);
    expect(shown(x).activeNode).toBe('a');
    expect(shown(x).nodes.b).toEqual({ status: 'idle', active: false });
    expect(x.runs.getSnapshot().view.lastSeq).toBe(3);
    // One event on: the handover.
    x.runs.scrubTo(4);
    expect(shown(x).activeEdge).toBe('e1');
    // Events that arrive while the playhead is in the past change neither canvas nor view.
    x.now().push(frame('r1', log.slice(8), 9));
    expect(shown(x).activeNode).toBe('a');
    expect(x.runs.getSnapshot().view.lastSeq).toBe(4);
    x.runs.scrubTo(undefined);
    expect(x.runs.getSnapshot().scrub).toBeUndefined();
    expect(shown(x).activeNode).toBe('d');
    expect(x.runs.getSnapshot().view.lastSeq).toBe(9);
  });

  it('at any event, forwards, backwards and far, shows what folding the log from its start shows', async () => {
    const x = await session(true);
    const ids = ['a', 'b', 'c', 'd'];
    const list: Array<Record<string, unknown>> = [{ type: 'run.started', flowId: 'f', input: 'hi' }];
    for (let i = 0; list.length < SCRUB_STRIDE * 5 + 37; i++) {
      const id = ids[i % 4]!;
      list.push(
        { type: 'node.started', nodeId: id },
        { type: 'turn.started', nodeId: id, turn: i + 1 },
        {
          type: 'message',
          nodeId: id,
          message: { seq: i + 1, role: 'assistant', author: id, content: `reply ${i}` },
        },
        {
          type: 'turn.completed',
          nodeId: id,
          turn: i + 1,
          usage: { promptTokens: 10, completionTokens: i },
        },
        { type: 'handover', edgeId: `e${(i % 3) + 1}`, from: id, to: ids[(i + 1) % 4] },
        { type: 'node.completed', nodeId: id },
      );
    }
    const log = events(list);
    x.now().push(frame('r1', log, log.length));
    const expected = (seq: number) => {
      const run = new RunState();
      const prefix = log.filter((e) => e.seq <= seq);
      for (const e of prefix) run.applyRunEvent(e, true);
      return {
        view: fold({ ...EMPTY_VIEW, runId: 'r1' }, 'r1', prefix),
        nodes: Object.fromEntries(ids.map((id) => [id, run.get(id)])),
        counters: Object.fromEntries(ids.map((id) => [id, run.counters.get(id)])),
        activeNode: run.activeNode,
        activeEdge: run.activeEdge,
      };
    };
    const last = log.length;
    for (const seq of [
      3,
      4,
      5,
      700,
      699,
      1,
      2 * SCRUB_STRIDE,
      2 * SCRUB_STRIDE + 1,
      10,
      last - 1,
      450,
      451,
      300,
    ]) {
      x.runs.scrubTo(seq);
      const got = shown(x);
      const want = expected(seq);
      expect(got.view.lastSeq, `at ${seq}`).toBe(seq);
      expect(got.view.entries, `at ${seq}`).toEqual(want.view.entries);
      expect({ turns: got.view.turns, tokens: got.view.tokens }).toEqual({
        turns: want.view.turns,
        tokens: want.view.tokens,
      });
      expect(got.nodes, `at ${seq}`).toEqual(want.nodes);
      expect(Object.fromEntries(ids.map((id) => [id, x.store.runState.counters.get(id)]))).toEqual(
        want.counters,
      );
      expect([got.activeNode, got.activeEdge], `at ${seq}`).toEqual([want.activeNode, want.activeEdge]);
    }
  });

  it('one step of the playhead notifies only the nodes whose marks or counters change', async () => {
    const x = await session(true);
    const list: Array<Record<string, unknown>> = [{ type: 'run.started', flowId: 'f', input: 'hi' }];
    for (const id of ['a', 'b', 'c', 'd'])
      list.push(
        { type: 'node.started', nodeId: id },
        { type: 'turn.completed', nodeId: id, turn: 1, usage: { promptTokens: 1, completionTokens: 1 } },
        { type: 'node.completed', nodeId: id },
      );
    const log = events(list);
    x.now().push(frame('r1', log, log.length));
    const rs = x.store.runState;
    const notified: string[] = [];
    for (const id of ['a', 'b', 'c', 'd']) {
      rs.subscribe(id, () => notified.push(`mark ${id}`));
      rs.counters.subscribe(id, () => notified.push(`counters ${id}`));
    }
    // Far back then one step at a time: each step touches the node its event belongs to.
    x.runs.scrubTo(2);
    x.runs.scrubTo(6); // b started, a done
    notified.length = 0;
    x.runs.scrubTo(7); // node.completed b
    expect(notified.sort()).toEqual(['counters b', 'mark b']);
    notified.length = 0;
    x.runs.scrubTo(8); // node.started c: c becomes active, b stops being active
    expect(notified.sort()).toEqual(['counters c', 'mark b', 'mark c']);
    notified.length = 0;
    x.runs.scrubTo(9); // turn.completed c
    expect(notified).toEqual(['counters c']);
    notified.length = 0;
    x.runs.scrubTo(8);
    expect(notified).toEqual(['counters c']);
  });

  it('applies what the socket delivers once per animation frame, in order', async () => {
    const frames: Array<() => void> = [];
    const x = await session(true, [], new Map(), (fn) => frames.push(fn));
    let renders = 0;
    x.runs.subscribe(() => renders++);
    x.now().push(frame('r1', DURABLE.slice(0, 2), 2));
    x.now().push(frame('r1', DURABLE.slice(2, 4), 4));
    x.now().push(frame('r1', DURABLE.slice(4), 6));
    // Nothing shown before the frame.
    expect(x.runs.events()).toHaveLength(0);
    expect(frames).toHaveLength(1);
    frames.shift()!();
    expect(x.runs.events().map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(shown(x).activeNode).toBe('b');
    expect(shown(x).edges.e1).toBe('active');
    // Applied in one go: the canvas re-renders once for the three messages.
    expect(renders).toBeGreaterThan(0);
    // A frame that never comes (a hidden tab): a timer applies them.
    x.now().push(frame('r1', REDONE, 9));
    expect(x.runs.events()).toHaveLength(6);
    vi.advanceTimersByTime(60);
    expect(x.runs.events()).toHaveLength(9);
    // The late frame then does nothing more.
    frames.shift()?.();
    expect(x.runs.events()).toHaveLength(9);
  });

  it('applies a burst over several frames, about EVENTS_PER_FRAME events each, in order', async () => {
    const frames: Array<() => void> = [];
    const x = await session(true, [], new Map(), (fn) => frames.push(fn));
    // A fan-out: every node starts, in one message and then one message a node.
    const n = Math.ceil(EVENTS_PER_FRAME * 2.5);
    const starts = events(
      Array.from({ length: n }, (_, i) => ({ type: 'node.started', nodeId: `p${i}` })),
      2,
    );
    x.now().push(frame('r1', [DURABLE[0]!, ...starts.slice(0, n - 10)], n - 9));
    for (const e of starts.slice(n - 10)) x.now().push(frame('r1', [e], e.seq));
    const held: number[] = [];
    while (frames.length) {
      frames.shift()!();
      held.push(x.runs.events().length);
    }
    // Three frames or so, each at most a frame's share, nothing lost or reordered.
    expect(held.length).toBeGreaterThanOrEqual(3);
    for (let i = 0; i < held.length; i++)
      expect(held[i]! - (held[i - 1] ?? 0)).toBeLessThanOrEqual(EVENTS_PER_FRAME);
    expect(x.runs.events().map((e) => e.seq)).toEqual([1, ...starts.map((e) => e.seq)]);
    expect(shown(x).activeNode).toBe(`p${n - 1}`);
    // A reader that needs the run now (a scrub, a command) applies what waits at once.
    x.now().push(frame('r1', events([{ type: 'node.completed', nodeId: 'p0' }], n + 2), n + 2));
    x.runs.flush();
    expect(x.runs.events()).toHaveLength(n + 2);
  });
});
