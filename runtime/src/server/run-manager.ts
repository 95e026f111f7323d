/**
 * Hosts runs for the server and `switchboard resume`: starts them through the engine, records
 * every event in the run's log (published only once durable), checkpoints at turn boundaries,
 * keeps the catalog's run index current, and after a crash resumes what was running — or
 * marks it `interrupted` — so that no run is ever left `running`.
 *
 * The engine waits for each checkpoint; the callback returns at once — the run's group commit
 * writes and syncs in the background (store/group-commit.ts), and checkpoints of turns that
 * needed no I/O are mostly not serialised at all (checkpoint-policy.ts) — so a run does not
 * wait for the disk, except to let the event loop turn after a slice of CPU (which is when its
 * events go out) or when it is far ahead of a slow disk.
 */
import { randomBytes } from 'node:crypto';
import type { Flow, Problem, RunEvent } from '@switchboard/schemas';
import { invalidFlowMessage } from '../engine/errors.js';
import type {
  RunCheckpoint,
  RunCommand,
  RunFlow,
  RunOptions,
  RunResult,
  RunStatus,
} from '../engine/types.js';
import type { RunRecord } from '../store/catalog.js';
import { StoreError } from '../store/errors.js';
import type { EventLog, LogLine } from '../store/event-log.js';
import type { GroupCommit } from '../store/group-commit.js';
import type { RunSpec } from '../store/run-files.js';
import { isStorageFault, StorageError } from '../store/storage-error.js';
import type { Store } from '../store/store.js';
import type { ToolJournal } from '../store/tool-journal.js';
import type { ToolHost } from '../tools/types.js';
import { CheckpointPolicy, type SliceOptions } from './checkpoint-policy.js';
import { type JournalState, journaledTools, journalState } from './journaled-tools.js';
import { afterPoll } from './loop-turn.js';
import { count, ReplayMarker, recount, zeroCounters } from './run-counters.js';

export interface Logger {
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

const silent: Logger = { info() {}, warn() {}, error() {} };

export interface RunManagerOptions {
  store: Store;
  /**
   * Receives each batch of events once it is durable, with the log lines they were written
   * in; may return how many clients watch the run.
   */
  publish?: (runId: string, events: RunEvent[], lines?: LogLine[]) => number | undefined;
  /**
   * Receives each batch of events as soon as it is written to the OS, before it is durable
   * (only when the store fsyncs; otherwise written is durable and `publish` has them at once).
   */
  publishWritten?: (runId: string, events: RunEvent[], lines: LogLine[]) => number | undefined;
  /** The interpreter; loaded lazily from ../engine/index.js by default. */
  runFlow?: RunFlow;
  models?: RunOptions['models'];
  /** Tool host for a run; its calls are journaled. Undefined: the engine's default. */
  tools?: (run: { runId: string; flow: Flow; source: RunRecord['source'] }) => ToolHost | undefined;
  /** Human nodes without an answer: wait for an `answer` command (server) or fail (headless). */
  humanInput?: 'wait' | 'fail';
  env?: Record<string, string | undefined>;
  logger?: Logger;
  /** When a run that never waits lets the event loop turn, and writes a checkpoint then. */
  slice?: Partial<SliceOptions>;
  /** Resume runs the disk paused once writes succeed again (default true). */
  autoResume?: boolean;
}

/**
 * A slice of 2 ms or 320 events, for runs whose turns never wait (a run that waits for a model
 * or a tool lets the loop turn, and sends its events, at every turn anyway): a client gets
 * events within about that; a CPU-bound run pays a few writes, frames and loop turns per run
 * rather than one per turn (each costs about as much as the work of a dozen turns); and the
 * last slice — what is left to deliver when the run ends — is written, sent and parsed in
 * about a millisecond at most. A crash replays at most 5 ms of such turns.
 */
const SLICE: SliceOptions = { ms: 2, events: 320, replayMs: 5 };

export const FINAL: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled', 'interrupted']);

export class RunNotLiveError extends Error {
  constructor(runId: string, status: string) {
    super(`run ${runId} is ${status}, not live`);
  }
}

/** A flow refused at a run's start by the one validator; nothing was recorded. */
export class FlowInvalidError extends Error {
  constructor(readonly problems: Problem[]) {
    super(invalidFlowMessage(problems));
  }
}

interface Active {
  runId: string;
  record: RunRecord;
  log: EventLog;
  commit: GroupCommit;
  journal: ToolJournal;
  js: JournalState;
  send(cmd: RunCommand): void;
  result: Promise<RunResult>;
  /** Set when this process stops hosting the run (shutdown): later events are not recorded. */
  detached: boolean;
  abort: AbortController;
  done: Promise<void>;
}

export function newRunId(): string {
  return `r_${Date.now().toString(36)}_${randomBytes(6)
    .toString('base64url')
    .replace(/[^A-Za-z0-9]/g, 'x')}`;
}

const nowIso = () => new Date().toISOString();

export class RunManager {
  private readonly active = new Map<string, Active>();
  /** Ends of runs being recorded (detachAll waits for them). */
  private readonly settling = new Set<Promise<void>>();
  private readonly log: Logger;
  private engine: Promise<RunFlow> | undefined;
  private closing = false;

