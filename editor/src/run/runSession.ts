/**
 * Runs from the editor: starts the flow on the canvas on the server, follows the run's events
 * live and feeds them to the canvas (`RunState`: active node, node statuses, the edge control
 * passes along) and to the run panel (`RunView`: transcript, status, the question a human node
 * asks), and sends commands.
 *
 * Everyone watching a flow sees the same run: the session watches every run of the flow it is
 * on, and follows the newest one that starts, whoever started it. On opening a flow it shows the
 * flow's last run. Framework-free; React reads it through `subscribe`/`getSnapshot`.
 *
 * Events arrive provisionally (before they are on the server's disk). The session keeps the
 * followed run's state at its durable watermark and the events after it, so when the server
 * replaces provisional events after a restart of its host, it goes back to the watermark and
 * applies the new ones, and shows exactly what the server's log holds.
 */
import type { Flow, Problem, RunEvent } from '@switchboard/schemas';
import { RequestResolver, setOwn } from '@switchboard/schemas/core';
import {
  ApiError,
  type AttachedLink,
  type FlowApi,
  type PinView,
  type RunCommandBody,
  type RunSummary,
} from '../model/api.js';
import type { EditorStore } from '../store/editorStore.js';
import { RunState } from '../store/runState.js';
import { type Comparison, compareRuns } from './compare.js';
import { type ConnectionState, RunEventsSocket, type SocketFactory } from './eventsSocket.js';
import { FlowPins } from './flowPins.js';
import { EMPTY_VIEW, FINAL_PHASES, fold, type RunView } from './transcript.js';

export interface RunSnapshot {
  /** The flow whose runs are watched. */
  flowId?: string;
  view: RunView;
  connection: ConnectionState;
  /** A start or a command is on its way. */
  busy: boolean;
  /** The last thing that went wrong (a refused start, a command to a finished run). */
  problem?: string;
  /** How many events of the followed run are held (`events()`): changes when the log does. */
  logSize: number;
  /**
   * Why the followed run is shown when this editor did not start it: the flow's latest run when
   * the flow was opened, or a run opened from the history.
   */
  opened?: { runId: string; how: 'latest' | 'history'; createdAt: string };
  /** The flow's latest run when it was opened, not shown because it is old (see `isStale`). */
  skipped?: RunSummary;
  /** The playhead: canvas, counters, traces and transcript show the run as of this seq; absent = live. */
  scrub?: number;
  /** Two runs compared (their paths marked on the canvas). */
  comparison?: Comparison;
  /** The followed run runs headless elsewhere and is attached here (`switchboard run --attach`). */
  attached?: AttachedLink;
}

/** How often an attached run's link is read again while it may change (connected or detached). */
export const ATTACHED_POLL_MS = 3000;

/** A run untouched for this long is not opened unannounced, and one that waits is marked stale. */
export const STALE_MS = 10 * 60_000;

/** When a run last changed (ms), from what the server says. */
export function lastChange(r: RunSummary): number {
  return Date.parse(r.updatedAt ?? r.createdAt) || 0;
}

/** A run still open (waiting, paused, running) that nothing has moved for `STALE_MS`. */
export function isStale(r: RunSummary, now = Date.now()): boolean {
  return !['completed', 'failed', 'cancelled'].includes(r.status) && now - lastChange(r) > STALE_MS;
}

/** Scripted replies at interpreter speed finish a run in milliseconds; a pace makes it watchable. */
export function withPace(flow: Flow, latencyMs: number): Flow {
  if (!(latencyMs > 0) || !flow.models) return flow;
  const models: Record<string, unknown> = {};
  for (const [name, m] of Object.entries(flow.models)) {
    const cfg = m as { provider?: string; latencyMs?: number };
    setOwn(
      models,
      name,
      cfg.provider === 'scripted' && cfg.latencyMs === undefined ? { ...cfg, latencyMs } : cfg,
    );
  }
  return { ...flow, models: models as Flow['models'] };
}

export interface RunSessionOptions {
  api: FlowApi;
  store: EditorStore;
  createSocket?: SocketFactory;
  /** Most transcript entries kept. Default 2,000. */
  maxEntries?: number;
  /** Receive events before they are on the server's disk (see `RunEventsSocket`). Default true. */
  provisional?: boolean;
  /** Apply socket messages once per animation frame (default: when the page has frames). */
  batchFrames?: boolean;
  /** The frame scheduler (default `requestAnimationFrame`). */
  frame?: (fn: () => void) => unknown;
}

