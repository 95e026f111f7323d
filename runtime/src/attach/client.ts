/**
 * The headless side of `switchboard run FLOW --attach URL`: streams a local run's events to a
 * server's `/api/attach` and hands the commands it relays (pause, answer, cancel…) to the run.
 *
 * The run never waits for the server: events are kept until the server acknowledges them (on
 * its disk), sent in batches, and when the connection is lost the run goes on while the client
 * reconnects with its key and resends what the server does not hold (from the `ackSeq` of the
 * new welcome). A refusal the server means (bad token, invalid flow, a run it abandoned) stops
 * attaching for good; the run still ends here. Every change is told on `notice` (the CLI's stderr).
 */
import { hostname } from 'node:os';
import type { Flow, RunEvent } from '@switchboard/schemas';
import type WebSocket from 'ws';
import type { RunCommand } from '../engine/types.js';
import { operatorWebSocket } from '../net/operator-socket.js';

export interface AttachClientOptions {
  /** The server's address (`http://host:port`, `ws://…`, or either with `/api/attach`). */
  url: string;
  token?: string;
  flow: Flow;
  input: unknown;
  /** The local run's id (what its events carry). */
  localRunId: string;
  /** Called with each command the server relays from an editor. */
  onCommand: (cmd: RunCommand) => void;
  /** A line for the operator (stderr). */
  notice: (line: string) => void;
  /** How this machine names itself to the server. Default os.hostname(). */
  host?: string;
  /** Events in one message. Default 500. */
  batch?: number;
  /** Reconnect backoff: first and largest wait. Default 250 ms, 5 s. */
  retryMs?: number;
  maxRetryMs?: number;
  /** A ping every this often; a connection that answers none of two is dropped and redone. Default 15 s. */
  heartbeatMs?: number;
  /** Unacknowledged events kept (the oldest beyond are dropped, and attaching stops). Default 200,000. */
  maxPending?: number;
}

const COMMANDS = new Set(['pause', 'resume', 'step', 'cancel', 'inject', 'answer', 'breakpoint']);

/** Close codes after which reconnecting cannot help (1009: a message too big for the server). */
const FINAL_CLOSES = new Set([1009, 4400, 4403, 4409, 4413]);

/** The server's message limit (WS_MAX_PAYLOAD), less room for the envelope. */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024 - 1024;
/** Characters of events batched in one message: at most 3 MiB of UTF-8, under the limit. */
const MESSAGE_CHARS = 1024 * 1024;
/** Messages sent and not yet acknowledged. */
const MAX_IN_FLIGHT = 8;

/** `http://h:p[/…]` → `ws://h:p/api/attach`. */
export function attachUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`--attach ${url}: not a URL (expected http://HOST:PORT)`);
  }
  if (u.protocol === 'http:') u.protocol = 'ws:';
  else if (u.protocol === 'https:') u.protocol = 'wss:';
  else if (u.protocol !== 'ws:' && u.protocol !== 'wss:')
    throw new Error(`--attach ${url}: expected an http(s) or ws(s) address`);
  if (!u.pathname.endsWith('/api/attach')) u.pathname = `${u.pathname.replace(/\/+$/, '')}/api/attach`;
  u.search = '';
  u.hash = '';
  return u.toString();
}

/** Plain validation of a relayed command: only the kinds an editor may send, with their fields. */
export function relayedCommand(v: unknown): RunCommand | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const c = v as Record<string, unknown>;
  if (typeof c.type !== 'string' || !COMMANDS.has(c.type)) return undefined;
  const optStr = (k: string) => c[k] === undefined || typeof c[k] === 'string';
  switch (c.type) {
    case 'inject':
      return typeof c.text === 'string' && optStr('nodeId') ? (c as RunCommand) : undefined;
    case 'answer':
      return typeof c.answer === 'string' && optStr('nodeId') ? (c as RunCommand) : undefined;
    case 'breakpoint':
      return typeof c.nodeId === 'string' && typeof c.on === 'boolean' ? (c as RunCommand) : undefined;
    case 'cancel':
      return optStr('reason') ? (c as RunCommand) : undefined;
    default:
      return { type: c.type } as RunCommand;
  }
}

