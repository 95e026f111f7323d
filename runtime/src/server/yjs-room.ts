/**
 * A small Yjs room server on y-protocols (sync + awareness), one room per flow. It speaks the
 * y-websocket wire protocol, so the editor's `WebsocketProvider` connects to
 * `ws://HOST/api/yjs/<flowId>`. Rooms live while someone is connected, plus a grace period.
 */
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import type { WebSocket } from 'ws';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';

const MESSAGE_SYNC = 0;
const MESSAGE_AWARENESS = 1;
const MESSAGE_QUERY_AWARENESS = 3;

export interface RoomHooks {
  /** Called once when a room is created, to seed its document (e.g. from the stored flow). */
  load?: (name: string, doc: Y.Doc) => void | Promise<void>;
  /** Called (debounced) after updates, to persist the document. */
  save?: (name: string, doc: Y.Doc) => void | Promise<void>;
  saveDelayMs?: number;
  /** How long an empty room is kept. Default 30 s. */
  idleMs?: number;
}

class Room {
  readonly doc = new Y.Doc({ gc: true });
  readonly awareness = new awarenessProtocol.Awareness(this.doc);
  /** Each connection and the awareness client ids it controls. */
  readonly conns = new Map<WebSocket, Set<number>>();
  idleTimer: NodeJS.Timeout | undefined;
  saveTimer: NodeJS.Timeout | undefined;
  ready: Promise<void>;

  constructor(
    readonly name: string,
    private readonly hooks: RoomHooks,
  ) {
    this.awareness.setLocalState(null);
    this.ready = Promise.resolve(hooks.load?.(name, this.doc));
    this.doc.on('update', (update: Uint8Array, origin: unknown) => {
      const enc = encoding.createEncoder();
      encoding.writeVarUint(enc, MESSAGE_SYNC);
      syncProtocol.writeUpdate(enc, update);
      const msg = encoding.toUint8Array(enc);
      for (const c of this.conns.keys()) if (c !== origin) send(c, msg);
      this.scheduleSave();
    });
    this.awareness.on(
      'update',
      (
        { added, updated, removed }: { added: number[]; updated: number[]; removed: number[] },
        origin: unknown,
      ) => {
        const changed = added.concat(updated, removed);
        const ids = this.conns.get(origin as WebSocket);
        if (ids) {
          for (const id of added) ids.add(id);
          for (const id of removed) ids.delete(id);
        }
        const enc = encoding.createEncoder();
        encoding.writeVarUint(enc, MESSAGE_AWARENESS);
        encoding.writeVarUint8Array(enc, awarenessProtocol.encodeAwarenessUpdate(this.awareness, changed));
        const msg = encoding.toUint8Array(enc);
        for (const c of this.conns.keys()) send(c, msg);
      },
    );
  }

  private scheduleSave(): void {
    if (!this.hooks.save || this.saveTimer) return;
    this.saveTimer = setTimeout(() => {
      this.saveTimer = undefined;
      void Promise.resolve(this.hooks.save?.(this.name, this.doc)).catch(() => {});
    }, this.hooks.saveDelayMs ?? 500);
    this.saveTimer.unref();
  }

  flushSave(): void {
    if (this.saveTimer) {
      clearTimeout(this.saveTimer);
      this.saveTimer = undefined;
      void Promise.resolve(this.hooks.save?.(this.name, this.doc)).catch(() => {});
    }
  }
}

function send(ws: WebSocket, msg: Uint8Array): void {
  if (ws.readyState !== ws.OPEN) return;
  ws.send(msg, { binary: true }, (err) => {
    if (err) ws.terminate();
  });
}

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

  async attach(ws: WebSocket, name: string): Promise<void> {
    const room = this.room(name);
    ws.binaryType = 'arraybuffer';
    room.conns.set(ws, new Set());
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
    await room.ready;
    loaded = true;
    // Sync step 1 and the current awareness states, as y-websocket's server does.
    const enc = encoding.createEncoder();
    encoding.writeVarUint(enc, MESSAGE_SYNC);
    syncProtocol.writeSyncStep1(enc, room.doc);
    send(ws, encoding.toUint8Array(enc));
    const states = room.awareness.getStates();
    if (states.size > 0) {
      const a = encoding.createEncoder();
      encoding.writeVarUint(a, MESSAGE_AWARENESS);
      encoding.writeVarUint8Array(
        a,
        awarenessProtocol.encodeAwarenessUpdate(room.awareness, [...states.keys()]),
      );
      send(ws, encoding.toUint8Array(a));
    }
    for (const m of queue.splice(0)) this.onMessage(room, ws, m);
  }

  private onMessage(room: Room, ws: WebSocket, bytes: Uint8Array): void {
    try {
      const dec = decoding.createDecoder(bytes);
      const enc = encoding.createEncoder();
      const type = decoding.readVarUint(dec);
      switch (type) {
        case MESSAGE_SYNC:
          encoding.writeVarUint(enc, MESSAGE_SYNC);
          syncProtocol.readSyncMessage(dec, enc, room.doc, ws, () => {
            // y-protocols would only log a bad update; the sender is broken or hostile.
            ws.close(4400, 'malformed Yjs update');
          });
          // Only a reply to sync step 1 has content beyond the message type.
          if (encoding.length(enc) > 1) send(ws, encoding.toUint8Array(enc));
          break;
        case MESSAGE_AWARENESS:
          awarenessProtocol.applyAwarenessUpdate(room.awareness, decoding.readVarUint8Array(dec), ws);
          break;
        case MESSAGE_QUERY_AWARENESS: {
          encoding.writeVarUint(enc, MESSAGE_AWARENESS);
          encoding.writeVarUint8Array(
            enc,
            awarenessProtocol.encodeAwarenessUpdate(room.awareness, [...room.awareness.getStates().keys()]),
          );
          send(ws, encoding.toUint8Array(enc));
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

  private leave(room: Room, ws: WebSocket): void {
    const ids = room.conns.get(ws);
    if (!ids) return;
    room.conns.delete(ws);
    awarenessProtocol.removeAwarenessStates(room.awareness, [...ids], null);
    if (room.conns.size === 0) {
      room.flushSave();
      room.idleTimer = setTimeout(() => {
        if (room.conns.size === 0) {
          room.doc.destroy();
          this.rooms.delete(room.name);
        }
      }, this.hooks.idleMs ?? 30_000);
      room.idleTimer.unref();
    }
  }

  closeAll(): void {
    for (const room of this.rooms.values()) {
      room.flushSave();
      if (room.idleTimer) clearTimeout(room.idleTimer);
      for (const ws of room.conns.keys()) ws.close(1001, 'server shutting down');
      room.doc.destroy();
    }
    this.rooms.clear();
  }
}
