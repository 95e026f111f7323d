/**
 * Runs hosted by another process (`switchboard run FLOW --attach URL`) and recorded here: the
 * server gives each one an id of its own and a reconnect key, writes what the process streams
 * into that run's durable log (acknowledged once on disk, published to editors like any run's
 * events), relays editors' commands to the one process that owns the run, and names what
 * happens when the process goes away: `detached` at once, then — unless it reconnects with its
 * key within the grace period — interrupted as `attach_abandoned`. A run is never left
 * `running` for a process that is gone, and nothing but its own process writes into it.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import type { Flow, RunEvent } from '@switchboard/schemas';
import type { RunCommand } from '../engine/types.js';
import type { AttachInfo, RunRecord } from '../store/catalog.js';
import type { LogLine } from '../store/event-log.js';
import type { GroupCommit } from '../store/group-commit.js';
import { readJsonStrict, writeJsonDurable } from '../store/run-files.js';
import type { Store } from '../store/store.js';
import { AttachProtocolError, admitEvents, type EventCursor, isOwnFinal } from './attach-events.js';
import { HttpError } from './errors.js';
import { RateBucket } from './room-limits.js';
import { applyEvent, FINAL, nowIso, zeroCounters } from './run-counters.js';
import { newRunId, RunNotLiveError } from './run-manager.js';

export interface AttachLimits {
  /** Attached runs connected at once; a hello beyond is refused. Default 64. */
  maxAttached: number;
  /** Events in one message. Default 1,000. */
  maxBatch: number;
  /** Messages per second per connection (a burst of twice that). Default 200. */
  messagesPerSecond: number;
  /** Bytes of events one attached run may write in all (its open log is held in memory). Default 64 MiB. */
  maxRunBytes: number;
  /** How long a detached run waits for its process before it is abandoned. Default 60 s. */
  graceMs: number;
}

export const DEFAULT_ATTACH_LIMITS: AttachLimits = {
  maxAttached: 64,
  maxBatch: 1000,
  messagesPerSecond: 200,
  maxRunBytes: 64 * 1024 * 1024,
  graceMs: 60_000,
};

/** The connection side of a session, as the WebSocket route gives it. */
export interface AttachConnection {
  send(msg: object): void;
  close(code: number, reason: string): void;
}

interface Logger {
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

export interface AttachHostOptions {
  store: Store;
  publish: (runId: string, events: RunEvent[], lines?: LogLine[]) => unknown;
  publishWritten?: (runId: string, events: RunEvent[], lines: LogLine[]) => unknown;
  log: Logger;
  limits?: Partial<AttachLimits>;
  /**
   * Stores the flow of a run whose id the server does not hold (never replacing one), so editors
   * can open it; says whether it did.
   */
  storeFlow?: (flow: Flow, by: string) => Promise<boolean>;
}

/** One connection that owns a run. */
export interface AttachSession {
  readonly runId: string;
  readonly key: string | undefined;
  readonly ackSeq: number;
  readonly flowKnown: boolean;
  /** The server had no flow with this id and stored the run's. */
  readonly flowStored?: boolean;
}

interface Live {
  runId: string;
  rec: RunRecord;
  conn: AttachConnection;
  cursor: EventCursor;
  commit: GroupCommit;
  bucket: RateBucket;
  bytes: number;
  /**
   * The status the run's own final event names, once admitted: its process hosts nothing more,
   * and a command relayed now would be dropped there (see command).
   */
  ended: string | undefined;
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/**
 * The reconnect key's hash lives in the run's folder, not in the catalog: the API lists run
 * records, and nothing derived from the key is ever in an answer.
 */
const KEY_FILE = 'attach.json';

const checkKeyFile = (v: unknown) =>
  typeof v === 'object' && v !== null && typeof (v as { keyHash?: unknown }).keyHash === 'string'
    ? { ok: true as const, value: v as { keyHash: string } }
    : { ok: false as const, path: '/keyHash', message: 'expected { keyHash }' };

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

export class AttachedRuns {
  readonly limits: AttachLimits;
  /** Runs whose process is connected, by server run id. */
  private readonly live = new Map<string, Live>();
  /** Grace timers of detached runs. */
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly pending = new Set<Promise<unknown>>();
  /** Logs being closed after a disconnect: a reattach opens the log only once they are. */
  private readonly closingLogs = new Map<string, Promise<void>>();
  private closing = false;

  constructor(private readonly o: AttachHostOptions) {
    this.limits = { ...DEFAULT_ATTACH_LIMITS, ...o.limits };
  }