  private readonly unsubscribe: () => void;

  constructor(private readonly o: RunManagerOptions) {
    this.log = o.logger ?? silent;
    this.unsubscribe = o.store.health.onRecovered(() => void this.resumeStoragePaused());
  }

  private get store(): Store {
    return this.o.store;
  }

  private loadEngine(): Promise<RunFlow> {
    if (this.o.runFlow) return Promise.resolve(this.o.runFlow);
    this.engine ??= import('../engine/index.js').then((m) => (m as { runFlow: RunFlow }).runFlow);
    return this.engine;
  }

  /** Hosted here and recording (a run the disk stopped is not, even while its files close). */
  isLive(runId: string): boolean {
    const a = this.active.get(runId);
    return a !== undefined && !a.detached;
  }

  get liveCount(): number {
    return this.active.size;
  }

  /** Waits until a run hosted here has settled in the store (tests, CLI). */
  async settled(runId: string): Promise<RunRecord | undefined> {
    await this.active.get(runId)?.done;
    return this.store.catalog.data.runs[runId];
  }

  /**
   * Starts a run; resolves once it is recorded (catalog + spec are durable). The flow is
   * checked here, once, by the one validator — unless the caller says it just did — and an
   * invalid one is refused with {@link FlowInvalidError} before anything is recorded; the
   * engine then runs it without checking it again.
   */
  async start(p: {
    flow: Flow;
    input: unknown;
    source: RunRecord['source'];
    answers?: Record<string, string | string[]>;
    /** Node ids to pause before; set before the engine takes its first step. */
    breakpoints?: string[];
    /** The flow is the one validator's output for this very request (the REST route's check). */
    validated?: boolean;
  }): Promise<RunRecord> {
    if (this.closing) throw new Error('the server is shutting down');
    const runFlow = await this.loadEngine();
    let flow = p.flow;
    if (!p.validated) {
      const { validate } = await import('@switchboard/nodes');
      const v = validate(flow);
      if (!v.ok || !v.flow) throw new FlowInvalidError(v.errors);
      flow = v.flow;
    }
    const runId = newRunId();
    const t = nowIso();
    const record: RunRecord = {
      id: runId,
      flowId: flow.id,
      flowName: flow.name,
      status: 'pending',
      createdAt: t,
      updatedAt: t,
      lastSeq: 0,
      counters: zeroCounters(),
      resumes: 0,
      source: p.source,
    };
    const spec: RunSpec = { version: 1, runId, flow, input: p.input, createdAt: t };
    if (p.answers) spec.answers = p.answers;
    // The run's folder first, then its index entry: a start that fails at either leaves
    // nothing behind — no folder, no entry (a run the client was told failed never shows up).
    const runs = this.store.catalog.data.runs;
    let a: Active;
    try {
      await this.store.writeSpec(spec);
      runs[runId] = record;
      await this.store.catalog.save();
      a = this.launch(runFlow, record, spec, undefined, true);
    } catch (e) {
      if (runs[runId] === record) delete runs[runId];
      this.active.delete(runId);
      await this.store.removeRun(runId);
      // A save that already held the entry may have reached the disk: the next one drops it.
      this.saveSoon();
      if (!isStorageFault(e)) throw e;
      const se = this.store.health.report(e);
      this.log.error({ code: se.code, path: se.path }, `a run could not be started: ${se.message}`);
      throw se;
    }
    for (const nodeId of p.breakpoints ?? []) a.send({ type: 'breakpoint', nodeId, on: true });
    return record;
  }

