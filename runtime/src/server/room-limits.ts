/**
 * What a co-editing room refuses or bounds, so that one client cannot make the server hold
 * without limit or speak for it: buffered output of a client that does not read, the size of
 * the room's document, the size and rate of awareness updates, and awareness states that would
 * pass for the server's own (its save status).
 */
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';

export interface RoomLimits {
  /** Unsent bytes a connection may hold before it is dropped (it is not reading). Default 8 MiB. */
  maxBuffered: number;
  /** Largest encoded document a room accepts an update into. Default 16 MiB. */
  maxDocBytes: number;
  /** Largest awareness update accepted. Default 32 KiB. */
  maxAwarenessBytes: number;
  /** Awareness updates per second per connection (a burst of twice that). Default 20. */
  awarenessPerSecond: number;
}

export const DEFAULT_ROOM_LIMITS: RoomLimits = {
  maxBuffered: 8 * 1024 * 1024,
  maxDocBytes: 16 * 1024 * 1024,
  maxAwarenessBytes: 32 * 1024,
  awarenessPerSecond: 20,
};

/** Close codes a room uses (4000–4999 are the application's). */
export const CLOSE_TOO_LARGE = 4413;
export const CLOSE_SLOW = 4008;

/**
 * An awareness update as a client may send it: without a state for `serverId` (the server's own
 * awareness client) and without `statusField` in any state. Returns the update unchanged when
 * there was nothing to take out; throws on a malformed update.
 */
export function filterAwareness(update: Uint8Array, serverId: number, statusField: string): Uint8Array {
  const dec = decoding.createDecoder(update);
  const n = decoding.readVarUint(dec);
  const entries: Array<{ id: number; clock: number; json: string }> = [];
  let changed = false;
  for (let i = 0; i < n; i++) {
    const id = decoding.readVarUint(dec);
    const clock = decoding.readVarUint(dec);
    let json = decoding.readVarString(dec);
    if (id === serverId) {
      changed = true;
      continue;
    }
    if (json.includes(`"${statusField}"`)) {
      const state = JSON.parse(json) as unknown;
      if (state !== null && typeof state === 'object' && statusField in state) {
        const copy = { ...(state as Record<string, unknown>) };
        Reflect.deleteProperty(copy, statusField);
        json = JSON.stringify(copy);
        changed = true;
      }
    }
    entries.push({ id, clock, json });
  }
  if (!changed) return update;
  const enc = encoding.createEncoder();
  encoding.writeVarUint(enc, entries.length);
  for (const e of entries) {
    encoding.writeVarUint(enc, e.id);
    encoding.writeVarUint(enc, e.clock);
    encoding.writeVarString(enc, e.json);
  }
  return encoding.toUint8Array(enc);
}

/** A token bucket: `perSecond` refill, `2 × perSecond` capacity. */
export class RateBucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly perSecond: number,
    now: number = Date.now(),
  ) {
    this.tokens = perSecond * 2;
    this.at = now;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.perSecond * 2, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
  }

  /** Takes a token if there is one. */
  take(now: number = Date.now()): boolean {
    this.refill(now);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Milliseconds until a token is there. */
  waitMs(now: number = Date.now()): number {
    this.refill(now);
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) / this.perSecond) * 1000);
  }
}
