/**
 * The battery's provisional watcher: a WebSocket client that subscribes with
 * `provisional: true`, so it gets events as soon as the server has written them (before they
 * are synced), with the durable seq in each frame and `durable` notices. It does what the
 * editor does: after a restart it reconnects and resubscribes each run after the durable seq
 * it was told, and the events re-sent after that replace what it held above it.
 *
 * It keeps per run its view (every event, by seq), the highest durable seq it was told, and a
 * copy of every event as it was when that seq first covered it (those must never change).
 */
import type { RunEvent } from '@switchboard/schemas';
import WebSocket from 'ws';
import type { WsMessage as Msg } from '../server/helpers.js';

export interface ProvisionalRun {
  /** Held events, index seq − 1: what was received, re-sent ones replacing what was held. */
  events: RunEvent[];
  /** The highest durable seq told (frames' `durable`, `durable` notices). */
  durable: number;
  /** Events as received (JSON), index seq − 1, taken once the durable seq told covered them. */
  confirmed: string[];
  /** The seq expected next on the current connection: its subscribe's `after` + 1, then on. */
  next: number;
}

const FINAL = /^run\.(completed|failed|cancelled|interrupted)$/;

export class ProvisionalWatcher {
  readonly runs = new Map<string, ProvisionalRun>();
  readonly problems: string[] = [];
  /** Events received, re-sent ones included. */
  received = 0;
  /** Of them, received above the durable seq told then (not known to be on disk yet). */
  ahead = 0;
  /** Of them, re-sent after a reconnect over an event held already. */
  resent = 0;
  /** Of the re-sent ones, those whose content differed from what was held. */
  superseded = 0;
  private ws: WebSocket | undefined;

  /** Connects to a server process (the previous connection, if any, must be closed). */
  open(port: number): Promise<void> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/ws`, { origin: `http://127.0.0.1:${port}` });
    this.ws = ws;
    ws.on('message', (data) => {
      if (ws === this.ws) this.onMessage(JSON.parse(String(data)) as Msg);
    });
    // A killed server resets the connection: that is expected.
    ws.on('error', () => {});
    return new Promise((res, rej) => {
      ws.once('open', () => res());
      ws.once('error', rej);
      ws.once('unexpected-response', (_req, r) => rej(new Error(`upgrade refused: ${r.statusCode}`)));
    });
  }

  /** Every run of the flow, each known one after the durable seq it was told (as the editor does). */
  subscribeFlow(flowId: string): void {
    const after: Record<string, number> = {};
    for (const [id, r] of this.runs) {
      after[id] = r.durable;
      r.next = r.durable + 1;
    }
    this.ws!.send(JSON.stringify({ type: 'subscribe', flowId, after, provisional: true }));
  }

  /** One run, after the durable seq told (0 for a run it has not heard of). */
  subscribeRun(runId: string): void {
    const r = this.run(runId);
    r.next = r.durable + 1;
    this.ws!.send(JSON.stringify({ type: 'subscribe', runId, after: r.durable, provisional: true }));
  }

  /** Events held above the durable seq told, over all runs. */
  heldAboveDurable(): number {
    let n = 0;
    for (const r of this.runs.values()) n += Math.max(0, r.events.length - r.durable);
    return n;
  }

  /**
   * Whether the run's view is settled: everything held came on this connection, it ends with
   * the run's final event, and all of it was told durable.
   */
  settled(runId: string): boolean {
    const r = this.runs.get(runId);
    if (!r || r.events.length === 0) return false;
    return (
      r.next - 1 === r.events.length && r.durable >= r.events.length && FINAL.test(r.events.at(-1)!.type)
    );
  }

  close(): Promise<void> {
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((r) => {
      ws.once('close', () => r());
      ws.close();
    });
  }

  private run(runId: string): ProvisionalRun {
    let r = this.runs.get(runId);
    if (!r) {
      r = { events: [], durable: 0, confirmed: [], next: 1 };
      this.runs.set(runId, r);
    }
    return r;
  }

  private onMessage(msg: Msg): void {
    if (msg.type === 'events') {
      const r = this.run(msg.runId!);
      for (const e of msg.events!) {
        if (e.seq !== r.next) {
          this.problems.push(`${msg.runId}: got seq ${e.seq}, expected ${r.next}`);
          continue;
        }
        this.received++;
        if (e.seq > r.durable) this.ahead++;
        const held = r.events[e.seq - 1];
        if (held) {
          this.resent++;
          if (JSON.stringify(held) !== JSON.stringify(e)) this.superseded++;
        }
        r.events[e.seq - 1] = e;
        r.next++;
      }
      if (typeof msg.durable !== 'number') this.problems.push(`${msg.runId}: a frame without "durable"`);
      else this.told(r, msg.durable);
    } else if (msg.type === 'durable') {
      this.told(this.run(msg.runId!), msg.seq!);
    } else if (msg.type === 'error') this.problems.push(`error ${msg.code}: ${msg.message}`);
  }

  /**
   * A durable seq told: the events it covers that came on this connection (or were held
   * through its subscribe's `after`) are on disk, and are kept as they were.
   */
  private told(r: ProvisionalRun, durable: number): void {
    r.durable = Math.max(r.durable, durable);
    const through = Math.min(r.durable, r.next - 1);
    while (r.confirmed.length < through) r.confirmed.push(JSON.stringify(r.events[r.confirmed.length]));
  }
}