export type AttachState = 'connecting' | 'attached' | 'disconnected' | 'refused' | 'closed';

export class AttachClient {
  private readonly url: string;
  private ws: WebSocket | undefined;
  /** Events not yet acknowledged, in seq order. */
  private pending: RunEvent[] = [];
  /** The last seq sent on the current connection. */
  private sentSeq = 0;
  /** The last seq of each message sent and not yet acknowledged. */
  private inFlight: number[] = [];
  /** The server's limits from its welcome: events per message, messages per second. */
  private maxBatch = Number.POSITIVE_INFINITY;
  private perSecond = Number.POSITIVE_INFINITY;
  /** When the messages of the last second were sent (pacing under the server's rate). */
  private sentAt: number[] = [];
  private paceTimer: ReturnType<typeof setTimeout> | undefined;
  private acked = 0;
  private runId: string | undefined;
  private key: string | undefined;
  private state: AttachState = 'connecting';
  private wait: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private everAttached = false;
  private lastSeq = 0;
  private readonly idleWaiters = new Set<() => void>();

  constructor(private readonly o: AttachClientOptions) {
    this.url = attachUrl(o.url);
    this.wait = o.retryMs ?? 250;
  }

  /** The server's id for the run, once welcomed. */
  get serverRunId(): string | undefined {
    return this.runId;
  }

  get status(): AttachState {
    return this.state;
  }

  /** Events the server has not acknowledged yet. */
  get unacked(): number {
    return this.pending.length;
  }

  /** The seq through which the server holds the run on its disk. */
  get ackedSeq(): number {
    return this.acked;
  }

  start(): void {
    this.connect();
  }

  /** A local event: kept until acknowledged, sent now if attached. */
  push(ev: RunEvent): void {
    this.lastSeq = ev.seq;
    if (this.state === 'refused' || this.state === 'closed') return;
    this.pending.push(ev);
    if (this.pending.length > (this.o.maxPending ?? 200_000)) {
      this.refuse(
        `more than ${this.o.maxPending ?? 200_000} events are waiting for the server; attaching stops`,
      );
      return;
    }
    if (this.state === 'attached') this.flushSoon();
  }

  private flushScheduled = false;

