/**
 * The live feed of run events from `switchboard serve` (`/api/ws`). It subscribes to every run
 * of a flow and to single runs, remembers the last `seq` it has of each run, and after any
 * disconnect (network, server restart, a slow-consumer close) reconnects and resubscribes with
 * those seqs, so the server sends exactly what was missed. Events arrive in order and at most
 * once: anything at or below the last seq is dropped, and a gap makes it reconnect rather than
 * show a run with a hole in it.
 *
 * With `provisional`, the server sends each event as soon as it has written it, before it is on
 * disk, and tells how far each run's log is on disk (its durable watermark). Events above the
 * watermark can be lost with the server's host and replaced by different ones under the same
 * seqs, so after a disconnect the client asks again from the watermark, not from its last seq,
 * and when the run's first frame arrives it rewinds to the watermark (`onRewind`) before
 * applying what the server sends.
 *
 * Framework-free: the browser's WebSocket by default, any compatible constructor in tests.
 */
import type { RunEvent } from '@switchboard/schemas';

/** The part of the WebSocket API this client uses (the browser's, or `ws` in Node). */
export interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

export type SocketFactory = (url: string, protocols: string[]) => SocketLike;

export type ConnectionState = 'connecting' | 'open' | 'closed';

export interface EventsSocketOptions {
  url: string;
  protocols?: string[];
  /** Receives the new events of one run (the frame's run id: nested runs arrive with their parent). */
  onEvents(runId: string, events: RunEvent[]): void;
  /**
   * Provisional mode: forget what you hold of `runId` beyond `toSeq` (it may have been lost
   * with the server's host); the events that follow in `onEvents` start at `toSeq + 1`.
   */
  onRewind?(runId: string, toSeq: number): void;
  /**
   * Subscribe with `provisional: true`: events arrive before they are on the server's disk, and
   * `onRewind` replaces those a restart of the server's host changed. Default false.
   */
  provisional?: boolean;
  onState?(state: ConnectionState): void;
  /** Errors the server reported (`{ type: 'error' }`), e.g. a run that does not exist. */
  onServerError?(code: string, message: string): void;
  createSocket?: SocketFactory;
  /** First reconnect delay; doubles up to `maxBackoffMs`. Defaults 250 and 5,000. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

const OPEN = 1;

export class RunEventsSocket {
  private socket: SocketLike | undefined;
  private readonly flows = new Set<string>();
  /** Runs subscribed one by one (besides those of the watched flows). */
  private readonly runs = new Set<string>();
  /** Runs tracked, with the last seq received of each. */
  private readonly last = new Map<string, number>();
  /** Provisional mode: the durable watermark the server reported for each tracked run. */
  private readonly durable = new Map<string, number>();
  /**
   * Provisional mode: runs holding events above their watermark from an earlier connection,
   * with the seq to rewind to when their first frame arrives on this one.
   */
  private readonly rewinds = new Map<string, number>();
  private backoff: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = true;
  private stateNow: ConnectionState = 'closed';
  /** Connections opened so far (tests, diagnostics). */
  connections = 0;

  constructor(private readonly o: EventsSocketOptions) {
    this.backoff = o.minBackoffMs ?? 250;
  }

  get state(): ConnectionState {
    return this.stateNow;
  }

  /** The last seq received of a run (0 when none). */
  lastSeq(runId: string): number {
    return this.last.get(runId) ?? 0;
  }

