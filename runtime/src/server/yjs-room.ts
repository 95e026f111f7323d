/**
 * A small Yjs room server on y-protocols (sync + awareness), one room per flow. It speaks the
 * y-websocket wire protocol, so the editor's `WebsocketProvider` connects to
 * `ws://HOST/api/yjs/<flowId>`. Rooms live while someone is connected, plus a grace period.
 * What a room holds is loaded and saved through hooks (the server's are in room-persistence.ts):
 * a save runs a quiet moment after the last change (and at least every `saveMaxDelayMs` while
 * changes keep coming), when the last client leaves, and on shutdown; saves of one room never
 * overlap. Limits (room-limits.ts): a client that does not read is dropped, an update that would
 * take the document past its size limit is refused (close 4413, with the limit in the reason),
 * awareness updates are bounded in size and rate, and no client can set the server's status.
 */

import { ROOM_STATUS_FIELD } from '@switchboard/schemas/ydoc';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import type { WebSocket } from 'ws';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import {
  CLOSE_TOO_LARGE,
  DEFAULT_ROOM_LIMITS,
  filterAwareness,
  RateBucket,
  type RoomLimits,
} from './room-limits.js';

const MESSAGE_SYNC = 0;
const MESSAGE_AWARENESS = 1;
const MESSAGE_QUERY_AWARENESS = 3;

export interface RoomHooks {
  /** Called once when a room is created, to seed its document (e.g. from the stored flow). */
  load?: (name: string, doc: Y.Doc) => void | Promise<void>;
  /** Called (debounced) after updates, to persist the document. */
  save?: (name: string, doc: Y.Doc) => void | Promise<void>;
  /** Quiet time after the last change before a save. Default 2 s. */
  saveDelayMs?: number;
  /** Longest a stream of changes waits for a save. Default 10 s. */
  saveMaxDelayMs?: number;
  /** How long an empty room is kept. Default 30 s. */
  idleMs?: number;
  /** A load or save that failed (logged by the caller; the room keeps its document). */
  onError?: (name: string, op: 'load' | 'save', err: unknown) => void;
  /** Bounds on what clients make a room hold (defaults in room-limits.ts). */
  limits?: Partial<RoomLimits>;
  /** Awareness field only the server may set (clients' values are taken out). Default `roomStatus`. */
  serverField?: string;
}

/** One connection: the awareness client ids it controls and its awareness rate. */
interface Conn {
  ids: Set<number>;
  bucket: RateBucket;
  /** The latest awareness update held back by the rate limit (applied when it allows). */
  held?: Uint8Array;
  heldTimer?: NodeJS.Timeout;
}

class Room {
  readonly doc = new Y.Doc({ gc: true });
  readonly awareness = new awarenessProtocol.Awareness(this.doc);
  readonly conns = new Map<WebSocket, Conn>();
  /** The encoded document's size, measured at load and after refusals, plus updates since. */
  docBytes = 0;
  idleTimer: NodeJS.Timeout | undefined;
  private saveTimer: NodeJS.Timeout | undefined;
  /** When the oldest unsaved change and the newest one happened (ms). */
  private firstChange = 0;
  private lastChange = 0;
  /** The save running now (saves of one room are chained, never concurrent). */
  private saving: Promise<void> = Promise.resolve();
  readonly ready: Promise<void>;
  /** The connection whose update changed the document last (names the author of a save). */
  lastWriter: WebSocket | undefined;
  /** Its display name when it wrote (it may have left by the time the room is saved). */
  lastWriterName: string | undefined;
  readonly limits: RoomLimits;

  constructor(
    readonly name: string,
    private readonly hooks: RoomHooks,
  ) {
    this.limits = { ...DEFAULT_ROOM_LIMITS, ...hooks.limits };
    this.awareness.setLocalState(null);
    this.ready = Promise.resolve()
      .then(() => hooks.load?.(name, this.doc))
      .then(() => {
        this.docBytes = Y.encodeStateAsUpdate(this.doc).byteLength;
      });
    this.ready.catch((err) => hooks.onError?.(name, 'load', err));
    this.doc.on('update', (update: Uint8Array, origin: unknown) => {
      const enc = encoding.createEncoder();
      encoding.writeVarUint(enc, MESSAGE_SYNC);
      syncProtocol.writeUpdate(enc, update);
      const msg = encoding.toUint8Array(enc);
      for (const c of this.conns.keys()) if (c !== origin) send(c, msg, this.limits.maxBuffered);
      this.docBytes += update.byteLength;
      if (this.conns.has(origin as WebSocket)) {
        this.lastWriter = origin as WebSocket;
        this.lastWriterName = this.nameOf(origin as WebSocket) ?? this.lastWriterName;
      }
      this.scheduleSave();
    });
    this.awareness.on(
      'update',
      (
        { added, updated, removed }: { added: number[]; updated: number[]; removed: number[] },
        origin: unknown,
      ) => {
        const changed = added.concat(updated, removed);
        const ids = this.conns.get(origin as WebSocket)?.ids;
        if (ids) {
          for (const id of added) ids.add(id);
          for (const id of removed) ids.delete(id);
        }
        const enc = encoding.createEncoder();
        encoding.writeVarUint(enc, MESSAGE_AWARENESS);
        encoding.writeVarUint8Array(enc, awarenessProtocol.encodeAwarenessUpdate(this.awareness, changed));
        const msg = encoding.toUint8Array(enc);
        for (const c of this.conns.keys()) send(c, msg, this.limits.maxBuffered);
      },
    );
  }