  /**
   * Applies one durable event to the run's index entry (nothing that is not on disk is ever
   * reported). Returns whether the entry on disk must follow
   * now: only a pause (or its end) changes what recovery does with a run — it resumes paused
   * runs paused and every other live one running — and a final status is written once the
   * log under it is durable (settle). The in-memory index, which the API reads, is current.
   */
  private track(rec: RunRecord, ev: RunEvent): boolean {
    rec.lastSeq = ev.seq;
    const before = rec.status;
    count(rec.counters, rec.id, ev);
    if (ev.runId !== rec.id) return false; // nested runs only count through the parent
    let changed = true;
    switch (ev.type) {
      case 'run.started':
      case 'run.resumed':
      case 'input.received':
        rec.status = 'running';
        break;
      case 'run.paused':
        rec.status = 'paused';
        break;
      case 'input.requested':
        rec.status = 'waiting';
        break;
      case 'run.completed':
        rec.status = 'completed';
        rec.output = ev.output;
        break;
      case 'run.failed':
        rec.status = 'failed';
        rec.error = { code: ev.error.code, message: ev.error.message };
        break;
      case 'run.cancelled':
        rec.status = 'cancelled';
        break;
      case 'run.interrupted':
        rec.status = 'interrupted';
        rec.error = { code: 'interrupted', message: ev.reason ?? 'interrupted' };
        break;
      default:
        changed = false;
    }
    if (ev.scripted) rec.scripted = true;
    if (changed) {
      rec.updatedAt = nowIso();
      if (FINAL.has(rec.status)) rec.endedAt = rec.updatedAt;
    }
    return changed && (rec.status === 'paused') !== (before === 'paused');
  }

  private saveSoon(): void {
    // A failure is reported to the store's health by the catalog; the next save retries.
    this.store.catalog
      .save()
      .catch((e: unknown) => this.log.error({ err: String(e) }, 'catalog write failed'));
  }