  /**
   * The seq through which what this client holds of a run is on the server's disk, so never
   * changes (0 when none). Without `provisional` the server sends only such events: the last seq.
   */
  durableSeq(runId: string): number {
    if (!this.o.provisional) return this.lastSeq(runId);
    // The watermark can pass events still on their way; and while a rewind is pending, what is
    // held beyond its seq came before a disconnect and may be gone.
    return Math.min(this.durable.get(runId) ?? 0, this.rewinds.get(runId) ?? this.lastSeq(runId));
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  /** Closes for good (no reconnect). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    const s = this.socket;
    this.socket = undefined;
    if (s) {
      s.onclose = s.onmessage = s.onerror = s.onopen = null;
      try {
        s.close(1000, 'closed by the editor');
      } catch {
        // Already closing.
      }
    }
    this.setState('closed');
  }

  /** Every run of `flowId`: those live now (from their start) and those started later. */
  watchFlow(flowId: string): void {
    if (this.flows.has(flowId)) return;
    this.flows.add(flowId);
    this.subscribe({ flowId, after: this.afterMap() });
  }

  unwatchFlow(flowId: string): void {
    if (!this.flows.delete(flowId)) return;
    this.send({ type: 'unsubscribe', flowId });
  }

  /**
   * One run, from what this client has of it (from its start the first time). Runs that start
   * while a flow is watched are tracked without this.
   */
  watchRun(runId: string): void {
    if (!this.last.has(runId)) this.last.set(runId, 0);
    this.runs.add(runId);
    this.subscribe({ runId, after: this.durableSeq(runId) });
  }

  /**
   * One run whose events up to `seq` the client read elsewhere (its log, over REST): tracked as
   * held and on disk up to there, live from there on. (A connection that sent a run once does
   * not send it again, so a run given up on and opened again is read from its log.)
   */
  watchRunFrom(runId: string, seq: number): void {
    this.last.set(runId, seq);
    this.durable.set(runId, seq);
    this.runs.add(runId);
    this.subscribe({ runId, after: seq });
  }

  /** Stops tracking a run: a later `watchRun` gets it again from its start. */
  forgetRun(runId: string): void {
    this.last.delete(runId);
    this.durable.delete(runId);
    this.rewinds.delete(runId);
    if (this.runs.delete(runId)) this.send({ type: 'unsubscribe', runId });
  }

  /** Stops tracking every run (switching to another flow). */
  forgetRuns(): void {
    for (const runId of [...this.last.keys()]) this.forgetRun(runId);
  }

  /** Drops the connection as a network failure would (tests and the "reconnect" button). */
  dropConnection(): void {
    this.socket?.close(4000, 'dropped by the client');
  }

  /** What to ask after, per tracked run: the last seq, or in provisional mode the watermark. */
  private afterMap(): Record<string, number> {
    return Object.fromEntries([...this.last.keys()].map((runId) => [runId, this.durableSeq(runId)]));
  }

  private subscribe(
    msg: { flowId: string; after: Record<string, number> } | { runId: string; after: number },
  ) {
    this.send({ type: 'subscribe', ...msg, ...(this.o.provisional ? { provisional: true } : {}) });
  }

  private send(msg: Record<string, unknown>): void {
    const s = this.socket;
    if (s && s.readyState === OPEN) s.send(JSON.stringify(msg));
  }

  private setState(state: ConnectionState): void {
    if (this.stateNow === state) return;
    this.stateNow = state;
    this.o.onState?.(state);
  }

  private connect(): void {
    if (this.stopped) return;
    this.setState('connecting');
    const create =
      this.o.createSocket ??
      ((url: string, protocols: string[]) => new WebSocket(url, protocols) as unknown as SocketLike);
    let s: SocketLike;
    try {
      s = create(this.o.url, this.o.protocols ?? []);
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.socket = s;
    s.onopen = () => {
      this.connections++;
      this.backoff = this.o.minBackoffMs ?? 250;
      this.setState('open');
      // Provisional: events above the watermark may have been lost with the server's host and
      // replaced since; ask again from the watermark and replace them when their run's frame comes.
      if (this.o.provisional)
        for (const [runId, seq] of this.last) {
          const durable = this.durableSeq(runId);
          if (seq > durable) this.rewinds.set(runId, durable);
        }
      // Resubscribe with what we have: the server sends only what came after.
      const after = this.afterMap();
      for (const flowId of this.flows) this.subscribe({ flowId, after });
      for (const runId of this.runs) this.subscribe({ runId, after: this.durableSeq(runId) });
    };
    s.onmessage = (ev) => this.onMessage(ev.data);
    s.onerror = () => {
      // A close follows; reconnecting happens there.
    };
    s.onclose = () => {
      if (this.socket !== s) return;
      this.socket = undefined;
      this.scheduleReconnect();
    };
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    this.setState('closed');
    clearTimeout(this.timer);
    const delay = this.backoff;
    this.backoff = Math.min(this.backoff * 2, this.o.maxBackoffMs ?? 5000);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  private onMessage(data: unknown): void {
    if (typeof data !== 'string') return;
    let msg: unknown;
    try {
      msg = JSON.parse(data);
    } catch {
      return;
    }
    if (!msg || typeof msg !== 'object') return;
    const m = msg as {
      type?: unknown;
      runId?: unknown;
      events?: unknown;
      code?: unknown;
      message?: unknown;
      durable?: unknown;
      seq?: unknown;
    };
    if (m.type === 'error') {
      this.o.onServerError?.(String(m.code ?? 'error'), String(m.message ?? ''));
      return;
    }
    if (m.type === 'durable') {
      if (typeof m.runId === 'string') this.noteDurable(m.runId, m.seq);
      return;
    }
    if (m.type !== 'events' || typeof m.runId !== 'string' || !Array.isArray(m.events)) return;
    const runId = m.runId;
    const events = (m.events as RunEvent[]).filter((e) => e && typeof e.seq === 'number');
    if (!this.last.has(runId)) {
      // A run not tracked: one that started while its flow is watched (its first frame starts
      // at seq 1) is tracked from now on; frames of runs given up on are ignored.
      if (events[0]?.seq !== 1) return;
      this.last.set(runId, 0);
    }
    this.noteDurable(runId, m.durable);
    // A pending rewind: what the server sends replaces what we hold beyond its seq.
    const rewind = this.rewinds.get(runId);
    const have = rewind ?? this.lastSeq(runId);
    const fresh = events.filter((e) => e.seq > have);
    if (fresh.length === 0) return;
    // Contiguous from what we have, or nothing: a hole means a lost frame; a new connection
    // asks again from the last seq we hold.
    for (let i = 0; i < fresh.length; i++) {
      if (fresh[i]!.seq !== have + 1 + i) {
        this.dropConnection();
        return;
      }
    }
    if (rewind !== undefined) {
      this.rewinds.delete(runId);
      this.o.onRewind?.(runId, rewind);
    }
    this.last.set(runId, fresh.at(-1)!.seq);
    this.o.onEvents(runId, fresh);
  }

  /** Provisional mode: a run's watermark as the server reports it (it only rises). */
  private noteDurable(runId: string, seq: unknown): void {
    if (!this.o.provisional || !this.last.has(runId)) return;
    if (!Number.isSafeInteger(seq) || (seq as number) < 0) return;
    this.durable.set(runId, Math.max(seq as number, this.durable.get(runId) ?? 0));
  }
}