  private flushSoon(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  /**
   * Sends what the server does not have yet, in messages of at most `batch` events and
   * MESSAGE_CHARS (an event bigger than that goes alone), with at most MAX_IN_FLIGHT messages unacknowledged: a long backlog (after a
   * reconnect) goes out at the pace the server stores it, within its message and rate limits.
   */
  private flush(): void {
    const ws = this.ws;
    if (this.state !== 'attached' || !ws || ws.readyState !== ws.OPEN) return;
    const batch = Math.min(this.o.batch ?? 500, this.maxBatch);
    let from = this.pending.findIndex((e) => e.seq > this.sentSeq);
    if (from === -1) return;
    while (from < this.pending.length && this.inFlight.length < MAX_IN_FLIGHT) {
      const now = Date.now();
      this.sentAt = this.sentAt.filter((t) => now - t < 1000);
      if (this.sentAt.length >= this.perSecond) {
        // The server's rate is spent for this second: the rest goes when it is not.
        if (!this.paceTimer) {
          this.paceTimer = setTimeout(
            () => {
              this.paceTimer = undefined;
              this.flush();
            },
            1000 - (now - this.sentAt[0]!),
          );
          this.paceTimer.unref?.();
        }
        return;
      }
      this.sentAt.push(now);
      const parts: string[] = [];
      let chars = 0;
      while (from < this.pending.length && parts.length < batch) {
        const ev = this.pending[from]!;
        const text = JSON.stringify(ev);
        if (text.length > MESSAGE_CHARS && Buffer.byteLength(text) > MAX_MESSAGE_BYTES) {
          this.refuse(
            `event seq ${ev.seq} (${ev.type}) is ${Buffer.byteLength(text)} bytes, more than one message to the server may carry`,
          );
          return;
        }
        if (parts.length > 0 && chars + text.length > MESSAGE_CHARS) break;
        parts.push(text);
        chars += text.length + 1;
        from++;
      }
      ws.send(`{"type":"events","events":[${parts.join(',')}]}`);
      this.sentSeq = this.pending[from - 1]!.seq;
      this.inFlight.push(this.sentSeq);
    }
  }

  private connect(): void {
    this.timer = undefined;
    if (this.state === 'refused' || this.state === 'closed') return;
    const headers: Record<string, string> = {};
    if (this.o.token) headers.authorization = `Bearer ${this.o.token}`;
    const ws = operatorWebSocket(this.url, {
      headers,
      maxPayload: 4 * 1024 * 1024,
      handshakeTimeout: 10_000,
    });
    this.ws = ws;
    let refusedWith: string | undefined;
    ws.on('unexpected-response', (_req, res) => {
      const status = res.statusCode ?? 0;
      let body = '';
      res.on('data', (d: Buffer) => {
        if (body.length < 2000) body += d.toString();
      });
      res.on('end', () => {
        let message = body;
        try {
          message = (JSON.parse(body) as { error?: { message?: string } }).error?.message ?? body;
        } catch {}
        if (status === 401 || status === 403 || status === 404 || status === 421) {
          refusedWith = `the server refused the connection (${status}): ${message || 'no reason given'}`;
          this.refuse(refusedWith);
        } else this.lost(`the server answered ${status}${message ? `: ${message}` : ''}`);
      });
      ws.terminate();
    });
    // A connection that died without a close (a network gone, a peer frozen) is found by its
    // missing pongs, dropped, and reconnected: the run's events are not held back forever.
    let alive = true;
    const beat = setInterval(() => {
      if (ws.readyState !== ws.OPEN) return;
      if (!alive) return void ws.terminate();
      alive = false;
      ws.ping();
    }, this.o.heartbeatMs ?? 15_000);
    beat.unref?.();
    ws.on('pong', () => {
      alive = true;
    });
    ws.on('open', () => {
      const hello: Record<string, unknown> = {
        type: 'hello',
        protocol: 1,
        host: this.o.host ?? hostname(),
        localRunId: this.o.localRunId,
      };
      if (this.runId && this.key) hello.resume = { runId: this.runId, key: this.key };
      else {
        hello.flow = this.o.flow;
        hello.input = this.o.input ?? null;
      }
      const text = JSON.stringify(hello);
      const size = Buffer.byteLength(text);
      if (size > MAX_MESSAGE_BYTES)
        return this.refuse(
          `the flow and input are ${size} bytes, more than one message to the server may carry (${MAX_MESSAGE_BYTES})`,
        );
      ws.send(text);
    });
    ws.on('message', (data) => this.onMessage(ws, data.toString()));
    ws.on('error', () => {});
    ws.on('close', (code, reason) => {
      clearInterval(beat);
      if (this.ws !== ws) return;
      this.ws = undefined;
      if (refusedWith || this.state === 'refused' || this.state === 'closed') return;
      const why = reason.toString() || `code ${code}`;
      if (FINAL_CLOSES.has(code)) this.refuse(`the server closed the attachment: ${why}`);
      else this.lost(why);
    });
  }

  private onMessage(ws: WebSocket, text: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    switch (msg.type) {
      case 'welcome': {
        const first = this.runId === undefined;
        this.runId = String(msg.runId);
        if (typeof msg.key === 'string') this.key = msg.key;
        const ackSeq = Number(msg.ackSeq) || 0;
        this.inFlight = [];
        const limits = msg.limits as { maxBatch?: unknown; messagesPerSecond?: unknown } | undefined;
        if (typeof limits?.maxBatch === 'number' && limits.maxBatch >= 1) this.maxBatch = limits.maxBatch;
        // A margin under the server's rate (its bucket also allows a burst of twice that).
        if (typeof limits?.messagesPerSecond === 'number' && limits.messagesPerSecond >= 1)
          this.perSecond = Math.max(1, Math.floor(limits.messagesPerSecond * 0.9));
        this.ack(ackSeq);
        this.sentSeq = ackSeq;
        this.state = 'attached';
        this.wait = this.o.retryMs ?? 250;
        if (first) {
          this.o.notice(
            `attach: streaming to ${this.url} as run ${this.runId}${msg.flowKnown ? '' : msg.flowStored ? ' (the server had no flow with this id: it stored this one)' : ' (the server has no flow with this id; the run is stored under its own)'}\n`,
          );
        } else
          this.o.notice(
            `attach: reconnected; the server holds up to seq ${ackSeq}, sending ${this.pending.length} event(s) from there\n`,
          );
        this.everAttached = true;
        this.flush();
        return;
      }
      case 'ack':
        this.ack(Number(msg.seq) || 0);
        return;
      case 'command': {
        const cmd = relayedCommand(msg.command);
        if (cmd) this.o.onCommand(cmd);
        return;
      }
      case 'error':
        // The close that follows says whether to retry; the reason is told once, here.
        this.o.notice(`attach: the server refused: ${String(msg.code)}: ${String(msg.message)}\n`);
        void ws;
        return;
    }
  }

  private ack(seq: number): void {
    if (seq <= this.acked) return;
    this.acked = seq;
    const before = this.inFlight.length;
    this.inFlight = this.inFlight.filter((s) => s > seq);
    if (this.inFlight.length < before) this.flushSoon();
    let n = 0;
    while (n < this.pending.length && this.pending[n]!.seq <= seq) n++;
    if (n > 0) this.pending = this.pending.slice(n);
    if (this.pending.length === 0) for (const w of this.idleWaiters) w();
  }

  private lost(why: string): void {
    if (this.state === 'attached' || this.state === 'connecting') {
      this.o.notice(
        this.everAttached
          ? `attach: lost the server (${why}); the run goes on here, reconnecting and resending from seq ${this.acked + 1}\n`
          : `attach: cannot reach ${this.url} (${why}); the run goes on here, retrying\n`,
      );
    }
    this.state = 'disconnected';
    this.retry();
  }

  private retry(): void {
    if (this.timer || this.state === 'refused' || this.state === 'closed') return;
    const wait = this.wait;
    this.wait = Math.min(this.wait * 2, this.o.maxRetryMs ?? 5000);
    this.timer = setTimeout(() => this.connect(), wait);
    this.timer.unref?.();
  }

  private refuse(why: string): void {
    if (this.state === 'refused' || this.state === 'closed') return;
    this.state = 'refused';
    this.o.notice(`attach: ${why}; the run goes on here, no longer attached\n`);
    this.pending = [];
    for (const w of this.idleWaiters) w();
    if (this.timer) clearTimeout(this.timer);
    this.ws?.close();
  }

  /**
   * Waits until the server holds every event so far (or attaching stopped, or `timeoutMs`
   * passed); says whether it does.
   */
  async drain(timeoutMs: number): Promise<boolean> {
    if (this.pending.length > 0 && this.state !== 'refused') {
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, timeoutMs);
        function done() {
          clearTimeout(t);
          resolve();
        }
        this.idleWaiters.add(done);
      });
    }
    return this.acked >= this.lastSeq && this.state !== 'refused';
  }

  close(): void {
    this.state = 'closed';
    if (this.timer) clearTimeout(this.timer);
    if (this.paceTimer) clearTimeout(this.paceTimer);
    this.ws?.close(1000, 'the run has ended');
    this.ws = undefined;
  }
}