  /** `validated`: the spec's flow was checked at this start (a resumed one is checked by the engine). */
  private launch(
    runFlow: RunFlow,
    record: RunRecord,
    spec: RunSpec,
    cp: RunCheckpoint | undefined,
    validated = false,
  ): Active {
    const runId = record.id;
    const { log, commit } = this.store.openLog(runId);
    commit.prepare();
    const journal = this.store.openJournal(runId);
    const js = journalState(journal, cp?.seq);
    const policy = new CheckpointPolicy({ ...SLICE, ...this.o.slice });
    // A tool call is journaled against the last checkpoint written, once that one is durable.
    js.durable = () => commit.durable();
    js.onCall = () => policy.onToolCall();
    this.watch(runId, commit, record, policy);
    const abort = new AbortController();
    const a: Active = {
      runId,
      record,
      log,
      commit,
      journal,
      js,
      detached: false,
      abort,
      send: () => {},
      result: Promise.resolve({ runId, status: 'interrupted' }),
      done: Promise.resolve(),
    };
    this.active.set(runId, a);
    js.onStoreError = (e) => this.stopForStorage(a, e);
    commit.onError = (e) => this.stopForStorage(a, e);
    // A resumed run replays the turns after its checkpoint: their events are marked as such.
    const replay = cp ? new ReplayMarker(log.events, cp.seq) : undefined;
    let nextSeq = log.lastSeq + 1;
    const onEvent = (engineEvent: RunEvent) => {
      if (a.detached || commit.failed) return;
      const ev = replay?.pending ? replay.mark(engineEvent) : engineEvent;
      if (ev.seq !== nextSeq) {
        // The log must stay contiguous; an engine that skips or repeats a seq is a bug to surface.
        this.log.error(
          { runId, seq: ev.seq, expected: nextSeq },
          'engine emitted an out-of-order seq; dropped',
        );
        return;
      }
      try {
        commit.append(ev);
      } catch (e) {
        this.stopForStorage(a, e);
        return;
      }
      nextSeq++;
      policy.onEvent(ev);
    };
    // Returns nothing for most turns (nothing to wait for: the engine goes on at once).
    const checkpoint = (c: RunCheckpoint): Promise<void> | undefined => {
      // A detached run (shutdown) never checkpoints again; the next process resumes it.
      if (a.detached) return new Promise<void>(() => {});
      const d = policy.decide();
      // The replayed turn that called tools is over; what it did not match is not replayed later.
      if (d.afterToolCall) js.replay = [];
      if (d.write) {
        const t = performance.now();
        try {
          commit.checkpoint(c);
        } catch (e) {
          return Promise.reject(e);
        }
        policy.serialised(performance.now() - t);
        js.checkpointSeq = c.seq;
      }
      // The index is not written per turn: the log is the truth for lastSeq and counters.
      if (log.lastSeq - log.durableSeq > policy.aheadLimit) {
        // A disk that cannot keep up: the run waits for the syncs under way rather than pile
        // events up (what it hands over meanwhile is written at the end of this turn).
        commit.flush();
        commit.hurry();
        return commit.synced();
      }
      if (!d.yield) return undefined;
      // Written (and so sent) now rather than when the loop comes back to the commit: the
      // frame is then on the socket before the loop polls, not after the run's next slice.
      commit.flush();
      return policy.yieldNow();
    };
    // A tools edge is an agent's whole permission: a flow without one gets no tool host, and
    // its agents skip the per-agent tool lookup.
    const grantsTools = spec.flow.edges.some((e) => e.kind === 'tools');
    const inner = grantsTools ? this.o.tools?.({ runId, flow: spec.flow, source: record.source }) : undefined;
    const options: RunOptions = {
      runId,
      onEvent,
      checkpoint,
      signal: abort.signal,
      dataDir: this.store.runDir(runId),
      humanInput: this.o.humanInput ?? 'wait',
    };
    if (validated) options.validate = false;
    if (inner) options.tools = journaledTools(inner, js);
    if (this.o.models) options.models = this.o.models;
    if (this.o.env) options.env = this.o.env;
    if (spec.answers) options.answers = spec.answers;
    // Continue after the last event on disk: events written after the checkpoint stay in the
    // log as history, and the replayed turn's events follow them with no gap and no duplicate.
    if (cp) options.resume = { ...cp, seq: log.lastSeq };
    const handle = runFlow(spec.flow, spec.input, options);
    a.send = (cmd) => handle.send(cmd);
    a.result = handle.result;
    a.done = handle.result
      .then(
        (r) => this.settle(a, r),
        (e: unknown) =>
          this.settle(a, { runId, status: 'failed', error: { code: 'engine', message: String(e) } }),
      )
      .catch((e: unknown) => this.log.error({ runId, err: String(e) }, 'could not record the end of a run'));
    return a;
  }

