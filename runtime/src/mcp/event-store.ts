/**
 * What makes a served flow's SSE streams resumable (MCP 2025-11-25, SEP-1699): the SDK's server
 * transport, given an event store, sends every POST stream a priming event (an id, the `retry`
 * delay, no data) to clients of 2025-11-25 or later, keeps each message it sends here, and answers
 * a GET with `Last-Event-ID` by replaying the rest of that stream. A flow call can last minutes;
 * when its stream drops (a proxy's idle timeout, a flaky network) the client reconnects and still
 * gets its progress and its answer, where before the answer was lost with the stream.
 *
 * One store per MCP session (the transport checks the session before replaying, so one client
 * never reads another's events), in memory, bounded: past `maxEvents` or `maxBytes` the oldest
 * events go, and a resume from an event no longer kept is refused (400) rather than replayed
 * with a gap. Event ids are a per-session counter; they name no stream and no data.
 */
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** Events kept per session, and their total size (bytes of JSON, about what was sent). */
export const EVENT_STORE_LIMITS = { maxEvents: 2000, maxBytes: 1024 * 1024 };

/** The `retry` delay (ms) a served flow's streams announce: how long a client waits to resume. */
export const SERVED_RETRY_MS = 1000;

interface Kept {
  streamId: string;
  message: JSONRPCMessage;
  bytes: number;
}

export class BoundedEventStore implements EventStore {
  private readonly events = new Map<string, Kept>();
  private next = 1;
  private bytes = 0;

  constructor(private readonly limits = EVENT_STORE_LIMITS) {}

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = String(this.next++);
    const bytes = Buffer.byteLength(JSON.stringify(message));
    this.events.set(id, { streamId, message, bytes });
    this.bytes += bytes;
    // Map order is insertion order: the first entry is the oldest. The newest always stays,
    // however large, so the answer just sent can still be replayed.
    for (const [old, e] of this.events) {
      if (this.events.size <= 1) break;
      if (this.events.size <= this.limits.maxEvents && this.bytes <= this.limits.maxBytes) break;
      this.events.delete(old);
      this.bytes -= e.bytes;
    }
    return id;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.events.get(eventId)?.streamId;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const last = this.events.get(lastEventId);
    if (!last) throw new Error(`event ${JSON.stringify(lastEventId.slice(0, 40))} is not kept`);
    let after = false;
    for (const [id, e] of [...this.events]) {
      if (id === lastEventId) after = true;
      else if (after && e.streamId === last.streamId) await send(id, e.message);
    }
    return last.streamId;
  }

  /** Events and bytes kept now (for tests). */
  get size(): { events: number; bytes: number } {
    return { events: this.events.size, bytes: this.bytes };
  }
}