  private get store(): Store {
    return this.o.store;
  }

  private record(runId: string): RunRecord | undefined {
    return this.store.catalog.data.runs[runId];
  }

  /** An attached run that has not ended: its process (connected or not) is its only host. */
  owns(runId: string): boolean {
    const rec = this.record(runId);
    return rec?.attached !== undefined && !FINAL.has(rec.status);
  }

  /** Its process is connected: it takes commands. */
  isLive(runId: string): boolean {
    return this.live.has(runId);
  }

  get connectedCount(): number {
    return this.live.size;
  }

  /** Relays a command to the process that owns the run, or refuses it by name. */
  command(runId: string, cmd: RunCommand): void {
    const l = this.live.get(runId);
    if (!l) {
      const a = this.record(runId)?.attached;
      throw new HttpError(
        409,
        'run-detached',
        `run ${runId} runs headless on ${a?.host ?? 'another host'}, which is not connected now (${a?.state ?? 'detached'} since ${a?.since ?? '?'}); commands reach it only while it is attached`,
      );
    }
    // Its final event is in (durable or not yet): the run is over. Refused by name rather than
    // relayed to a process whose engine no longer takes commands. A command relayed just before
    // the process sent that event is in flight when the run ends: the process drops it, and the
    // run's record (its final status) says it had no effect; a process hosts one run, so it can
    // never reach another.
    if (l.ended !== undefined) throw new RunNotLiveError(runId, l.ended);
    l.conn.send({ type: 'command', command: cmd });
  }

  /**
   * On start: every attached run the last server left unfinished is detached, and abandoned
   * unless its process reconnects within the grace period.
   */
  recover(): string[] {
    const out: string[] = [];
    for (const rec of Object.values(this.store.catalog.data.runs)) {
      if (!rec.attached || FINAL.has(rec.status)) continue;
      this.setState(rec, 'detached');
      this.armGrace(rec);
      out.push(rec.id);
    }
    if (out.length > 0) this.saveSoon();
    return out;
  }

  /**
   * A new attachment: the flow is recorded as the run's spec (checked by the one validator),
   * the server chooses the run's id, and the process gets the key that alone reattaches it.
   */
  async create(
    conn: AttachConnection,
    p: { flow: Flow; input: unknown; localRunId: string; host: string; address: string },
  ): Promise<AttachSession> {
    if (this.closing) throw new AttachProtocolError('going-away', 'the server is shutting down');
    if (this.live.size >= this.limits.maxAttached)
      throw new AttachProtocolError(
        'too-many-runs',
        `${this.limits.maxAttached} runs are attached, the most this server takes at once; retry later`,
      );
    const runId = newRunId();
    const key = randomBytes(32).toString('base64url');
    const t = nowIso();
    const flowKnown = this.store.catalog.data.flows[p.flow.id] !== undefined;
    let flowStored = false;
    if (!flowKnown && this.o.storeFlow)
      flowStored = await this.o.storeFlow(p.flow, `headless@${p.host}`).catch((e: unknown) => {
        this.o.log.warn({ flowId: p.flow.id, err: String(e) }, 'could not store the flow of an attached run');
        return false;
      });
    const rec: RunRecord = {
      id: runId,
      flowId: p.flow.id,
      flowName: p.flow.name,
      status: 'pending',
      createdAt: t,
      updatedAt: t,
      lastSeq: 0,
      counters: zeroCounters(),
      resumes: 0,
      source: 'attach',
      attached: {
        host: p.host,
        address: p.address,
        state: 'connected',
        since: t,
        flowKnown,
      },
    };
    const runs = this.store.catalog.data.runs;
    try {
      await this.store.writeSpec({ version: 1, runId, flow: p.flow, input: p.input, createdAt: t });
      await writeJsonDurable(
        join(this.store.runDir(runId), KEY_FILE),
        { keyHash: sha256(key) },
        this.store.fsync,
      );
      runs[runId] = rec;
      await this.store.catalog.save();
    } catch (e) {
      if (runs[runId] === rec) Reflect.deleteProperty(runs, runId);
      await this.store.removeRun(runId);
      throw e;
    }
    this.open(conn, rec, p.localRunId, p.flow);
    this.o.log.info({ runId, host: p.host, flowId: p.flow.id }, 'a headless run attached');
    return { runId, key, ackSeq: 0, flowKnown, flowStored };
  }

