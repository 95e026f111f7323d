/**
 * The flow catalog shared by server instances (scale-out), the smallest sound way: each
 * instance keeps its own catalog as before, and every flow write or delete made on one
 * (through the API, or by the owner of a co-editing room saving it) is put in the Redis hash
 * `<prefix>:flows` under a deployment-wide version number (`<prefix>:flowver`), with a notice
 * on `<prefix>:flowch`. Every other instance adopts it into its catalog as written (same
 * revision, same author), in version order: a later write or delete always wins. An instance
 * that starts, or whose subscription reconnects, reads the whole hash and adopts what is newer.
 *
 * A delete closes the flow's room on every instance (its tombstone holds there too). An API
 * write to a flow whose room is open on another instance only is applied into the room by the
 * room's owner, so it lands once.
 */

import { Redis } from 'ioredis';
import type { FlowRecords } from '../server/flow-records.js';
import type { RoomPersistence } from '../server/room-persistence.js';
import type { FlowRecord, FlowTombstone } from '../store/catalog.js';
import { quiet } from './keys.js';

interface Shared {
  rec?: FlowRecord;
  tomb?: FlowTombstone;
  source: 'room' | 'api';
  /** Whether the writing instance had the flow's room open (it applied the write there). */
  applied: boolean;
  from: string;
}

/** Stores the entry under the next version and tells everyone; returns the version. */
const PUT = `
local v = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], v .. '|' .. ARGV[2])
redis.call('PUBLISH', KEYS[3], ARGV[1])
return v`;

export interface FlowSyncOptions {
  url: string;
  prefix: string;
  /** This instance's id (the relay's), to know its own writes. */
  instance: string;
  records: FlowRecords;
  roomStore: RoomPersistence;
  /** Whether this instance saves (owns) the room of a flow. */
  owns(id: string): boolean;
  log?: { warn(obj: object, msg: string): void };
}

export class FlowSync {
  private readonly redis: Redis;
  private readonly sub: Redis;
  private readonly keys: { flows: string; ver: string; ch: string };
  /** The version of each flow adopted or written here. */
  private readonly seen = new Map<string, number>();
  /** Adoptions of one flow are applied one after another. */
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly o: FlowSyncOptions) {
    const p = o.prefix;
    this.keys = { flows: `${p}:flows`, ver: `${p}:flowver`, ch: `${p}:flowch` };
    const warn = (e: Error) => o.log?.warn({ err: String(e) }, 'flow sync: Redis connection error');
    this.redis = quiet(new Redis(o.url, { maxRetriesPerRequest: null }), warn);
    this.sub = quiet(new Redis(o.url, { maxRetriesPerRequest: null }), warn);
    this.sub.on('message', (_ch: string, id: string) => this.fetch(id));
    // Notices lost while the subscription was down: read everything again.
    this.sub.on('ready', () => void this.readAll());
    o.records.observer = {
      put: (rec, source) =>
        this.share(rec.flow.id, { rec, source, applied: o.roomStore.isOpen(rec.flow.id), from: o.instance }),
      removed: (tomb) => this.share(tomb.id, { tomb, source: 'api', applied: true, from: o.instance }),
    };
  }

  /**
   * Follows notices, then adopts what Redis holds. Not awaited by the server: it starts while
   * Redis is unreachable, and catches up once it is back (every reconnection reads it all).
   */
  start(): Promise<void> {
    return this.sub
      .subscribe(this.keys.ch)
      .then(() => this.readAll())
      .catch((e: unknown) => this.o.log?.warn({ err: String(e) }, 'flow sync: could not subscribe'));
  }

  private share(id: string, entry: Shared): void {
    void (async () => {
      try {
        const v = Number(
          await this.redis.eval(
            PUT,
            3,
            this.keys.flows,
            this.keys.ver,
            this.keys.ch,
            id,
            JSON.stringify(entry),
          ),
        );
        if (v > (this.seen.get(id) ?? 0)) this.seen.set(id, v);
      } catch (e) {
        this.o.log?.warn({ flowId: id, err: String(e) }, 'flow sync: write not shared with other instances');
      }
    })();
  }

  private async readAll(): Promise<void> {
    if (this.closed) return;
    try {
      const all = await this.redis.hgetall(this.keys.flows);
      for (const [id, raw] of Object.entries(all)) this.take(id, raw);
      await this.chain;
    } catch (e) {
      this.o.log?.warn({ err: String(e) }, 'flow sync: could not read the shared catalog');
    }
  }

  private fetch(id: string): void {
    if (this.closed) return;
    this.redis
      .hget(this.keys.flows, id)
      .then((raw) => raw && this.take(id, raw))
      .catch((e: unknown) => this.o.log?.warn({ flowId: id, err: String(e) }, 'flow sync: notice not read'));
  }

  private take(id: string, raw: string): void {
    const bar = raw.indexOf('|');
    const v = Number(raw.slice(0, bar));
    if (!(v > (this.seen.get(id) ?? 0))) return;
    this.seen.set(id, v);
    const entry = JSON.parse(raw.slice(bar + 1)) as Shared;
    if (entry.from === this.o.instance) return;
    this.chain = this.chain
      .then(() => this.adopt(id, entry))
      .catch((e: unknown) => {
        this.o.log?.warn({ flowId: id, err: String(e) }, 'flow sync: could not adopt a flow');
      });
  }

  private async adopt(id: string, entry: Shared): Promise<void> {
    const { records, roomStore } = this.o;
    if (entry.tomb) {
      await records.adoptTombstone(entry.tomb);
      await roomStore.deleted(id, entry.tomb);
      return;
    }
    if (!entry.rec || entry.rec.flow.id !== id) return;
    await records.adopt(entry.rec);
    if (entry.source === 'api' && !entry.applied && this.o.owns(id)) await roomStore.stored(entry.rec.flow);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.chain;
    this.sub.disconnect();
    // What is queued goes out first, unless Redis is unreachable: then the shutdown goes on.
    await Promise.race([this.redis.quit().catch(() => {}), new Promise((r) => setTimeout(r, 2000).unref())]);
    this.redis.disconnect();
  }
}