/**
 * Live events applied per animation frame, about. A burst (a 100-node fan-out whose nodes all
 * start, or all finish, at once: several hundred events) is drawn over a few short frames
 * instead of one long one; each frame still applies whole socket messages, at least one.
 */
export const EVENTS_PER_FRAME = 120;

/** Events between two kept states of the timeline (a scrub folds at most this many). */
export const SCRUB_STRIDE = 200;

/** The followed run as of its first `index` held events: canvas marks and run panel view. */
interface Frame {
  index: number;
  run: RunState;
  view: RunView;
}

/** The followed run as of its durable watermark: what no restart of the server can change. */
interface DurableState {
  view: RunView;
  /** Canvas marks (no subscribers: only copied from, on a rewind). */
  run: RunState;
}

export class RunSession {
  readonly socket: RunEventsSocket;
  private snapshot: RunSnapshot = { view: EMPTY_VIEW, connection: 'closed', busy: false, logSize: 0 };
  /** The followed run's events but streamed pieces (those live on the node faces), for traces. */
  private log: RunEvent[] = [];
  /** The followed run's view as of its last event (what `view` is when not scrubbing). */
  private liveView: RunView = EMPTY_VIEW;
  private scrubSeq: number | undefined;
  private readonly listeners = new Set<() => void>();
  private followed: string | undefined;
  /** `ts` of the followed run's `run.started`, to prefer the newest run of a flow. */
  private followedSince = 0;
  /** Runs this editor started: followed whatever flow id they carry. */
  private readonly mine = new Set<string>();
  private flowId: string | undefined;
  /** The followed run at its durable watermark, and the events applied after it. */
  private durable: DurableState = { view: EMPTY_VIEW, run: new RunState() };
  private tail: RunEvent[] = [];
  private attachTimer: ReturnType<typeof setTimeout> | undefined;

