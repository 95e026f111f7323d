/**
 * Live run events over WebSocket. A client subscribes to one run or to every run of a flow,
 * with the last seq it has; it gets everything after that from the log, in order, then live.
 *
 * By default a client gets only durable events (on disk: they survive a power loss). A
 * connection that subscribes with `provisional: true` gets each event as soon as the OS has
 * it — it survives the server dying, not yet a power loss — so a live view is not held back
 * by the disk's sync; its frames carry `durable`, the seq through which the run is on disk,
 * and a `{ type: 'durable', runId, seq }` message says when all it holds is on disk (seq is
 * its last event then). Events up to `durable` never change; after a power loss those above
 * it may be replaced by what the resumed run emits, which is why such a client resubscribes
 * with its durable seq, not its last one. With fsync off (`os` durability) written is durable and both
 * kinds of client get the same events at the same time.
 *
 * Events published during one event-loop turn go out as one frame per run (a few, split at
 * the run's writes, when they pass a quarter of `maxBuffered`), built once and shared by
 * every subscriber (200 subscribers cost one frame); frames are assembled from the lines the
 * log wrote (a JSON array of events each), so a live event is serialised and encoded once in
 * all. A client whose unsent data passes `maxBuffered` is closed with {@link CLOSE_SLOW} — it
 * resubscribes with its last seq and misses nothing — so a stalled reader never grows the
 * server's memory by more than that and one batch.
 */
import { MAX_ID_LENGTH, type RunEvent } from '@switchboard/schemas';
import { dict } from '@switchboard/schemas/core';
import type { WebSocket } from 'ws';
import type { LogLine } from '../store/event-log.js';

/** Close code for a client that could not keep up; recover by resubscribing with the last seq. */
export const CLOSE_SLOW = 4008;
/** Close code for a client that kept sending bad messages. */
export const CLOSE_POLICY = 4400;
/** Close code when the server shuts down (reconnect later). */
export const CLOSE_GOING_AWAY = 1001;

export interface HubSource {
  /**
   * Durable events of a run after `after` (with `written`, also those the OS has that are not
   * yet synced); undefined when the run does not exist.
   */
  eventsAfter(runId: string, after: number, limit: number, written?: boolean): RunEvent[] | undefined;
  /** The seq through which a run's log is durable. */
  durableSeq(runId: string): number;
  /** Runs of a flow that are still live (not in a final state). */
  liveRunsOf(flowId: string): string[];
  flowOf(runId: string): string | undefined;
  /**
   * Scaled out: resolves true once a run unknown here is recorded (another instance started it
   * and its announcement is on the way); false when no instance has it.
   */
  arrived?(runId: string): Promise<boolean>;
}

export interface HubOptions {
  /** Bytes of unsent frames a client may accumulate before it is closed. Default 8 MiB. */
  maxBuffered?: number;
  /** Subscriptions per connection. Default 1,000. */
  maxSubscriptions?: number;
  /** Events per catch-up frame. Default 2,000. */
  historyChunk?: number;
  /** How long a catching-up client may take to read a chunk before it is dropped. Default 30 s. */
  drainTimeoutMs?: number;
}

interface Client {
  ws: WebSocket;
  /** Takes events before they are durable (set by its first subscribe; fixed after). */
  provisional: boolean | undefined;
  /** Last seq sent per run. */
  sent: Map<string, number>;
  /** Provisional clients: the durable seq last told per run. */
  durableSent: Map<string, number>;
  runs: Set<string>;
  flows: Set<string>;
  errors: number;
  closing: boolean;
  /** Runs whose history is still being sent; live frames wait. */
  catching: Set<string>;
}

interface Batch {
  events: RunEvent[];
  /** The log lines the events were written in, when every publisher gave them. */
  lines: LogLine[] | undefined;
}

interface Pending {
  flowId: string | undefined;
  /** Events that became durable (for every client). */
  durable?: Batch;
  /** Events written, not yet durable (for provisional clients). */
  written?: Batch;
}

const COMMA = Buffer.from(',');

interface Frame {
  data: Buffer | string;
  /** Events in it, and the seq of its last one. */
  n: number;
  last: number;
}

/**
 * `{"type":"events","runId":…,"events":[…]}` frames (UTF-8) from the log lines the events
 * were written in: each line is a JSON array, so the frame's array is their contents joined
 * by commas, copied once. A batch bigger than `budget` bytes becomes several frames, split
 * between lines, so that no single frame can exceed what a reader that keeps up may have
 * unsent. `durable` (for provisional clients) is added to each frame.
 */