  /**
   * Applies a run's events to its index entry and publishes them once durable; reports a
   * store that can no longer write (a hosted run stops for it: see launch).
   */
  private watch(runId: string, commit: GroupCommit, rec: RunRecord, policy?: CheckpointPolicy): void {
    const { publish, publishWritten } = this.o;
    commit.onDurable = (events, lines) => {
      let save = false;
      for (const ev of events) if (this.track(rec, ev)) save = true;
      if (save) this.saveSoon();
      const watchers = publish?.(runId, events, lines);
      if (typeof watchers === 'number') policy?.watchedBy(watchers);
    };
    commit.onWritten = publishWritten
      ? (events, lines) => {
          const watchers = publishWritten(runId, events, lines);
          if (typeof watchers === 'number') policy?.watchedBy(watchers);
        }
      : undefined;
    commit.onError = (e) => {
      const se = this.store.health.report(e, commit.log.file);
      this.log.error({ runId, code: se.code, path: se.path }, `run log cannot be written: ${se.message}`);
    };
  }

  /**
   * The run's log, checkpoint or tool journal could not be written: the run stops where its
   * log stops. Nothing more is recorded, the engine is aborted, and the entry says `paused`
   * with the storage error (`pausedBy`) and what the durable log holds; it resumes from its
   * last checkpoint on a `resume` command, or by itself once writes succeed again.
   */
  private stopForStorage(a: Active, e: unknown): void {
    if (a.detached) return;
    a.detached = true;
    const se = this.store.health.report(e, a.log.file);
    const rec = a.record;
    this.log.error(
      { runId: a.runId, code: se.code, path: se.path, durableSeq: a.log.durableSeq },
      `run paused: ${se.message}`,
    );
    a.abort.abort(se);
    if (!FINAL.has(rec.status)) {
      rec.status = 'paused';
      rec.pausedBy = {
        code: se.code,
        message: se.message,
        ...(se.path ? { path: se.path } : {}),
        at: nowIso(),
      };
      rec.updatedAt = rec.pausedBy.at;
    }
    const p = (async () => {
      await this.store.closeLog(a.runId).catch(() => {});
      a.journal.close();
      // The entry says what the log holds: what was handed to the OS before the failure is in
      // the file (a torn last record is not), and a resume continues after exactly that.
      try {
        const onDisk = this.store.readEvents(a.runId);
        // Written before the failure, in the file, not yet applied nor sent: they are now.
        const extra = onDisk.filter((e) => e.seq > rec.lastSeq);
        for (const e of extra) this.track(rec, e);
        if (extra.length > 0) this.o.publish?.(a.runId, extra);
        recount(rec, onDisk);
        rec.lastSeq = onDisk.at(-1)?.seq ?? 0;
        if (FINAL.has(rec.status)) delete rec.pausedBy;
        else if (rec.pausedBy) rec.status = 'paused';
      } catch {}
      if (this.active.get(a.runId) === a) this.active.delete(a.runId);
      await this.store.catalog.save().catch(() => {});
    })();
    this.settling.add(p);
    a.done = p.finally(() => this.settling.delete(p));
  }

  /** Resumes the runs the disk paused (writes succeed again); a run that fails again waits longer. */
  private readonly retryAt = new Map<string, { at: number; wait: number }>();
  private async resumeStoragePaused(): Promise<void> {
    if (this.closing || this.o.autoResume === false) return;
    for (const rec of Object.values(this.store.catalog.data.runs)) {
      if (!rec.pausedBy || this.active.has(rec.id) || FINAL.has(rec.status)) continue;
      const r = this.retryAt.get(rec.id);
      if (r && Date.now() < r.at) continue;
      const wait = Math.min((r?.wait ?? 500) * 2, 60_000);
      this.retryAt.set(rec.id, { at: Date.now() + wait, wait });
      try {
        const outcome = await this.resumeStored(rec.id);
        this.log.info({ runId: rec.id, outcome }, 'run paused by storage: resumed by itself');
      } catch (e) {
        this.log.warn({ runId: rec.id, err: (e as Error).message }, 'run paused by storage: not resumed yet');
      }
    }
  }