  /** Its process again, proved by its key: the log continues where it stops. */
  async reattach(
    conn: AttachConnection,
    p: { runId: string; key: string; localRunId: string; address: string },
  ): Promise<AttachSession> {
    if (this.closing) throw new AttachProtocolError('going-away', 'the server is shutting down');
    const rec = this.record(p.runId);
    const stored = rec?.attached
      ? await readJsonStrict(join(this.store.runDir(p.runId), KEY_FILE), checkKeyFile).catch(() => undefined)
      : undefined;
    // One answer for "no such run" and "not yours": a guess learns nothing.
    if (!rec?.attached || !stored || !sameHash(sha256(p.key), stored.keyHash))
      throw new AttachProtocolError('not-your-run', `no attached run ${p.runId} with this key`);
    if (FINAL.has(rec.status))
      throw new AttachProtocolError(
        rec.attached.state === 'abandoned' ? 'run-abandoned' : 'run-ended',
        rec.attached.state === 'abandoned'
          ? `run ${p.runId} was abandoned at ${rec.attached.since}: ${rec.error?.message ?? ''}`
          : `run ${p.runId} has ended (${rec.status})`,
      );
    const old = this.live.get(p.runId);
    if (old) {
      // The same process on a new connection (the old one is half-open): the new one owns it.
      this.live.delete(p.runId);
      old.conn.close(4409, 'replaced by a newer connection of the same process');
    }
    if (!old && this.live.size >= this.limits.maxAttached)
      throw new AttachProtocolError(
        'too-many-runs',
        `${this.limits.maxAttached} runs are attached; retry later`,
      );
    // The last connection's writes reach the file first: the log then says where it stops.
    if (!old) await this.closingLogs.get(p.runId);
    const spec = await this.store.readSpec(p.runId);
    if (!spec) throw new AttachProtocolError('run-ended', `run ${p.runId} has lost its recorded flow`);
    if (this.live.has(p.runId) || FINAL.has(rec.status))
      throw new AttachProtocolError(
        'not-your-run',
        `run ${p.runId} was reattached by another connection, or ended, meanwhile`,
      );
    // After the waits: a close that ended meanwhile may have armed it.
    this.clearGrace(p.runId);
    rec.attached.address = p.address;
    this.setState(rec, 'connected');
    this.saveSoon();
    const l = this.open(conn, rec, p.localRunId, spec.flow);
    this.o.log.info({ runId: p.runId, fromSeq: l.cursor.nextSeq - 1 }, 'a headless run reattached');
    return {
      runId: p.runId,
      key: undefined,
      ackSeq: l.cursor.nextSeq - 1,
      flowKnown: rec.attached.flowKnown,
    };
  }

  private open(conn: AttachConnection, rec: RunRecord, localRunId: string, flow: Flow): Live {
    const { log, commit } = this.store.openLog(rec.id);
    const l: Live = {
      runId: rec.id,
      rec,
      conn,
      commit,
      cursor: {
        localRunId,
        runId: rec.id,
        flowId: rec.flowId,
        nextSeq: log.lastSeq + 1,
        ended: FINAL.has(rec.status),
        nodes: new Set(flow.nodes.map((n) => n.id)),
        edges: new Set(flow.edges.map((e) => e.id)),
      },
      bucket: new RateBucket(this.limits.messagesPerSecond),
      bytes: 0,
      ended: undefined,
    };
    commit.onDurable = (events, lines) => {
      let save = false;
      for (const ev of events) if (applyEvent(rec, ev)) save = true;
      if (events.some((e) => isOwnFinal(e, rec.id)) && rec.attached) {
        this.setState(rec, 'ended');
        save = true;
      }
      if (save) this.saveSoon();
      this.o.publish(rec.id, events, lines);
      const last = events.at(-1);
      // Only the connection that wrote them is told; a replaced one is gone.
      if (last && this.live.get(rec.id) === l) conn.send({ type: 'ack', seq: last.seq });
    };
    commit.onWritten = this.o.publishWritten
      ? (events, lines) => void this.o.publishWritten?.(rec.id, events, lines)
      : undefined;
    commit.onError = (e) => {
      const se = this.store.health.report(e, log.file);
      this.o.log.error({ runId: rec.id, code: se.code }, `attached run log cannot be written: ${se.message}`);
      conn.close(1011, `the server cannot store this run: ${se.code}`);
    };
    this.live.set(rec.id, l);
    return l;
  }

