/**
 * Co-editing one flow across server instances (scale-out), after Hocuspocus's Redis extension
 * and y-redis: every instance that has a room open keeps its own Y.Doc and relays what changes
 * in it through Redis.
 *
 * - Document updates go to the room's stream `<prefix>:room:<id>:log` (durable: a late joiner
 *   reads it) and, for speed, to the room's pub/sub channel; every instance applies what others
 *   wrote (Yjs updates commute and repeat harmlessly, so order and duplicates do not matter).
 *   A poll of the stream after the last entry read catches what pub/sub lost in a reconnection.
 * - The stream is compacted by the room's owner into a snapshot (`:snap`, the entry id it
 *   covers and the merged state) and trimmed, atomically, so the two always hold the whole state.
 * - Awareness (cursors, selections, names) goes through pub/sub only (it is state, not history);
 *   an instance opening a room asks the others for theirs.
 * - One instance owns each room: a lock `:owner` with a TTL that the owner renews. Only the
 *   owner saves the room to the catalog (room-persistence.ts) and its status is the one relayed;
 *   when it dies or closes the room, another instance with the room open takes the lock within a
 *   TTL and saves at once.
 * - A room's Yjs history is the Redis state here, not a file per instance (`history()`).
 */
import { randomBytes } from 'node:crypto';
import { LOAD, ROOM_STATUS_FIELD } from '@switchboard/schemas/ydoc';
import { Redis } from 'ioredis';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as Y from 'yjs';
import type { RoomHistory } from '../server/room-persistence.js';
import type { RoomHooks, YjsRooms } from '../server/yjs-room.js';
import { quiet } from './keys.js';

/** Transaction origin of what another instance wrote (never relayed back). */
export const REMOTE = Symbol('switchboard-remote');

const MSG_UPDATE = 0;
const MSG_AWARENESS = 1;
const MSG_QUERY = 2;
/** Asks the owner to save the room now (a read or run start on another instance waits for it). */
const MSG_SAVE = 3;

export interface RoomRelayOptions {
  url: string;
  prefix: string;
  /** Owner lock lifetime; renewed every third of it. Default 3 s. */
  lockMs?: number;
  /** How often open rooms poll their stream and the lock is renewed or tried. Default 1 s. */
  tickMs?: number;
  /** Stream entries past which the owner compacts at its next save. Default 200. */
  compactAt?: number;
  log?: { warn(obj: object, msg: string): void };
}

interface Open {
  name: string;
  doc: Y.Doc;
  awareness?: awarenessProtocol.Awareness;
  owner: boolean;
  /** The last stream entry applied here (`0-0`: none). */
  cursor: string;
  /** Updates made here not yet in Redis (kept across failures, sent merged). */
  outbox: Uint8Array[];
  sending?: Promise<void>;
  /** What Redis held at load (handed to room-persistence as the history). */
  loaded?: Uint8Array;
  started: boolean;
  closed: boolean;
}

/** Renews the lock only while it is still ours. */
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
/** Replaces the snapshot and trims what it covers, unless another compaction came first. */
const COMPACT = `
local prev = redis.call('HGET', KEYS[1], 'id') or ''
if prev ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'id', ARGV[2], 'data', ARGV[3])
redis.call('XTRIM', KEYS[2], 'MINID', ARGV[4])
return 1`;

/** `a` after `b` (stream entry ids `ms-seq`). */
function after(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am > bm || (am === bm && as > bs);
}
const nextId = (id: string) => {
  const [ms, seq] = id.split('-');
  return `${ms}-${BigInt(seq!) + 1n}`;
};

type Entry = [id: Buffer, fields: Buffer[]];

export class RoomRelay {
  readonly instance = randomBytes(8);
  private readonly tag = this.instance.toString('hex');
  private readonly redis: Redis;
  private readonly sub: Redis;
  private readonly open = new Map<string, Open>();
  private rooms: YjsRooms | undefined;
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly lockMs: number;
  private closing = false;
  /** Rooms being closed (their last updates sent and locks released before the relay quits). */
  private readonly closings = new Set<Promise<void>>();

  constructor(private readonly o: RoomRelayOptions) {
    this.lockMs = o.lockMs ?? 3000;
    const warn = (e: Error) => o.log?.warn({ err: String(e) }, 'co-editing relay: Redis connection error');
    this.redis = quiet(new Redis(o.url, { maxRetriesPerRequest: null }), warn);
    this.sub = quiet(new Redis(o.url, { maxRetriesPerRequest: null }), warn);
    this.sub.on('messageBuffer', (channel: Buffer, message: Buffer) => this.onMessage(channel, message));
    this.timer = setInterval(() => this.tick(), o.tickMs ?? Math.min(1000, this.lockMs / 3));
    this.timer.unref();
  }