  /** Records the end of a run hosted here (not of one detached at shutdown: it goes on elsewhere). */
  private settle(a: Active, r: RunResult): Promise<void> {
    if (a.detached) return Promise.resolve();
    const p = this.recordEnd(a, r);
    this.settling.add(p);
    return p.finally(() => this.settling.delete(p));
  }

  private async recordEnd(a: Active, r: RunResult): Promise<void> {
    const rec = a.record;
    // The log first: the entry says what it holds. A write that fails now stops the run for
    // the disk (stopForStorage) like one that failed earlier: it did not end on disk.
    await this.store.closeLog(a.runId);
    if (a.detached) return;
    if (!FINAL.has(rec.status)) {
      // The engine ended without a final event in the log (should not happen): record the result.
      rec.status = r.status;
      if (r.error) rec.error = r.error;
      if (r.output !== undefined) rec.output = r.output;
      rec.endedAt = rec.updatedAt = nowIso();
    }
    if (r.status === 'completed' && rec.output === undefined) rec.output = r.output;
    a.journal.close();
    this.active.delete(a.runId);
    this.retryAt.delete(a.runId);
    // Serialising the catalog takes a while on a big one; the run's last frame goes out first.
    await afterPoll();
    await this.store.catalog.save();
  }

  command(runId: string, cmd: RunCommand): void {
    const a = this.active.get(runId);
    if (!a) {
      const rec = this.store.catalog.data.runs[runId];
      throw new RunNotLiveError(runId, rec?.status ?? 'unknown');
    }
    a.send(cmd);
  }

  /** Appends a final `run.interrupted` event to a run that cannot continue. */
  private async interrupt(rec: RunRecord, reason: string): Promise<void> {
    let logOk = true;
    try {
      const { log, commit } = this.store.openLog(rec.id);
      const ev = {
        runId: rec.id,
        seq: log.lastSeq + 1,
        ts: Date.now(),
        type: 'run.interrupted',
        reason,
      } as RunEvent;
      this.watch(rec.id, commit, rec);
      commit.append(ev);
      await this.store.closeLog(rec.id);
      if (commit.failed) throw commit.failed;
    } catch (e) {
      if (isStorageFault(e)) throw this.store.health.report(e);
      // The log itself is damaged: it stays as it is for the operator; the index says why.
      logOk = false;
      this.log.error({ runId: rec.id, err: (e as Error).message }, 'run log is damaged; not touched');
      rec.status = 'interrupted';
      rec.error = { code: 'store-damaged', message: `${reason}; ${(e as Error).message}` };
      rec.endedAt = rec.updatedAt = nowIso();
    }
    if (logOk) rec.error = { code: 'interrupted', message: reason };
    this.log.warn({ runId: rec.id, reason }, 'run interrupted');
  }

  /**
   * Continues a run that is not hosted by any process from its last checkpoint, or marks it
   * interrupted when that is impossible. Returns what happened.
   */
  async resumeStored(
    runId: string,
    opts: { pause?: boolean; allowInterrupted?: boolean } = {},
  ): Promise<'resumed' | 'interrupted' | 'final'> {
    const rec = this.store.catalog.data.runs[runId];
    if (!rec) throw new Error(`no run ${runId}`);
    if (this.active.has(runId)) throw new Error(`run ${runId} is already live`);
    try {
      return await this.resumeFromDisk(rec, opts);
    } catch (e) {
      // The disk refused again: the run stays paused by it, nothing of it is lost.
      if (!isStorageFault(e)) throw e;
      await this.store.closeLog(runId).catch(() => {});
      const se = this.store.health.report(e);
      if (!FINAL.has(rec.status)) {
        rec.status = 'paused';
        rec.pausedBy = {
          code: se.code,
          message: se.message,
          ...(se.path ? { path: se.path } : {}),
          at: nowIso(),
        };
      }
      throw se;
    }
  }