function framesOf(
  runId: string,
  lines: LogLine[],
  events: RunEvent[],
  budget: number,
  durable: number | undefined,
): Frame[] {
  const head = Buffer.from(`{"type":"events","runId":${JSON.stringify(runId)},"events":[`);
  const end = Buffer.from(durable === undefined ? ']}' : `],"durable":${durable}}`);
  const frames: Frame[] = [];
  let done = 0;
  for (let i = 0; i < lines.length; ) {
    // A line is `[` events `]` and a newline: its contents are 3 bytes shorter.
    let j = i;
    let size = head.length + end.length - 1;
    do size += lines[j++]!.bytes.length - 2;
    while (j < lines.length && size + lines[j]!.bytes.length - 2 <= budget);
    const parts: Buffer[] = [head];
    let n = 0;
    for (let k = i; k < j; k++) {
      const b = lines[k]!.bytes;
      if (k > i) parts.push(COMMA);
      parts.push(b.subarray(1, b.length - 2));
      n += lines[k]!.count;
    }
    parts.push(end);
    done += n;
    frames.push({ data: Buffer.concat(parts, size), n, last: events[done - 1]!.seq });
    i = j;
  }
  return frames;
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const ID_RE = new RegExp(`^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,${MAX_ID_LENGTH - 1}}$`);

export class EventHub {
  private readonly clients = new Set<Client>();
  private readonly byRun = new Map<string, Set<Client>>();
  private readonly byFlow = new Map<string, Set<Client>>();
  private pending = new Map<string, Pending>();
  private scheduled = false;
  private readonly maxBuffered: number;
  private readonly maxSubscriptions: number;
  private readonly historyChunk: number;
  private readonly drainTimeoutMs: number;
  /** Frames sent and clients dropped, for health and benchmarks. */
  readonly stats = { frames: 0, events: 0, slowClosed: 0 };

  constructor(
    private readonly source: HubSource,
    options: HubOptions = {},
  ) {
    this.maxBuffered = options.maxBuffered ?? 8 * 1024 * 1024;
    this.maxSubscriptions = options.maxSubscriptions ?? 1000;
    this.historyChunk = options.historyChunk ?? 2000;
    this.drainTimeoutMs = options.drainTimeoutMs ?? 30_000;
  }

  get clientCount(): number {
    return this.clients.size;
  }

  /**
   * Durable events (with the log lines they were written in, when the caller has them); sent
   * once the current callback is done. A run's group commit publishes at most once per
   * event-loop turn, so that is one frame per run per turn — and it goes out in the same turn
   * as the write that made it durable, not after whatever the loop runs next (say, the run's
   * next slice). Returns how many clients watch the run (each costs a send per frame).
   */
  publish(runId: string, events: RunEvent[], lines?: LogLine[]): number {
    return this.queue(runId, 'durable', events, lines);
  }

  /**
   * Events the OS has that are not durable yet, for provisional clients (their durability is
   * published later through `publish`). Returns how many clients watch the run.
   */
  publishWritten(runId: string, events: RunEvent[], lines: LogLine[]): number {
    return this.queue(runId, 'written', events, lines);
  }

  private queue(runId: string, kind: 'durable' | 'written', events: RunEvent[], lines?: LogLine[]): number {
    let p = this.pending.get(runId);
    const flowId = p ? p.flowId : this.source.flowOf(runId);
    const watchers = this.watchersOf(runId, flowId);
    // Nobody to send to (a run nobody watches): a client that subscribes later reads the log.
    if (events.length === 0 || (watchers === 0 && !p)) return watchers;
    if (!p) {
      p = { flowId };
      this.pending.set(runId, p);
    }
    let b = p[kind];
    if (!b) {
      b = { events: [], lines: [] };
      p[kind] = b;
    }
    for (const e of events) b.events.push(e);
    if (lines && b.lines) for (const x of lines) b.lines.push(x);
    else b.lines = undefined;
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.flush());
    }
    return watchers;
  }

  /** Clients subscribed to a run, by id or through its flow. */
  private watchersOf(runId: string, flowId: string | undefined): number {
    return (
      (this.byRun.get(runId)?.size ?? 0) + (flowId === undefined ? 0 : (this.byFlow.get(flowId)?.size ?? 0))
    );
  }

  /** Sends everything published so far (also called by the scheduler). */
  flush(): void {
    this.scheduled = false;
    const batches = this.pending;
    this.pending = new Map();
    for (const [runId, p] of batches) {
      const targets = new Set<Client>(this.byRun.get(runId));
      if (p.flowId !== undefined) for (const c of this.byFlow.get(p.flowId) ?? []) targets.add(c);
      if (targets.size === 0) continue;
      const durableTargets: Client[] = [];
      const provisionalTargets: Client[] = [];
      for (const c of targets) (c.provisional ? provisionalTargets : durableTargets).push(c);
      if (p.durable && durableTargets.length > 0) this.sendBatch(runId, p.durable, durableTargets, undefined);
      if (provisionalTargets.length === 0) continue;
      const durable = this.source.durableSeq(runId);
      // The newest events known: those just written, or (fsync off) those just durable.
      const live = p.written ?? p.durable;
      if (live) this.sendBatch(runId, live, provisionalTargets, durable);
      for (const c of provisionalTargets) this.tellDurable(c, runId, durable);
    }
  }

  /**
   * Sends a batch to the clients that lack some of it: one set of frames shared by all that
   * lack all of it. `durable` (provisional clients) goes in the frames.
   */
  private sendBatch(runId: string, b: Batch, targets: Client[], durable: number | undefined): void {
    let shared: Frame[] | undefined;
    const { events, lines } = b;
    const first = events[0]!.seq;
    const last = events.at(-1)!.seq;
    for (const c of targets) {
      if (c.closing || c.catching.has(runId)) continue;
      const sent = c.sent.get(runId) ?? 0;
      if (sent >= last || this.stalled(c)) continue;
      if (sent < first) {
        shared ??= lines
          ? framesOf(runId, lines, events, this.maxBuffered / 4, durable)
          : [{ data: this.frameJson(runId, events, durable), n: events.length, last }];
        for (const f of shared) {
          c.sent.set(runId, f.last);
          this.send(c, f.data, f.n);
        }
      } else {
        // Seqs in a batch are contiguous: the unsent ones are a suffix (rare: a client that
        // caught up into this batch).
        c.sent.set(runId, last);
        const rest = events.slice(sent - first + 1);
        this.send(c, this.frameJson(runId, rest, durable), rest.length);
      }
      if (durable !== undefined) c.durableSent.set(runId, Math.min(durable, last));
    }
  }

  private frameJson(runId: string, events: RunEvent[], durable: number | undefined): string {
    return JSON.stringify(
      durable === undefined ? { type: 'events', runId, events } : { type: 'events', runId, events, durable },
    );
  }

  /**
   * Tells a provisional client that everything it holds of a run is durable, when it was not
   * told so yet. Partial progress is not worth a message of its own: it rides in the next
   * events frame, and the sync that covers the last event written always comes.
   */
  private tellDurable(c: Client, runId: string, durable: number): void {
    if (c.closing || c.catching.has(runId)) return;
    const seq = c.sent.get(runId) ?? 0;
    if (durable < seq || seq <= (c.durableSent.get(runId) ?? 0)) return;
    c.durableSent.set(runId, seq);
    this.reply(c, { type: 'durable', runId, seq });
  }

  /**
   * Drops a client that still has more than `maxBuffered` unsent: it did not read what it got
   * before. Asked once per batch, not per frame, so a burst (a batch that waited for a slow
   * disk) reaches a reader that keeps up; a stalled one holds at most one batch more.
   */
  private stalled(c: Client): boolean {
    if (c.closing) return true;
    if (c.ws.bufferedAmount <= this.maxBuffered) return false;
    this.stats.slowClosed++;
    this.drop(c, CLOSE_SLOW, 'slow consumer: resubscribe with your last seq');
    return true;
  }

  private send(c: Client, frame: Buffer | string, n: number): void {
    if (c.closing) return;
    this.stats.frames++;
    this.stats.events += n;
    // A text frame either way (ws sends a Buffer as binary unless told).
    c.ws.send(frame, { binary: false });
  }

  /** A message about a flow (its pins changed) to every client watching the flow's runs. */
  notifyFlow(flowId: string, msg: Record<string, unknown>): void {
    for (const c of this.byFlow.get(flowId) ?? []) this.reply(c, msg);
  }

  private reply(c: Client, msg: Record<string, unknown>): void {
    if (!c.closing && c.ws.readyState === c.ws.OPEN) c.ws.send(JSON.stringify(msg));
  }

  private drop(c: Client, code: number, reason: string): void {
    c.closing = true;
    this.forget(c);
    try {
      c.ws.close(code, reason);
    } catch {}
    // A client that never reads will not read the close frame either.
    setTimeout(() => c.ws.terminate(), 5000).unref();
  }

  private forget(c: Client): void {
    this.clients.delete(c);
    for (const r of c.runs) this.byRun.get(r)?.delete(c);
    for (const f of c.flows) this.byFlow.get(f)?.delete(c);
  }

  /** Takes over a connected socket. */
  attach(ws: WebSocket): void {
    const c: Client = {
      ws,
      provisional: undefined,
      sent: new Map(),
      durableSent: new Map(),
      runs: new Set(),
      flows: new Set(),
      errors: 0,
      closing: false,
      catching: new Set(),
    };
    this.clients.add(c);
    ws.on('message', (data, isBinary) => this.onMessage(c, data as Buffer, isBinary));
    ws.on('close', () => this.forget(c));
    ws.on('error', () => this.forget(c));
  }

  private bad(c: Client, code: string, message: string): void {
    c.errors++;
    this.reply(c, { type: 'error', code, message });
    if (c.errors > 50) this.drop(c, CLOSE_POLICY, 'too many bad messages');
  }

  private onMessage(c: Client, data: Buffer, isBinary: boolean): unknown {
    if (c.closing) return;
    if (isBinary) return this.bad(c, 'bad-message', 'binary messages are not accepted; send JSON text');
    let msg: unknown;
    try {
      msg = JSON.parse(data.toString('utf8'));
    } catch {
      return this.bad(c, 'bad-message', 'not JSON');
    }
    if (!isObj(msg) || typeof msg.type !== 'string')
      return this.bad(c, 'bad-message', 'expected { "type": "subscribe" | "unsubscribe" | "ping", … }');
    switch (msg.type) {
      case 'ping':
        return this.reply(c, { type: 'pong' });
      case 'subscribe':
        return this.subscribe(c, msg);
      case 'unsubscribe':
        if (typeof msg.runId === 'string') {
          c.runs.delete(msg.runId);
          this.byRun.get(msg.runId)?.delete(c);
        }
        if (typeof msg.flowId === 'string') {
          c.flows.delete(msg.flowId);
          this.byFlow.get(msg.flowId)?.delete(c);
        }
        return this.reply(c, { type: 'unsubscribed', runId: msg.runId, flowId: msg.flowId });
      default:
        return this.bad(c, 'bad-message', `unknown message type ${JSON.stringify(msg.type).slice(0, 60)}`);
    }
  }

  private subscribe(c: Client, msg: Record<string, unknown>): unknown {
    if (c.runs.size + c.flows.size >= this.maxSubscriptions)
      return this.bad(c, 'too-many-subscriptions', `at most ${this.maxSubscriptions} per connection`);
    const seqOf = (v: unknown): number | undefined =>
      v === undefined ? 0 : Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : undefined;
    if (msg.provisional !== undefined && typeof msg.provisional !== 'boolean')
      return this.bad(c, 'bad-message', '"provisional" must be true or false');
    const provisional = msg.provisional === true;
    // One kind per connection: a run's frames are shared by the clients of one kind.
    if (c.provisional !== undefined && c.provisional !== provisional)
      return this.bad(
        c,
        'bad-message',
        `this connection subscribed ${c.provisional ? 'with' : 'without'} "provisional"; open another for the other kind`,
      );
    if (typeof msg.runId === 'string') {
      if (!ID_RE.test(msg.runId)) return this.bad(c, 'bad-message', 'runId is not a valid id');
      const after = seqOf(msg.after);
      if (after === undefined) return this.bad(c, 'bad-message', '"after" must be a seq (integer ≥ 0)');
      const runId = msg.runId;
      if (this.source.eventsAfter(runId, after, 0) !== undefined)
        return this.subscribeRun(c, runId, after, provisional);
      if (!this.source.arrived) return this.bad(c, 'not-found', `no run ${runId}`);
      // Scaled out, a run another instance started may be recorded here a moment later.
      void this.source.arrived(runId).then(
        (ok) => {
          if (c.closing) return;
          if (!ok || this.source.eventsAfter(runId, after, 0) === undefined)
            return this.bad(c, 'not-found', `no run ${runId}`);
          if (c.provisional !== undefined && c.provisional !== provisional)
            return this.bad(
              c,
              'bad-message',
              'this connection subscribed with the other "provisional" meanwhile',
            );
          this.subscribeRun(c, runId, after, provisional);
        },
        () => this.bad(c, 'not-found', `no run ${runId}`),
      );
      return;
    }
    if (typeof msg.flowId === 'string') {
      if (!ID_RE.test(msg.flowId)) return this.bad(c, 'bad-message', 'flowId is not a valid id');
      const flowId = msg.flowId;
      const afterMap = dict<number>();
      if (msg.after !== undefined) {
        if (!isObj(msg.after)) return this.bad(c, 'bad-message', '"after" must map run ids to seqs');
        for (const [k, v] of Object.entries(msg.after)) {
          const s = seqOf(v);
          if (s === undefined || !ID_RE.test(k))
            return this.bad(c, 'bad-message', `bad "after" entry ${k.slice(0, 60)}`);
          afterMap[k] = s;
        }
      }
      c.provisional = provisional;
      c.flows.add(flowId);
      const set = this.byFlow.get(flowId) ?? new Set<Client>();
      this.byFlow.set(flowId, set);
      set.add(c);
      const runs = new Set([...this.source.liveRunsOf(flowId), ...Object.keys(afterMap)]);
      this.reply(c, { type: 'subscribed', flowId, runs: [...runs] });
      for (const runId of runs) {
        if (this.source.flowOf(runId) !== flowId) continue;
        const after = afterMap[runId] ?? 0;
        this.catchUp(c, runId, after);
      }
      return;
    }
    this.bad(c, 'bad-message', 'subscribe needs "runId" or "flowId"');
  }

  private subscribeRun(c: Client, runId: string, after: number, provisional: boolean): void {
    c.provisional = provisional;
    c.runs.add(runId);
    const set = this.byRun.get(runId) ?? new Set<Client>();
    this.byRun.set(runId, set);
    set.add(c);
    this.reply(c, { type: 'subscribed', runId, after });
    this.catchUp(c, runId, after);
  }

  /**
   * Sends the history after `after` in chunks, paced by the client's reading: the next chunk
   * goes out once the socket has drained below half the bound. Live events for the run are
   * held back meanwhile (they are in the log, so the next read picks them up); the loop ends
   * when a read finds nothing new, and the live feed continues from there.
   */
  private catchUp(c: Client, runId: string, after: number): void {
    c.sent.set(runId, Math.max(after, c.sent.get(runId) ?? 0));
    if (c.catching.has(runId)) return;
    c.catching.add(runId);
    const loop = async () => {
      const provisional = c.provisional === true;
      while (!c.closing) {
        const sent = c.sent.get(runId) ?? 0;
        const chunk = this.source.eventsAfter(runId, sent, this.historyChunk, provisional) ?? [];
        if (chunk.length === 0) break;
        const last = chunk.at(-1)!.seq;
        c.sent.set(runId, last);
        let durable: number | undefined;
        if (provisional) {
          durable = this.source.durableSeq(runId);
          c.durableSent.set(runId, Math.min(durable, last));
        }
        const frame = this.frameJson(runId, chunk, durable);
        this.stats.frames++;
        this.stats.events += chunk.length;
        // The callback of a send runs once that frame reached the kernel.
        const written = new Promise<void>((r) => c.ws.send(frame, () => r()));
        if (c.ws.bufferedAmount > this.maxBuffered / 2) await this.drained(c, written);
      }
      c.catching.delete(runId);
      // Durability that advanced while it caught up (live notices wait meanwhile).
      if (provisional) this.tellDurable(c, runId, this.source.durableSeq(runId));
    };
    loop().catch(() => this.drop(c, CLOSE_SLOW, 'catch-up failed: resubscribe with your last seq'));
  }

  /** Resolves when `written` has reached the kernel, or drops the client after `drainTimeoutMs`. */
  private drained(c: Client, written: Promise<void>): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.stats.slowClosed++;
        this.drop(c, CLOSE_SLOW, 'slow consumer: resubscribe with your last seq');
        resolve();
      }, this.drainTimeoutMs);
      void written.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Closes every client (server shutdown). */
  closeAll(): void {
    for (const c of [...this.clients]) this.drop(c, CLOSE_GOING_AWAY, 'server shutting down');
  }
}