  private key(name: string, what: 'log' | 'snap' | 'owner'): string {
    return `${this.o.prefix}:room:${name}:${what}`;
  }
  private channel(name: string): string {
    return `${this.o.prefix}:room:${name}`;
  }

  attach(rooms: YjsRooms): void {
    this.rooms = rooms;
  }

  /** Whether this instance saves room `name` now. */
  owns(name: string): boolean {
    return this.open.get(name)?.owner === true;
  }

  /** The instance that holds the lock of room `name` (tests, diagnostics), as hex. */
  async ownerOf(name: string): Promise<string | null> {
    return this.redis.get(this.key(name, 'owner'));
  }

  get id(): string {
    return this.tag;
  }

  /**
   * Room hooks around room-persistence's: the room opens on what Redis holds (or, when Redis
   * holds nothing, on the catalog as before) and only the owner saves.
   */
  hooks(inner: RoomHooks): RoomHooks {
    return {
      ...inner,
      load: async (name, doc) => {
        await this.opening(name, doc);
        await inner.load?.(name, doc);
        await this.started(name, doc);
      },
      save: (name, doc) => (this.owns(name) ? inner.save?.(name, doc) : undefined),
    };
  }

  /** The Yjs history of rooms, for room-persistence: Redis's state (files are not shared). */
  history(): RoomHistory {
    return {
      read: async (name) => this.open.get(name)?.loaded,
      // The stream is the history already; the owner's save is the moment to compact it.
      write: async (name) => this.compact(name),
      remove: async (name) => {
        await this.redis.del(this.key(name, 'log'), this.key(name, 'snap'));
      },
      file: (name) => `redis ${this.key(name, 'log')}`,
    };
  }