  private async resumeFromDisk(
    rec: RunRecord,
    opts: { pause?: boolean; allowInterrupted?: boolean },
  ): Promise<'resumed' | 'interrupted' | 'final'> {
    const runId = rec.id;
    let log: EventLog;
    let commit: GroupCommit;
    try {
      const opened = this.store.openLog(runId);
      log = opened.log;
      commit = opened.commit;
      if (opened.torn)
        this.log.warn(
          { runId, file: log.file, ...opened.torn },
          'cut a torn record at the end of the run log',
        );
    } catch (e) {
      if (isStorageFault(e) && !(e instanceof StoreError)) throw e;
      await this.interrupt(rec, `the run log cannot be read: ${(e as Error).message}`);
      await this.store.catalog.save();
      return 'interrupted';
    }
    // The entry follows the log: status, lastSeq and counters (a replayed turn counts once).
    recount(rec, log.events);
    rec.lastSeq = log.lastSeq;
    // The log is the truth: the process may have died after the final event but before the index.
    const finalRe = opts.allowInterrupted
      ? /^run\.(completed|failed|cancelled)$/
      : /^run\.(completed|failed|cancelled|interrupted)$/;
    const final = [...log.events].reverse().find((e) => e.runId === runId && finalRe.test(e.type));
    if (final) {
      for (const e of log.events.slice(-1)) this.track(rec, e);
      this.track(rec, final);
      delete rec.pausedBy;
      await this.store.closeLog(runId);
      await this.store.catalog.save();
      return 'final';
    }
    let spec: RunSpec | undefined;
    let cp: RunCheckpoint | undefined;
    let latest: RunCheckpoint | undefined;
    try {
      spec = await this.store.readSpec(runId);
      // The last checkpoint the log covers (after a power loss a later one may have survived
      // the log lines under it; it is skipped).
      latest = await this.store.readCheckpoint(runId);
      cp = latest && latest.seq <= log.lastSeq ? latest : await this.store.readCheckpoint(runId, log.lastSeq);
    } catch (e) {
      if (isStorageFault(e) && !(e instanceof StoreError)) throw e;
      this.log.error(
        { runId, file: (e as StoreError).file, err: (e as Error).message },
        'run file is damaged',
      );
      await this.interrupt(rec, `a run file is damaged: ${(e as Error).message}`);
      await this.store.catalog.save();
      return 'interrupted';
    }
    if (!spec || !cp) {
      if (rec.pausedBy && spec) {
        // Stopped by the disk before its first checkpoint: nothing to continue from. It fails
        // by the storage error's name.
        await this.failStored(rec, commit, rec.pausedBy);
        return 'final';
      }
      await this.interrupt(
        rec,
        !spec
          ? 'the run was never fully recorded'
          : latest
            ? `the checkpoint (seq ${latest.seq}) is ahead of the log (seq ${log.lastSeq})`
            : 'the process stopped before the first checkpoint',
      );
      await this.store.catalog.save();
      return 'interrupted';
    }
    const runFlow = await this.loadEngine();
    const stop = rec.pausedBy;
    if (stop) {
      // The log says why it stopped where it stops, then the engine says it resumed.
      this.watch(runId, commit, rec);
      commit.append({
        runId,
        seq: log.lastSeq + 1,
        ts: Date.parse(stop.at) || Date.now(),
        type: 'run.paused',
        reason: `${stop.code}: ${stop.message}`,
      } as RunEvent);
      await commit.durable();
      delete rec.pausedBy;
    }
    rec.resumes++;
    rec.status = 'running';
    rec.lastSeq = log.lastSeq;
    const a = this.launch(runFlow, rec, spec, cp);
    if (opts.pause) a.send({ type: 'pause' });
    await this.store.catalog.save().catch(() => {});
    this.log.info({ runId, fromSeq: cp.seq, logSeq: log.lastSeq }, 'run resumed from its checkpoint');
    return 'resumed';
  }

