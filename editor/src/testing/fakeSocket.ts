/**
 * Test helpers for the run-event feed: a socket the test plays the server of, and the frames a
 * server sends. Imported by tests only (never by the editor).
 */
import type { RunEvent } from '@switchboard/schemas';
import type { SocketLike } from '../run/eventsSocket.js';

/** A socket the test plays the server of: it opens, sends and closes when told. */
export class FakeSocket implements SocketLike {
  readyState = 0;
  /** Messages the client sent, parsed. */
  readonly sent: Array<Record<string, unknown>> = [];
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;

  send(data: string): void {
    this.sent.push(JSON.parse(data));
  }

  close(code = 1000, reason = ''): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }

  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }

  /** A message from the server. */
  push(msg: unknown): void {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
}

/** A log event of run `runId` at `seq`; `text` tells versions of one seq apart. */
export const ev = (seq: number, text = `e${seq}`, runId = 'r1'): RunEvent =>
  ({ runId, seq, ts: seq, type: 'log', level: 'info', text }) as RunEvent;

/** An `events` frame, with the durable watermark a provisional subscription gets. */
export const frame = (runId: string, events: RunEvent[], durable?: number) => ({
  type: 'events',
  runId,
  events,
  ...(durable === undefined ? {} : { durable }),
});