  /**
   * What a REST read, write or run start on this instance waits for: the owner saves the
   * room's pending changes at once. Here that is a local flush; elsewhere this instance sends
   * its own changes, asks the owner to save, and waits (at most `waitMs`) until its catalog
   * holds what its room holds (`settled`: the owner's save, adopted through flow-sync.ts).
   */
  async settle(name: string, settled: (doc: Y.Doc) => boolean, waitMs = 5000): Promise<void> {
    const o = this.open.get(name);
    if (!o?.started || o.owner) return this.rooms?.flush(name);
    if (settled(o.doc)) return;
    await this.flush(o);
    await this.publish(name, MSG_SAVE, new Uint8Array());
    const end = Date.now() + waitMs;
    while (!o.closed && !settled(o.doc) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  }

  private async opening(name: string, doc: Y.Doc): Promise<void> {
    const o: Open = { name, doc, owner: false, cursor: '0-0', outbox: [], started: false, closed: false };
    this.open.set(name, o);
    doc.once('destroy', () => {
      const p = this.closeRoom(o);
      this.closings.add(p);
      void p.finally(() => this.closings.delete(p));
    });
    await this.sub.subscribe(this.channel(name));
    const [[, snap], [, entries]] = (await this.redis
      .multi()
      .hgetallBuffer(this.key(name, 'snap'))
      .xrangeBuffer(this.key(name, 'log'), '-', '+')
      .exec()) as [[null, Record<string, Buffer>], [null, Entry[]]];
    const parts: Uint8Array[] = [];
    if (snap?.data) {
      parts.push(snap.data);
      o.cursor = snap.id?.toString() ?? o.cursor;
    }
    for (const [id, fields] of entries) {
      parts.push(fields[1]!);
      o.cursor = id.toString();
    }
    if (parts.length) o.loaded = Y.mergeUpdates(parts);
  }

  private async started(name: string, doc: Y.Doc): Promise<void> {
    const o = this.open.get(name);
    if (!o || o.doc !== doc) return;
    // What the load added to Redis's state (a seed, the catalog's newer flow) is relayed;
    // then what Redis holds is applied (a no-op when the load used it as history).
    const sv = o.loaded ? Y.encodeStateVectorFromUpdate(o.loaded) : new Uint8Array([0]);
    const mine = Y.encodeStateAsUpdate(doc, sv);
    if (o.loaded) Y.applyUpdate(doc, o.loaded, REMOTE);
    o.loaded = undefined;
    if (!isEmptyUpdate(mine)) this.queue(o, mine);
    doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin !== REMOTE && origin !== LOAD) this.queue(o, update);
    });
    o.awareness = this.rooms?.awarenessOf(name);
    o.awareness?.on(
      'update',
      (ch: { added: number[]; updated: number[]; removed: number[] }, origin: unknown) => {
        if (origin === REMOTE || !o.awareness) return;
        const own = o.awareness.clientID;
        const ids = ch.added.concat(ch.updated, ch.removed).filter((id) => id !== own || o.owner);
        if (ids.length) this.sendAwareness(o, ids);
      },
    );
    o.started = true;
    void this.publish(name, MSG_QUERY, new Uint8Array());
    await this.tryLock(o);
  }

  private queue(o: Open, update: Uint8Array): void {
    o.outbox.push(update);
    void this.flush(o);
  }

  /** Sends the outbox, one send at a time per room; what fails stays for the next tick. */
  private flush(o: Open): Promise<void> {
    if (o.sending || o.outbox.length === 0) return o.sending ?? Promise.resolve();
    const batch = o.outbox.splice(0);
    const update = batch.length === 1 ? batch[0]! : Y.mergeUpdates(batch);
    o.sending = (async () => {
      try {
        await this.redis
          .multi()
          .xadd(this.key(o.name, 'log'), '*', 'u', Buffer.from(update))
          .publish(this.channel(o.name), this.frame(MSG_UPDATE, update))
          .exec();
      } catch (e) {
        o.outbox.unshift(update);
        this.o.log?.warn({ room: o.name, err: String(e) }, 'co-editing relay: update not sent yet');
      } finally {
        o.sending = undefined;
      }
      if (o.outbox.length && !this.closing) await this.flush(o);
    })();
    return o.sending;
  }

  private frame(type: number, payload: Uint8Array): Buffer {
    return Buffer.concat([this.instance, Buffer.from([type]), payload]);
  }

  private publish(name: string, type: number, payload: Uint8Array): Promise<unknown> {
    return this.redis.publish(this.channel(name), this.frame(type, payload)).catch(() => 0);
  }

  private sendAwareness(o: Open, ids: number[]): void {
    if (!o.awareness) return;
    void this.publish(o.name, MSG_AWARENESS, awarenessProtocol.encodeAwarenessUpdate(o.awareness, ids));
  }

  private onMessage(channel: Buffer, message: Buffer): void {
    const name = channel.toString().slice(this.o.prefix.length + ':room:'.length);
    const o = this.open.get(name);
    if (!o?.started || message.length < 9 || message.subarray(0, 8).equals(this.instance)) return;
    const type = message[8];
    const payload = new Uint8Array(message.subarray(9));
    try {
      if (type === MSG_UPDATE) Y.applyUpdate(o.doc, payload, REMOTE);
      else if (type === MSG_AWARENESS && o.awareness)
        awarenessProtocol.applyAwarenessUpdate(o.awareness, payload, REMOTE);
      else if (type === MSG_SAVE && o.owner) void this.rooms?.flush(name);
      else if (type === MSG_QUERY && o.awareness) {
        const own = o.awareness.clientID;
        const ids = [...o.awareness.getStates().keys()].filter((id) => id !== own || o.owner);
        if (ids.length) this.sendAwareness(o, ids);
      }
    } catch (e) {
      this.o.log?.warn({ room: name, err: String(e) }, 'co-editing relay: bad message ignored');
    }
  }

  private tick(): void {
    for (const o of this.open.values()) {
      if (!o.started || o.closed) continue;
      void this.flush(o);
      void this.poll(o).catch(() => {});
      void this.tryLock(o).catch(() => {});
    }
  }

  /** Applies what the stream has after the cursor (and a newer snapshot, if it was trimmed). */
  private async poll(o: Open): Promise<void> {
    const [[, snapId], [, entries]] = (await this.redis
      .multi()
      .hget(this.key(o.name, 'snap'), 'id')
      .xrangeBuffer(this.key(o.name, 'log'), `(${o.cursor}`, '+', 'COUNT', 1000)
      .exec()) as [[null, string | null], [null, Entry[]]];
    if (o.closed) return;
    if (snapId && after(snapId, o.cursor)) {
      const data = await this.redis.hgetBuffer(this.key(o.name, 'snap'), 'data');
      if (data && !o.closed) Y.applyUpdate(o.doc, data, REMOTE);
    }
    for (const [id, fields] of entries) {
      if (o.closed) return;
      Y.applyUpdate(o.doc, fields[1]!, REMOTE);
      o.cursor = id.toString();
    }
    if (snapId && after(snapId, o.cursor)) o.cursor = snapId;
  }

  /** The owner renews its lock; any other instance with the room open takes a lock that lapsed. */
  private async tryLock(o: Open): Promise<void> {
    const key = this.key(o.name, 'owner');
    if (o.owner) {
      const ok = await this.redis.eval(RENEW, 1, key, this.tag, this.lockMs);
      if (ok !== 1) o.owner = false;
      return;
    }
    const got = await this.redis.set(key, this.tag, 'PX', this.lockMs, 'NX');
    if (got !== 'OK' || o.closed) return;
    o.owner = true;
    // The previous owner may have died with changes unsaved: save what the room holds now,
    // and tell the others this server's save status. Its own status, relayed here, goes (it
    // would otherwise outshine this one until awareness times it out).
    const aw = o.awareness;
    if (aw) {
      const stale = [...aw.getStates()]
        .filter(([id, st]) => id !== aw.clientID && isServerState(st))
        .map(([id]) => id);
      if (stale.length) awarenessProtocol.removeAwarenessStates(aw, stale, REMOTE);
      this.sendAwareness(o, [aw.clientID]);
    }
    // Not awaited: a save waits for the room's load, which may be what took the lock.
    void this.rooms?.saveNow(o.name);
  }

  /** The owner compacts the stream into the snapshot once it has grown. */
  private async compact(name: string): Promise<void> {
    const o = this.open.get(name);
    if (!o?.owner) return;
    const log = this.key(name, 'log');
    const snapKey = this.key(name, 'snap');
    if ((await this.redis.xlen(log)) < (this.o.compactAt ?? 200)) return;
    const [[, snap], [, entries]] = (await this.redis
      .multi()
      .hgetallBuffer(snapKey)
      .xrangeBuffer(log, '-', '+')
      .exec()) as [[null, Record<string, Buffer>], [null, Entry[]]];
    if (!entries.length) return;
    const scratch = new Y.Doc({ gc: true });
    try {
      if (snap?.data) Y.applyUpdate(scratch, snap.data);
      for (const [, fields] of entries) Y.applyUpdate(scratch, fields[1]!);
      const last = entries[entries.length - 1]![0].toString();
      await this.redis.eval(
        COMPACT,
        2,
        snapKey,
        log,
        snap?.id?.toString() ?? '',
        last,
        Buffer.from(Y.encodeStateAsUpdate(scratch)),
        nextId(last),
      );
    } finally {
      scratch.destroy();
    }
  }

  private async closeRoom(o: Open): Promise<void> {
    o.closed = true;
    if (this.open.get(o.name) === o) this.open.delete(o.name);
    await o.sending;
    if (o.outbox.length) {
      o.closed = false;
      await this.flush(o).catch(() => {});
      o.closed = true;
    }
    if (!this.open.has(o.name)) await this.sub.unsubscribe(this.channel(o.name)).catch(() => {});
    if (o.owner) await this.redis.eval(RELEASE, 1, this.key(o.name, 'owner'), this.tag).catch(() => {});
    o.owner = false;
  }

  /** Call after the rooms closed (their last updates sent, their locks released). */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    // Bounded: with Redis unreachable, what could not be sent stays in the other instances'
    // rooms and editors (a shutdown must not hang on it).
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all([...[...this.open.values()].map((o) => this.closeRoom(o)), ...this.closings]),
      new Promise((r) => {
        timer = setTimeout(r, 3000);
      }),
    ]);
    clearTimeout(timer);
    this.sub.disconnect();
    // What is queued goes out first, unless Redis is unreachable: then the shutdown goes on.
    await Promise.race([this.redis.quit().catch(() => {}), new Promise((r) => setTimeout(r, 2000).unref())]);
    this.redis.disconnect();
  }
}

/** A server's awareness state (its room status), not an editor's. */
function isServerState(st: unknown): boolean {
  const v = st as { user?: unknown; [ROOM_STATUS_FIELD]?: unknown } | null;
  return v !== null && v.user === undefined && v[ROOM_STATUS_FIELD] !== undefined;
}

/** An update that carries nothing (no structs, no deletions). */
function isEmptyUpdate(u: Uint8Array): boolean {
  return u.byteLength <= 2;
}