  /** Ends a stored run with `run.failed` naming a storage error. */
  private async failStored(
    rec: RunRecord,
    commit: GroupCommit,
    stop: NonNullable<RunRecord['pausedBy']>,
  ): Promise<void> {
    this.watch(rec.id, commit, rec);
    commit.append({
      runId: rec.id,
      seq: commit.log.lastSeq + 1,
      ts: Date.now(),
      type: 'run.failed',
      error: { code: stop.code, message: `${stop.message}; the run stopped before its first checkpoint` },
    } as RunEvent);
    await this.store.closeLog(rec.id);
    if (commit.failed) throw commit.failed;
    delete rec.pausedBy;
    await this.store.catalog.save();
  }

  /**
   * On start: every run the last process left live is resumed or marked interrupted; a run
   * whose start never completed (no spec, nothing logged) is removed, as are run folders the
   * catalog does not know; a run the disk paused resumes running. A disk that still refuses
   * leaves a run paused by it (`paused`).
   */
  async recover(): Promise<{ resumed: string[]; interrupted: string[]; final: string[]; paused: string[] }> {
    const out = {
      resumed: [] as string[],
      interrupted: [] as string[],
      final: [] as string[],
      paused: [] as string[],
    };
    const runs = this.store.catalog.data.runs;
    for (const rec of Object.values(runs)) {
      if (FINAL.has(rec.status) || this.active.has(rec.id)) continue;
      if (rec.status === 'pending' && rec.lastSeq === 0 && (await this.phantom(rec.id))) {
        delete runs[rec.id];
        await this.store.removeRun(rec.id);
        this.log.warn({ runId: rec.id }, 'removed a run whose start never completed');
        continue;
      }
      const wasPaused = rec.status === 'paused' && !rec.pausedBy;
      try {
        const r = await this.resumeStored(rec.id, { pause: wasPaused });
        out[r].push(rec.id);
      } catch (e) {
        if (e instanceof StorageError) {
          out.paused.push(rec.id);
          continue;
        }
        this.log.error({ runId: rec.id, err: (e as Error).message }, 'could not recover run');
        await this.interrupt(rec, `recovery failed: ${(e as Error).message}`).catch(() => {});
        out.interrupted.push(rec.id);
      }
    }
    await this.store.sweepUnrecorded();
    await this.store.catalog.save();
    return out;
  }

  /** Whether a run has neither a spec nor a logged event (its start never completed). */
  private async phantom(runId: string): Promise<boolean> {
    try {
      if (await this.store.readSpec(runId)) return false;
    } catch {
      return false;
    }
    return this.store.readEvents(runId, 0, 1).length === 0;
  }

  /**
   * Stops hosting: nothing more is recorded, logs are flushed and closed, and the runs stay
   * `running` in the index so the next process resumes them from their checkpoints.
   */
  async detachAll(): Promise<Error[]> {
    this.closing = true;
    this.unsubscribe();
    const errors: Error[] = [];
    for (const a of [...this.active.values()]) {
      // A run the disk already stopped is paused by it (and reported); its files are closing.
      if (a.detached) continue;
      a.detached = true;
      a.abort.abort(new Error('server shutting down'));
      await this.store.closeLog(a.runId).catch((e: Error) => errors.push(e));
      if (a.commit.failed) errors.push(a.commit.failed);
      a.journal.close();
      this.active.delete(a.runId);
    }
    // Runs that ended just before are still writing their index entry.
    await Promise.allSettled([...this.settling]);
    await this.store.catalog.save().catch((e: Error) => errors.push(e));
    return errors;
  }
}

export { StoreError };