  /**
   * One message of events from the process that owns `runId`: all are checked before any is
   * written; a refusal throws, and the route closes the connection with its code.
   */
  events(runId: string, batch: unknown, bytes: number): void {
    const l = this.live.get(runId);
    if (!l) throw new AttachProtocolError('not-attached', 'this connection no longer owns a run');
    if (!l.bucket.take())
      throw new AttachProtocolError(
        'rate-limited',
        `more than ${this.limits.messagesPerSecond} messages per second; batch events`,
      );
    l.bytes += bytes;
    if (l.bytes > this.limits.maxRunBytes)
      throw new AttachProtocolError(
        'too-large',
        `run ${runId} passed ${this.limits.maxRunBytes} bytes of events, the most an attached run may write`,
      );
    const admitted = admitEvents(batch, l.cursor, this.limits.maxBatch);
    for (const ev of admitted) l.commit.append(ev);
    l.cursor.nextSeq += admitted.length;
    const final = admitted.find((e) => isOwnFinal(e, runId));
    if (final) {
      l.cursor.ended = true;
      l.ended = final.type.slice('run.'.length);
    }
  }

  /**
   * The connection that owned `runId` closed: a run that ended is closed here; one that did
   * not is detached and waits for its process for the grace period.
   */
  disconnected(runId: string, conn: AttachConnection): void {
    const l = this.live.get(runId);
    if (!l || l.conn !== conn) return;
    this.live.delete(runId);
    const rec = l.rec;
    const closed = this.store.closeLog(runId).catch(() => {});
    this.closingLogs.set(runId, closed);
    const p = closed
      .finally(() => {
        if (this.closingLogs.get(runId) === closed) this.closingLogs.delete(runId);
      })
      .then(() => {
        if (this.live.has(runId)) return; // reattached meanwhile
        if (FINAL.has(rec.status) || l.cursor.ended) return;
        if (this.closing) {
          this.setState(rec, 'detached');
          return;
        }
        this.setState(rec, 'detached');
        this.o.log.warn({ runId, host: rec.attached?.host }, 'an attached run lost its process');
        this.armGrace(rec);
        this.saveSoon();
      });
    this.track(p);
  }

  private armGrace(rec: RunRecord): void {
    this.clearGrace(rec.id);
    const t = setTimeout(() => {
      this.timers.delete(rec.id);
      this.track(this.abandon(rec));
    }, this.limits.graceMs);
    t.unref?.();
    this.timers.set(rec.id, t);
  }

  private clearGrace(runId: string): void {
    const t = this.timers.get(runId);
    if (t) clearTimeout(t);
    this.timers.delete(runId);
  }

  /** The process did not come back: the run ends, interrupted by that name. */
  private async abandon(rec: RunRecord): Promise<void> {
    if (this.live.has(rec.id) || FINAL.has(rec.status) || !rec.attached) return;
    const a = rec.attached;
    const message = `the headless process on ${a.host} went away at ${a.since} and did not reattach within ${Math.round(this.limits.graceMs / 1000)} s`;
    try {
      const { log, commit } = this.store.openLog(rec.id);
      commit.onDurable = (events, lines) => {
        for (const ev of events) applyEvent(rec, ev);
        this.o.publish(rec.id, events, lines);
      };
      commit.append({
        runId: rec.id,
        seq: log.lastSeq + 1,
        ts: Date.now(),
        type: 'run.interrupted',
        reason: `attach_abandoned: ${message}`,
      } as RunEvent);
      await this.store.closeLog(rec.id);
      if (commit.failed) throw commit.failed;
    } catch (e) {
      this.o.log.error({ runId: rec.id, err: (e as Error).message }, 'could not record an abandoned run');
      rec.status = 'interrupted';
      rec.endedAt = nowIso();
    }
    rec.error = { code: 'attach_abandoned', message };
    this.setState(rec, 'abandoned');
    this.o.log.warn({ runId: rec.id, host: a.host }, 'an attached run was abandoned');
    await this.store.catalog.save().catch(() => {});
  }

  private setState(rec: RunRecord, state: AttachInfo['state']): void {
    if (!rec.attached) return;
    rec.attached.state = state;
    rec.attached.since = nowIso();
    rec.updatedAt = rec.attached.since;
  }

  private saveSoon(): void {
    this.store.catalog
      .save()
      .catch((e: unknown) => this.o.log.error({ err: String(e) }, 'catalog write failed'));
  }

  private track(p: Promise<unknown>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Waits for the closes and abandonments under way (tests). */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /**
   * Shutdown: connections close with 1001 (their processes keep running and reconnect to the
   * next server), logs are closed, the runs stay detached for the next server's grace period.
   */
  async closeAll(): Promise<void> {
    this.closing = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    for (const l of [...this.live.values()]) {
      l.conn.close(1001, 'the server is shutting down; reconnect later');
      this.disconnected(l.runId, l.conn);
    }
    await this.idle();
  }
}