  /** The display name (awareness `user.name`) a connection gave itself, if it is connected. */
  nameOf(ws: WebSocket): string | undefined {
    for (const id of this.conns.get(ws)?.ids ?? []) {
      const user = (this.awareness.getStates().get(id) as { user?: { name?: unknown } } | undefined)?.user;
      if (typeof user?.name === 'string') return user.name;
    }
    return undefined;
  }

  /** Whether changes wait for a save. */
  get pending(): boolean {
    return this.saveTimer !== undefined;
  }

  private scheduleSave(): void {
    if (!this.hooks.save) return;
    const now = Date.now();
    this.lastChange = now;
    if (this.saveTimer) return;
    this.firstChange = now;
    this.arm(this.hooks.saveDelayMs ?? 2000);
  }

  /** One timer per room, re-armed until changes have paused (or waited too long). */
  private arm(ms: number): void {
    this.saveTimer = setTimeout(() => {
      const delay = this.hooks.saveDelayMs ?? 2000;
      const now = Date.now();
      const quietFor = now - this.lastChange;
      const waited = now - this.firstChange;
      const maxWait = this.hooks.saveMaxDelayMs ?? 10_000;
      if (quietFor < delay && waited < maxWait) return this.arm(Math.min(delay - quietFor, maxWait - waited));
      this.saveTimer = undefined;
      void this.runSave();
    }, ms);
    this.saveTimer.unref();
  }

  private runSave(): Promise<void> {
    const hooks = this.hooks;
    this.saving = this.saving
      .then(() => this.ready)
      .then(() => hooks.save?.(this.name, this.doc))
      .catch((err) => hooks.onError?.(this.name, 'save', err));
    return this.saving;
  }

  /** Saves now if changes are pending; resolves once no save of this room is running. */
  flush(): Promise<void> {
    if (this.saveTimer) {
      clearTimeout(this.saveTimer);
      this.saveTimer = undefined;
      return this.runSave();
    }
    return this.saving;
  }

  /** Saves now whether or not changes are pending (a room whose saving moved to this server). */
  saveNow(): Promise<void> {
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    return this.runSave();
  }

  /** Forgets pending changes (the room is being discarded); resolves once no save is running. */
  dropPending(): Promise<void> {
    if (this.saveTimer) {
      clearTimeout(this.saveTimer);
      this.saveTimer = undefined;
    }
    return this.saving;
  }
}

/**
 * Sends, unless the connection already holds more than `maxBuffered` unsent: then it has not
 * been reading, and it is dropped (terminated: a close frame would only queue behind the rest).
 */
function send(ws: WebSocket, msg: Uint8Array, maxBuffered: number): void {
  if (ws.readyState !== ws.OPEN) return;
  if (ws.bufferedAmount > maxBuffered) {
    slowDrops++;
    ws.terminate();
    return;
  }
  ws.send(msg, { binary: true }, (err) => {
    if (err) ws.terminate();
  });
}

/** Connections dropped for not reading, since the process started (tests, diagnostics). */
let slowDrops = 0;
export const roomStats = {
  get slowDrops(): number {
    return slowDrops;
  },
};

export class YjsRooms {
  private readonly rooms = new Map<string, Room>();

  constructor(private readonly hooks: RoomHooks = {}) {}

  get size(): number {
    return this.rooms.size;
  }

  private room(name: string): Room {
    let r = this.rooms.get(name);
    if (!r) {
      r = new Room(name, this.hooks);
      this.rooms.set(name, r);
    }
    if (r.idleTimer) {
      clearTimeout(r.idleTimer);
      r.idleTimer = undefined;
    }
    return r;
  }

  /** The room's document (tests, persistence). */
  docOf(name: string): Y.Doc | undefined {
    return this.rooms.get(name)?.doc;
  }

  /** The open room's document once it has loaded; undefined when no room is open. */
  async loaded(name: string): Promise<Y.Doc | undefined> {
    const room = this.rooms.get(name);
    if (!room) return undefined;
    await room.ready;
    return this.rooms.get(name) === room ? room.doc : undefined;
  }