  /** The pins of the watched flow (flowPins.ts). */
  readonly pins: FlowPins;
  /**
   * The timeline: the run as of every `SCRUB_STRIDE`th held event (`frames[k].index` is
   * k × SCRUB_STRIDE), built as the playhead first reaches them; and the state the playhead
   * shows, folded forward from there. A scrub frame then folds at most a stride of events.
   */
  private frames: Frame[] = [];
  private cursor: Frame | undefined;
  /** The followed run's model requests, resolved once each (traces read them). */
  private resolver = new RequestResolver();
  /** Socket messages not applied yet (`size`: their events): applied at animation frames (see `later`). */
  private pending: Array<{ apply: () => void; size: number }> = [];
  private flushScheduled = false;
  /** A timer building the timeline (see `warmTimeline`). */
  private warming: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly o: RunSessionOptions) {
    this.pins = new FlowPins(o.api);
    this.socket = new RunEventsSocket({
      onPins: (flowId, list) => this.pins.apply(flowId, list as PinView[]),
      url: o.api.wsUrl('/api/ws'),
      protocols: o.api.wsProtocols(),
      createSocket: o.createSocket,
      provisional: o.provisional ?? true,
      onEvents: (runId, events) => {
        // A big message is applied over several frames (see `EVENTS_PER_FRAME`).
        if (events.length <= EVENTS_PER_FRAME) this.later(() => this.onEvents(runId, events), events.length);
        else
          for (let i = 0; i < events.length; i += EVENTS_PER_FRAME) {
            const part = events.slice(i, i + EVENTS_PER_FRAME);
            this.later(() => this.onEvents(runId, part), part.length);
          }
      },
      onRewind: (runId, toSeq) => this.later(() => this.onRewind(runId, toSeq)),
      onState: (connection) => this.update({ connection }),
      onServerError: (code, message) => {
        if (code !== 'not-found') this.update({ problem: `Run events: ${message}` });
      },
    });
  }

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  getSnapshot = (): RunSnapshot => this.snapshot;

  get runId(): string | undefined {
    return this.followed;
  }

  /** The followed run's events (without `model.delta`), in seq order. Do not mutate. */
  events(): readonly RunEvent[] {
    return this.log;
  }

  /**
   * The followed run's model requests, resolved (a request refers to earlier ones' messages):
   * one resolver per run, so a trace built again resolves nothing twice. Requests are resolved
   * as traces ask for them, in log order.
   */
  requests(): RequestResolver {
    return this.resolver;
  }

  /**
   * Applies what the socket delivered at the next animation frame, together: a fan-out whose
   * events arrive in many small messages re-renders the canvas once a frame, not once a message.
   * A frame applies about `EVENTS_PER_FRAME` events; more wait for the next frame. Without
   * animation frames (tests, a hidden tab) a short timer applies all of them.
   */
  private later(apply: () => void, size = 1): void {
    const raf = this.o.frame ?? globalThis.requestAnimationFrame;
    if (raf === undefined || this.o.batchFrames === false) {
      apply();
      return;
    }
    this.pending.push({ apply, size });
    this.scheduleFlush(raf);
  }

  private scheduleFlush(raf: (fn: () => void) => unknown): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    let done = false;
    const run = (all: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (all) this.flush();
      else this.flushFrame(raf);
    };
    const timer = setTimeout(() => run(true), 40);
    raf(() => run(false));
  }

  /** One frame's share of the waiting messages, in order; the rest at the next frame. */
  private flushFrame(raf: (fn: () => void) => unknown): void {
    this.flushScheduled = false;
    let k = 0;
    let n = 0;
    while (k < this.pending.length && (k === 0 || n + this.pending[k]!.size <= EVENTS_PER_FRAME))
      n += this.pending[k++]!.size;
    const todo = this.pending.splice(0, k);
    if (this.pending.length > 0) this.scheduleFlush(raf);
    for (const p of todo) p.apply();
  }

  /** Applies the socket messages waiting for a frame, in order (before anything reads the run). */
  flush(): void {
    this.flushScheduled = false;
    const todo = this.pending;
    if (todo.length === 0) return;
    this.pending = [];
    for (const p of todo) p.apply();
  }

  private update(patch: Partial<RunSnapshot>): void {
    this.snapshot = { ...this.snapshot, ...patch };
    for (const fn of this.listeners) fn();
  }

  start(): void {
    this.socket.start();
  }

  stop(): void {
    this.socket.stop();
    if (this.attachTimer) clearTimeout(this.attachTimer);
  }

  /**
   * Reads whether the followed run is a headless one attached here, and keeps reading while its
   * link may change (the process may go away, or come back).
   */
  private async readAttached(runId: string): Promise<void> {
    if (this.attachTimer) clearTimeout(this.attachTimer);
    this.attachTimer = undefined;
    let run: RunSummary;
    try {
      run = await this.o.api.getRun(runId);
    } catch {
      return;
    }
    if (this.followed !== runId) return;
    this.update({ attached: run.attached });
    if (run.attached && (run.attached.state === 'connected' || run.attached.state === 'detached'))
      this.attachTimer = setTimeout(() => void this.readAttached(runId), ATTACHED_POLL_MS);
  }

  /**
   * Watches the runs of `flowId` (the flow now on the canvas) and shows its last run. Calling it
   * again with the same id does nothing.
   */
  async watchFlow(flowId: string): Promise<void> {
    this.flush();
    if (this.flowId === flowId) return;
    if (this.flowId !== undefined) this.socket.unwatchFlow(this.flowId);
    this.forgetFollowed();
    this.socket.forgetRuns();
    this.flowId = flowId;
    this.update({ flowId, view: EMPTY_VIEW, problem: undefined, opened: undefined, skipped: undefined });
    this.socket.watchFlow(flowId);
    void this.pins.load(flowId);
    try {
      const [last] = await this.o.api.runsOf(flowId, 1);
      // Something newer may have started meanwhile; keep following that.
      if (!last || this.flowId !== flowId || this.followed !== undefined) return;
      // Someone's run from long ago (waiting for an answer nobody gives, paused, or long over)
      // is not what a person opening the flow expects to see: it stays in the history, announced.
      if (Date.now() - lastChange(last) > STALE_MS) this.update({ skipped: last });
      else {
        this.follow(last.id, Date.parse(last.createdAt) || 0);
        this.update({ opened: { runId: last.id, how: 'latest', createdAt: last.createdAt } });
      }
    } catch {
      // No run list (older server, no token yet): live runs still arrive over the socket.
    }
  }

  private forgetFollowed(): void {
    if (this.followed !== undefined) this.socket.forgetRun(this.followed);
    this.followed = undefined;
    this.followedSince = 0;
    this.tail = [];
    this.log = [];
    this.scrubSeq = undefined;
    this.frames = [];
    this.cursor = undefined;
    this.resolver = new RequestResolver();
    this.liveView = EMPTY_VIEW;
    this.o.store.runState.reset();
  }

  /** `socket`: false when the caller reads the run's log itself (`open`). */
  private follow(runId: string, since: number, socket = true): void {
    if (this.followed === runId) return;
    this.forgetFollowed();
    this.followed = runId;
    this.followedSince = since;
    const view: RunView = { ...EMPTY_VIEW, runId };
    this.liveView = view;
    this.durable = { view, run: new RunState() };
    this.tail = [];
    this.o.store.runState.setModels(this.o.store.toFlow().models ?? {});
    this.update({
      view,
      problem: undefined,
      logSize: 0,
      opened: undefined,
      skipped: undefined,
      scrub: undefined,
      attached: undefined,
    });
    if (socket) this.socket.watchRun(runId);
    // Runs this editor started are the server's own.
    if (!this.mine.has(runId)) void this.readAttached(runId);
  }

  private onEvents(runId: string, events: RunEvent[]): void {
    if (runId !== this.followed) {
      const started = events.find(
        (e): e is Extract<RunEvent, { type: 'run.started' }> => e.type === 'run.started' && e.runId === runId,
      );
      if (!started) return;
      const ours = this.mine.has(runId) || started.flowId === this.flowId;
      if (!ours || started.ts < this.followedSince) return;
      this.follow(runId, started.ts);
      // This frame starts at the run's first event: the view is built from it.
    }
    const rs = this.o.store.runState;
    // While the playhead is in the past the canvas stays there; going live rebuilds it.
    if (this.scrubSeq === undefined) for (const e of events) rs.applyRunEvent(e, e.runId === runId);
    const view = fold(this.liveView, runId, events, { maxEntries: this.o.maxEntries });
    this.liveView = view;
    for (const e of events) {
      this.tail.push(e);
      if (e.type !== 'model.delta') this.log.push(e);
    }
    this.update(
      this.scrubSeq === undefined ? { view, logSize: this.log.length } : { logSize: this.log.length },
    );
    this.settle(runId);
    this.warmTimeline(runId);
  }

  /**
   * Builds the timeline's kept states as the log grows, a few at a time between frames, so a
   * scrub never pays for them (each costs a copy of the marks and a fold of `SCRUB_STRIDE` events).
   */
  private warmTimeline(runId: string): void {
    if (this.warming !== undefined) return;
    const step = () => {
      this.warming = undefined;
      if (this.followed !== runId) return;
      const want = Math.floor(this.log.length / SCRUB_STRIDE);
      const upTo = Math.min(want, this.frames.length + 4);
      if (this.frames.length <= upTo) this.frameBase(runId, upTo);
      if (this.frames.length <= want) this.warming = setTimeout(step, 0);
    };
    this.warming = setTimeout(step, 50);
  }

  /** Moves the followed run's events now on the server's disk from the tail into `durable`. */
  private settle(runId: string): void {
    const upTo = this.socket.durableSeq(runId);
    let n = 0;
    while (n < this.tail.length && this.tail[n]!.seq <= upTo) n++;
    if (n === 0) return;
    const done = this.tail.slice(0, n);
    this.tail = this.tail.slice(n);
    for (const e of done) this.durable.run.applyRunEvent(e, e.runId === runId);
    // All of it on disk (the usual case once the server has synced): the view just built is it.
    this.durable.view =
      this.tail.length === 0
        ? this.liveView
        : fold(this.durable.view, runId, done, { maxEntries: this.o.maxEntries });
  }

  /**
   * The server may have replaced the followed run's events after `toSeq`: back to the state of
   * events 1..toSeq, the new ones follow in `onEvents`. `durable` is at or below `toSeq` (the
   * socket rewinds to the watermark, and the watermark only rises), so replaying the tail up to
   * `toSeq` on it gets there.
   */
  private onRewind(runId: string, toSeq: number): void {
    if (runId !== this.followed) return;
    this.tail = this.tail.filter((e) => e.seq <= toSeq);
    this.log = this.log.filter((e) => e.seq <= toSeq);
    // The timeline up to the kept events stays; what was built past them goes.
    const kept = this.log.length;
    while ((this.frames.at(-1)?.index ?? 0) > kept) this.frames.pop();
    if (this.cursor && this.cursor.index > kept) this.cursor = undefined;
    this.resolver = new RequestResolver();
    // Built aside, then copied: only the nodes and edges that end up different re-render.
    const run = new RunState();
    run.restoreRun(this.durable.run);
    for (const e of this.tail) run.applyRunEvent(e, e.runId === runId);
    this.liveView = fold(this.durable.view, runId, this.tail, { maxEntries: this.o.maxEntries });
    if (this.scrubSeq !== undefined) {
      this.update({ logSize: this.log.length });
      return;
    }
    this.o.store.runState.restoreRun(run);
    this.update({ view: this.liveView, logSize: this.log.length });
  }

  /**
   * Moves the playhead: the canvas, counters, traces and transcript show the followed run as of
   * event `seq` (its events without streamed pieces); undefined, or the last event, is live.
   * Incremental: from the state the playhead shows, or the timeline's nearest kept state before
   * `seq`, at most `SCRUB_STRIDE` events are folded; only nodes whose marks change re-render.
   */
  scrubTo(seq: number | undefined): void {
    this.flush();
    const runId = this.followed;
    if (runId === undefined) return;
    const last = this.log.at(-1)?.seq ?? 0;
    const rs = this.o.store.runState;
    if (seq === undefined || seq >= last) {
      if (this.scrubSeq === undefined) return;
      this.scrubSeq = undefined;
      rs.restoreRun(this.frameAt(runId, this.log.length).run);
      this.update({ view: this.liveView, scrub: undefined });
      return;
    }
    const at = Math.max(0, seq);
    if (at === this.scrubSeq) return;
    this.scrubSeq = at;
    const f = this.frameAt(runId, this.countUpTo(at));
    rs.restoreRun(f.run);
    this.update({ view: f.view, scrub: at });
  }

  /** How many held events have a seq up to `seq` (the log is in seq order). */
  private countUpTo(seq: number): number {
    let lo = 0;
    let hi = this.log.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.log[mid]!.seq <= seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The run as of its first `n` held events (the playhead's state, moved there). */
  private frameAt(runId: string, n: number): Frame {
    const c = this.cursor;
    if (c && c.index <= n && n - c.index <= SCRUB_STRIDE) {
      this.advance(runId, c, n);
      return c;
    }
    const base = this.frameBase(runId, Math.floor(n / SCRUB_STRIDE));
    const f: Frame = { index: base.index, run: base.run.copy(), view: base.view };
    this.advance(runId, f, n);
    this.cursor = f;
    return f;
  }

  /** The timeline's kept state `k` (the run as of its first k × SCRUB_STRIDE events), built up to it. */
  private frameBase(runId: string, k: number): Frame {
    if (this.frames.length === 0) {
      const run = new RunState();
      run.setModels(this.o.store.toFlow().models ?? {});
      this.frames.push({ index: 0, run, view: { ...EMPTY_VIEW, runId } });
    }
    while (this.frames.length <= k) {
      const prev = this.frames.at(-1)!;
      const next: Frame = { index: prev.index, run: prev.run.copy(), view: prev.view };
      this.advance(runId, next, prev.index + SCRUB_STRIDE);
      this.frames.push(next);
    }
    return this.frames[k]!;
  }

  /** Folds the held events `f.index … n-1` into `f`. */
  private advance(runId: string, f: Frame, n: number): void {
    if (n <= f.index) return;
    const events = this.log.slice(f.index, n);
    for (const e of events) f.run.applyRunEvent(e, e.runId === runId);
    f.view = fold(f.view, runId, events, { maxEntries: this.o.maxEntries });
    f.index = n;
  }

  /** Compares two runs of the flow: their paths on the canvas, per node output, tokens and time. */
  async compare(a: string, b: string): Promise<void> {
    this.flush();
    try {
      const [ea, eb] = await Promise.all([this.o.api.runEvents(a), this.o.api.runEvents(b)]);
      const comparison = compareRuns(
        { runId: a, events: ea },
        { runId: b, events: eb },
        this.o.store.toFlow().models ?? {},
      );
      this.o.store.runState.compare.replaceAll(new Map(comparison.nodes.map((n) => [n.nodeId, n.side])));
      this.update({ comparison });
    } catch (e) {
      this.update({ problem: (e as Error).message });
    }
  }

  endCompare(): void {
    this.o.store.runState.compare.replaceAll(new Map());
    this.update({ comparison: undefined });
  }

  /** The flow's runs, newest first (the history). */
  async history(limit = 50): Promise<RunSummary[]> {
    if (this.flowId === undefined) return [];
    return this.o.api.runsOf(this.flowId, limit);
  }

  /**
   * Shows a run of the history on the canvas: its path, counters and traces, from its log (read
   * over REST), then live if it still goes.
   */
  async open(run: RunSummary): Promise<void> {
    this.flush();
    if (this.followed === run.id) return;
    this.follow(run.id, Date.parse(run.createdAt) || 0, false);
    const opened = { runId: run.id, how: 'history' as const, createdAt: run.createdAt };
    this.update({ opened });
    let events: RunEvent[];
    try {
      events = await this.o.api.runEvents(run.id);
    } catch (e) {
      if (this.followed === run.id) this.update({ problem: (e as Error).message });
      return;
    }
    if (this.followed !== run.id) return;
    this.socket.watchRunFrom(run.id, events.at(-1)?.seq ?? 0);
    if (events.length > 0) this.onEvents(run.id, events);
    this.update({ opened });
  }

  /** Cancels a run of the history (a stale one, waiting for nobody). */
  async cancelRun(runId: string): Promise<boolean> {
    try {
      await this.o.api.command(runId, { type: 'cancel', reason: 'cancelled from the run history' });
      return true;
    } catch (e) {
      this.update({ problem: (e as Error).message });
      return false;
    }
  }

  /** Starts the flow on the canvas with `input`; scripted replies take `paceMs` each. */
  async run(input: string, paceMs = 0): Promise<string | undefined> {
    return this.startRun(input, paceMs);
  }

  /**
   * "Re-run from here": the flow on the canvas, from the shown run's recorded state at `nodeId`'s
   * turn `turn` (from 1), live from there, on the shown run's input.
   */
  async fork(nodeId: string, turn: number, paceMs = 0): Promise<string | undefined> {
    const fromRun = this.getSnapshot().view.runId;
    if (!fromRun) return undefined;
    return this.startRun(undefined, paceMs, { fromRun, at: `${nodeId}:${turn}` });
  }

  /** Pins the node's output of its turn `turn` (from 1) in the shown run; false with a problem said. */
  async pinOutput(nodeId: string, turn: number): Promise<boolean> {
    const fromRun = this.getSnapshot().view.runId;
    if (!fromRun) return false;
    return this.pinChange(() => this.pins.pin(nodeId, fromRun, turn));
  }

  async unpin(nodeId: string): Promise<boolean> {
    return this.pinChange(() => this.pins.unpin(nodeId));
  }

  private async pinChange(change: () => Promise<void>): Promise<boolean> {
    this.update({ busy: true, problem: undefined });
    try {
      await change();
      return true;
    } catch (e) {
      this.update({ problem: (e as Error).message });
      return false;
    } finally {
      this.update({ busy: false });
    }
  }

  private async startRun(
    input: string | undefined,
    paceMs: number,
    fork?: { fromRun: string; at: string },
  ): Promise<string | undefined> {
    const { store, api } = this.o;
    this.update({ busy: true, problem: undefined });
    try {
      const flow = withPace(store.toFlow(), paceMs);
      const run = await api.startRun(flow, input, store.runState.breakpointList(), fork);
      this.mine.add(run.id);
      if (this.flowId !== flow.id) void this.watchFlow(flow.id);
      this.follow(run.id, Date.parse(run.createdAt) || Date.now());
      return run.id;
    } catch (e) {
      const body =
        e instanceof ApiError ? (e.body as { errors?: Problem[]; warnings?: Problem[] }) : undefined;
      if (Array.isArray(body?.errors) && body.errors.length)
        store.setProblems({ errors: body.errors, warnings: body.warnings ?? [] });
      this.update({ problem: (e as Error).message });
      return undefined;
    } finally {
      this.update({ busy: false });
    }
  }

  /** Sends a command to the followed run. */
  async command(cmd: RunCommandBody): Promise<boolean> {
    const runId = this.followed;
    if (!runId) return false;
    this.update({ busy: true, problem: undefined });
    try {
      await this.o.api.command(runId, cmd);
      return true;
    } catch (e) {
      this.update({ problem: (e as Error).message });
      if (this.snapshot.attached) void this.readAttached(runId);
      return false;
    } finally {
      this.update({ busy: false });
    }
  }

  /** Sets or clears a breakpoint; a live run gets it at once, later runs when they start. */
  toggleBreakpoint(nodeId: string): void {
    this.flush();
    const rs = this.o.store.runState;
    const on = !rs.breakpoints.get(nodeId);
    rs.toggleBreakpoint(nodeId, on);
    if (this.followed && !FINAL_PHASES.has(this.snapshot.view.phase) && this.snapshot.view.phase !== 'idle')
      void this.command({ type: 'breakpoint', nodeId, on });
  }
}