  /**
   * Sets the server's own awareness state in the room of `doc` (e.g. what its save found); every
   * client sees it with the editors' states. Ignored when that room is gone.
   */
  announce(name: string, doc: Y.Doc, state: Record<string, unknown>): void {
    const room = this.rooms.get(name);
    if (room?.doc === doc) room.awareness.setLocalState(state);
  }

  /** The open room's awareness (a relay to other server instances, redis/room-relay.ts). */
  awarenessOf(name: string): awarenessProtocol.Awareness | undefined {
    return this.rooms.get(name)?.awareness;
  }

  /** Saves the open room now, changed or not (its saving moved to this server). */
  async saveNow(name: string): Promise<void> {
    await this.rooms.get(name)?.saveNow();
  }

  /** Whether the room has changes waiting for their save. */
  pending(name: string): boolean {
    return this.rooms.get(name)?.pending ?? false;
  }

  /** Saves the room's pending changes now; resolves when its saves have ended. */
  async flush(name: string): Promise<void> {
    await this.rooms.get(name)?.flush();
  }

  /**
   * The display name (awareness `user.name`) of whoever changed the room's document last: as it
   * is now while they are connected, else as it was when they wrote; undefined when unnamed.
   */
  lastEditorName(name: string): string | undefined {
    const room = this.rooms.get(name);
    if (!room) return undefined;
    return (room.lastWriter && room.nameOf(room.lastWriter)) ?? room.lastWriterName;
  }

  /**
   * Closes the room for everyone in it with `code` and `reason` and drops it unsaved (its flow
   * was deleted). A save already running finishes first; pending changes are forgotten.
   */
  async discard(name: string, code: number, reason: string): Promise<void> {
    const room = this.rooms.get(name);
    if (!room) return;
    this.rooms.delete(name);
    if (room.idleTimer) clearTimeout(room.idleTimer);
    for (const ws of room.conns.keys()) ws.close(code, reason);
    await room.dropPending();
    room.doc.destroy();
  }

  async attach(ws: WebSocket, name: string): Promise<void> {
    const room = this.room(name);
    const max = room.limits.maxBuffered;
    ws.binaryType = 'arraybuffer';
    room.conns.set(ws, { ids: new Set(), bucket: new RateBucket(room.limits.awarenessPerSecond) });
    // Messages that arrive while the room loads are queued, not lost.
    const queue: Uint8Array[] = [];
    let loaded = false;
    ws.on('message', (data: ArrayBuffer | Buffer, isBinary: boolean) => {
      if (!isBinary) return void ws.close(4400, 'Yjs messages are binary');
      const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data);
      if (loaded) this.onMessage(room, ws, bytes);
      else queue.push(bytes);
    });
    ws.on('close', () => this.leave(room, ws));
    ws.on('error', () => this.leave(room, ws));
    try {
      await room.ready;
    } catch {
      // Reported through onError; a client must not seed (and so overwrite) a room that failed to load.
      ws.close(1011, 'the room could not be loaded');
      return;
    }
    loaded = true;
    // Sync step 1 and the current awareness states, as y-websocket's server does.
    const enc = encoding.createEncoder();
    encoding.writeVarUint(enc, MESSAGE_SYNC);
    syncProtocol.writeSyncStep1(enc, room.doc);
    send(ws, encoding.toUint8Array(enc), max);
    const states = room.awareness.getStates();
    if (states.size > 0) {
      const a = encoding.createEncoder();
      encoding.writeVarUint(a, MESSAGE_AWARENESS);
      encoding.writeVarUint8Array(
        a,
        awarenessProtocol.encodeAwarenessUpdate(room.awareness, [...states.keys()]),
      );
      send(ws, encoding.toUint8Array(a), max);
    }
    for (const m of queue.splice(0)) this.onMessage(room, ws, m);
  }

  /**
   * Whether an update of `size` bytes may go into the room's document. The running estimate
   * (updates add up, deletions are not subtracted) is measured again before refusing.
   */
  private fits(room: Room, size: number): boolean {
    const limit = room.limits.maxDocBytes;
    if (room.docBytes + size <= limit) return true;
    room.docBytes = Y.encodeStateAsUpdate(room.doc).byteLength;
    return room.docBytes + size <= limit;
  }

  private onMessage(room: Room, ws: WebSocket, bytes: Uint8Array): void {
    const max = room.limits.maxBuffered;
    try {
      const dec = decoding.createDecoder(bytes);
      const enc = encoding.createEncoder();
      const type = decoding.readVarUint(dec);
      switch (type) {
        case MESSAGE_SYNC: {
          // Step 2 and updates change the document; step 1 only asks for what is missing.
          const sub = decoding.peekVarUint(dec);
          if (sub !== syncProtocol.messageYjsSyncStep1 && !this.fits(room, bytes.byteLength)) {
            this.tooLarge(room, ws);
            return;
          }
          encoding.writeVarUint(enc, MESSAGE_SYNC);
          syncProtocol.readSyncMessage(dec, enc, room.doc, ws, () => {
            // y-protocols would only log a bad update; the sender is broken or hostile.
            ws.close(4400, 'malformed Yjs update');
          });
          // Only a reply to sync step 1 has content beyond the message type.
          if (encoding.length(enc) > 1) send(ws, encoding.toUint8Array(enc), max);
          break;
        }
        case MESSAGE_AWARENESS: {
          const update = decoding.readVarUint8Array(dec);
          if (update.byteLength > room.limits.maxAwarenessBytes) {
            ws.close(
              CLOSE_TOO_LARGE,
              `awareness update of ${update.byteLength} bytes refused: the limit is ${room.limits.maxAwarenessBytes}`,
            );
            return;
          }
          this.awarenessFrom(room, ws, update);
          break;
        }
        case MESSAGE_QUERY_AWARENESS: {
          encoding.writeVarUint(enc, MESSAGE_AWARENESS);
          encoding.writeVarUint8Array(
            enc,
            awarenessProtocol.encodeAwarenessUpdate(room.awareness, [...room.awareness.getStates().keys()]),
          );
          send(ws, encoding.toUint8Array(enc), max);
          break;
        }
        default:
          ws.close(4400, 'unknown Yjs message type');
      }
    } catch {
      // A malformed update must not take the room down; drop the connection that sent it.
      ws.close(4400, 'malformed Yjs message');
    }
  }

  private tooLarge(room: Room, ws: WebSocket): void {
    this.refusals++;
    ws.close(
      CLOSE_TOO_LARGE,
      `the room's document would pass its limit of ${room.limits.maxDocBytes} bytes; the change was refused`,
    );
  }

  /** Updates refused because the document would have passed its size limit (tests). */
  refusals = 0;

  /**
   * Applies a client's awareness update within the rate limit: over it, the latest update waits
   * for the next token (earlier held ones are superseded: awareness is state, not a log).
   */
  private awarenessFrom(room: Room, ws: WebSocket, update: Uint8Array): void {
    const conn = room.conns.get(ws);
    if (!conn) return;
    const clean = filterAwareness(
      update,
      room.awareness.clientID,
      this.hooks.serverField ?? ROOM_STATUS_FIELD,
    );
    if (conn.bucket.take()) {
      awarenessProtocol.applyAwarenessUpdate(room.awareness, clean, ws);
      return;
    }
    conn.held = clean;
    if (conn.heldTimer) return;
    conn.heldTimer = setTimeout(() => {
      conn.heldTimer = undefined;
      const held = conn.held;
      conn.held = undefined;
      if (held && room.conns.get(ws) === conn) this.awarenessFrom(room, ws, held);
    }, conn.bucket.waitMs());
    conn.heldTimer.unref();
  }

  private leave(room: Room, ws: WebSocket): void {
    const conn = room.conns.get(ws);
    if (!conn) return;
    room.conns.delete(ws);
    if (conn.heldTimer) clearTimeout(conn.heldTimer);
    awarenessProtocol.removeAwarenessStates(room.awareness, [...conn.ids], null);
    if (room.conns.size === 0 && this.rooms.get(room.name) === room) {
      // The last one out: save now rather than a moment later.
      void room.flush();
      this.armIdle(room);
    }
  }

  /**
   * Drops the empty room after the idle time, once its changes are saved; changes that came
   * meanwhile (a REST write, or other server instances' editors) keep it another idle time.
   */
  private armIdle(room: Room): void {
    room.idleTimer = setTimeout(() => {
      void room.flush().then(() => {
        if (room.conns.size !== 0 || this.rooms.get(room.name) !== room) return;
        if (room.pending) return this.armIdle(room);
        this.rooms.delete(room.name);
        room.doc.destroy();
      });
    }, this.hooks.idleMs ?? 30_000);
    room.idleTimer.unref();
  }

  /** Saves every room's pending changes, closes every connection and drops the rooms. */
  async closeAll(): Promise<void> {
    const rooms = [...this.rooms.values()];
    this.rooms.clear();
    for (const room of rooms) {
      if (room.idleTimer) clearTimeout(room.idleTimer);
      for (const ws of room.conns.keys()) ws.close(1001, 'server shutting down');
    }
    await Promise.all(rooms.map((room) => room.flush()));
    for (const room of rooms) room.doc.destroy();
  }
}
