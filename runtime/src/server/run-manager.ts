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
import { type Forker, type ForkPlan, forkRunOptions } from '../cassette/fork.js';
import { invalidFlowMessage } from '../engine/errors.js';
import type {
  RunCheckpoint,
  RunCommand,
  RunFlow,
  RunOptions,
  RunResult,
  RunStatus,
} from '../engine/types.js';
import { serverScriptsDir } from '../models/script-file.js';
import type { RunRecord } from '../store/catalog.js';
import { StoreError } from '../store/errors.js';
import type { EventLog, LogLine } from '../store/event-log.js';
import type { GroupCommit } from '../store/group-commit.js';
import type { RunSpec } from '../store/run-files.js';
import { isStorageFault } from '../store/storage-error.js';
import type { Store } from '../store/store.js';
import type { ToolJournal } from '../store/tool-journal.js';
import type { ToolHost } from '../tools/types.js';
import { CheckpointPolicy, type SliceOptions } from './checkpoint-policy.js';
import { endsStepTurn, type JournalState, journaledTools, journalState, teamIds } from './journaled-tools.js';
import { afterPoll } from './loop-turn.js';
import { RemoteRuns, type RunExecutor } from './remote-runs.js';
import {
  applyEvent,
  endedBy,
  FINAL,
  nowIso,
  pauseForStorage,
  ReplayMarker,
  recount,
  zeroCounters,
} from './run-counters.js';
import { RunRecovery } from './run-recovery.js';

export { FINAL };

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
  /** The operator's outbound destinations and secrets policy, for every run (models and tools). */
  outbound?: RunOptions['outbound'];
  secrets?: RunOptions['secrets'];
  logger?: Logger;
  /** When a run that never waits lets the event loop turn, and writes a checkpoint then. */
  slice?: Partial<SliceOptions>;
  /** Resume runs the disk paused once writes succeed again (default true). */
  autoResume?: boolean;
  /**
   * Where runs execute when not here (workers on a queue: redis/queue-executor.ts). This
   * process then starts no run itself: it records, enqueues and follows each one.
   */
  executor?: RunExecutor;
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

/** Runs another process hosts and streams here (attach-host.ts): commands go to that process. */
export interface AttachedRuns {
  owns(runId: string): boolean;
  isLive(runId: string): boolean;
  command(runId: string, cmd: RunCommand): void;
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
  /**
   * The status of the run's final event, once the engine emitted it: from then on the run only
   * closes its log and index entry here, and a command to it is refused (see command).
   */
  ended: RunStatus | undefined;
  abort: AbortController;
  done: Promise<void>;
}

export function newRunId(): string {
  return `r_${Date.now().toString(36)}_${randomBytes(6)
    .toString('base64url')
    .replace(/[^A-Za-z0-9]/g, 'x')}`;
}

export class RunManager {
  private readonly active = new Map<string, Active>();
  /** Fork plans of runs being started, taken by their launch. */
  private readonly forks = new Map<string, ForkPlan>();
  /** Ends of runs being recorded (detachAll waits for them). */
  private readonly settling = new Set<Promise<void>>();
  private readonly log: Logger;
  private engine: Promise<RunFlow> | undefined;
  private closing = false;

  private readonly unsubscribe: () => void;

  private readonly recovery: RunRecovery;
  private readonly remote: RemoteRuns | undefined;

  /** Attached runs: hosted by their own process, never resumed or commanded here. */
  attached: AttachedRuns | undefined;

  constructor(private readonly o: RunManagerOptions) {
    this.log = o.logger ?? silent;
    if (o.executor)
      this.remote = new RemoteRuns({
        store: o.store,
        executor: o.executor,
        watch: (runId, commit, rec) => this.watch(runId, commit, rec),
        log: this.log,
      });
    this.recovery = new RunRecovery({
      store: o.store,
      log: this.log,
      hosted: (runId) => this.active.has(runId) || this.attached?.owns(runId) === true,
      closing: () => this.closing || o.autoResume === false,
      loadEngine: () => this.loadEngine(),
      launch: (runFlow, rec, spec, cp) => this.launch(runFlow, rec, spec, cp),
      watch: (runId, commit, rec) => this.watch(runId, commit, rec),
    });
    this.unsubscribe = o.store.health.onRecovered(() => void this.recovery.resumeStoragePaused());
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
    return (
      (a !== undefined && !a.detached) ||
      this.attached?.isLive(runId) === true ||
      this.remote?.has(runId) === true
    );
  }

  /** Scaled out: waits for a run another instance started to be recorded here (RemoteRuns.arrived). */
  arrived(runId: string): Promise<boolean> {
    if (this.store.catalog.data.runs[runId]) return Promise.resolve(true);
    return this.remote ? this.remote.arrived(runId) : Promise.resolve(false);
  }

  /** Hosted by another process (attached), connected or not: commands go through `command`. */
  hostedElsewhere(runId: string): boolean {
    return this.attached?.owns(runId) === true;
  }

  get liveCount(): number {
    return this.active.size + (this.remote?.size ?? 0);
  }

  /** Waits until a run hosted here has settled in the store (tests, CLI). */
  async settled(runId: string): Promise<RunRecord | undefined> {
    await this.active.get(runId)?.done;
    await this.remote?.settled(runId);
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
    /** The starter's display name, cleaned (see flow-lifecycle.ts `cleanAuthor`). */
    startedBy?: string;
    answers?: Record<string, string | string[]>;
    /** Node ids to pause before; set before the engine takes its first step. */
    breakpoints?: string[];
    /** The flow is the one validator's output for this very request (the REST route's check). */
    validated?: boolean;
    /** Start from a past run's recorded state (see cassette/fork.ts). */
    fork?: ForkPlan;
    /** Pinned nodes (see ../pins/). */
    pins?: import('@switchboard/schemas').Pin[];
  }): Promise<RunRecord> {
    if (this.closing) throw new Error('the server is shutting down');
    if (this.remote && p.fork)
      throw new Error('forks run in the embedded server only, not on workers (--redis)');
    const runFlow = this.remote ? undefined : await this.loadEngine();
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
    if (p.startedBy) record.startedBy = p.startedBy;
    const spec: RunSpec = { version: 1, runId, flow, input: p.input, createdAt: t };
    if (p.answers) spec.answers = p.answers;
    if (p.pins?.length) spec.pins = p.pins;
    if (p.fork) {
      const { nodeId, turn } = p.fork.at;
      record.parentRunId = p.fork.parentRunId;
      record.forkedAt = { nodeId, turn };
      spec.fork = { runId: p.fork.parentRunId, nodeId, turn };
      this.forks.set(runId, p.fork);
    }
    // The run's folder first, then its index entry: a start that fails at either leaves
    // nothing behind — no folder, no entry (a run the client was told failed never shows up).
    const runs = this.store.catalog.data.runs;
    let a: Active;
    try {
      await this.store.writeSpec(spec);
      runs[runId] = record;
      await this.store.catalog.save();
      if (!runFlow) {
        await this.remote!.start(record, spec, p.breakpoints ?? []);
        return record;
      }
      a = this.launch(runFlow, record, spec, undefined, true);
    } catch (e) {
      this.forks.delete(runId);
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

  /** Applies one durable event to the run's index entry (see applyEvent). */
  private track(rec: RunRecord, ev: RunEvent): boolean {
    return applyEvent(rec, ev);
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
      ended: undefined,
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
    const teams = teamIds(spec.flow);
    /** A turn of a step ended since the resume. */
    let turned = false;
    let nextSeq = log.lastSeq + 1;
    const onEvent = (engineEvent: RunEvent) => {
      a.ended ??= endedBy(runId, engineEvent);
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
      if (endsStepTurn(ev, runId, teams)) turned = true;
      policy.onEvent(ev);
    };
    // Returns nothing for most turns (nothing to wait for: the engine goes on at once).
    // A fork writes no checkpoint before its fork point: a restart then finds it interrupted
    // (before its first checkpoint) or past the fork point, where it is all live — never halfway
    // through the replay, whose position a checkpoint does not hold.
    let forker: Forker | undefined;
    const checkpoint = (c: RunCheckpoint): Promise<void> | undefined => {
      // A detached run (shutdown) never checkpoints again; the next process resumes it.
      if (a.detached) return new Promise<void>(() => {});
      const d = policy.decide();
      // The replayed turn that called tools is over; what it did not match is not replayed later.
      if (d.afterToolCall) js.replay = [];
      // Not while a resumed run has run no step yet (one resumed paused pauses first, at the
      // step before the one it was cut in): the journal answers that step's calls only from the
      // checkpoint they name.
      if (d.write && (js.replay.length === 0 || turned) && (forker === undefined || forker.live)) {
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
      // Scripted models read their scriptFile from <data>/scripts/ only (never the server's cwd).
      baseDir: serverScriptsDir(this.store.dir),
      humanInput: this.o.humanInput ?? 'wait',
    };
    if (validated) options.validate = false;
    if (inner) options.tools = journaledTools(inner, js);
    if (this.o.models) options.models = this.o.models;
    if (this.o.env) options.env = this.o.env;
    if (this.o.outbound) options.outbound = this.o.outbound;
    if (this.o.secrets) options.secrets = this.o.secrets;
    if (spec.answers) options.answers = spec.answers;
    if (spec.pins) options.pins = spec.pins;
    // Continue after the last event on disk: events written after the checkpoint stay in the
    // log as history, and the replayed turn's events follow them with no gap and no duplicate.
    if (cp) options.resume = { ...cp, seq: log.lastSeq };
    // A fork replays its past run up to the fork point (a fork resumed after a restart has lost
    // that plan and continues live from its checkpoint).
    const plan = this.forks.get(runId);
    this.forks.delete(runId);
    if (plan && !cp) forker = forkRunOptions(plan, options, spec.flow);
    const handle = runFlow(spec.flow, spec.input, options);
    const f = forker;
    f?.signal.addEventListener(
      'abort',
      () =>
        handle.send({
          type: 'cancel',
          reason: `the flow differs from run ${plan!.parentRunId} before the fork point: ${f.miss?.message ?? ''}`,
        }),
      { once: true },
    );
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
    if (pauseForStorage(rec, se)) rec.updatedAt = rec.pausedBy!.at;
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
    this.recovery.forget(a.runId);
    // Serialising the catalog takes a while on a big one; the run's last frame goes out first.
    await afterPoll();
    await this.store.catalog.save();
  }

  /**
   * Sends a command to a live run or throws RunNotLiveError. A run on a worker (Redis) answers
   * asynchronously: the promise rejects with RunNotLiveError when the run had ended (see
   * sendCommand for the window where that cannot be known yet), or with an HttpError 503 when
   * Redis did not confirm the command in time.
   */
  command(runId: string, cmd: RunCommand): undefined | Promise<void> {
    if (this.attached?.owns(runId)) {
      this.attached.command(runId, cmd);
      return;
    }
    if (this.remote?.has(runId))
      return this.remote.command(runId, cmd).then((ended) => {
        if (ended !== undefined) throw new RunNotLiveError(runId, ended);
      });
    const a = this.active.get(runId);
    if (!a) {
      const rec = this.store.catalog.data.runs[runId];
      throw new RunNotLiveError(runId, rec?.status ?? 'unknown');
    }
    // Still hosted while its log and entry close, but over: the engine would drop the command,
    // and a client told 202 would wait for an effect that never comes.
    if (a.ended !== undefined) throw new RunNotLiveError(runId, a.ended);
    a.send(cmd);
  }

  /**
   * Continues a run that is not hosted by any process from its last checkpoint, or marks it
   * interrupted when that is impossible (see run-recovery.ts).
   */
  resumeStored(
    runId: string,
    opts: { pause?: boolean; allowInterrupted?: boolean } = {},
  ): Promise<'resumed' | 'interrupted' | 'final'> {
    // Workers take runs over by themselves; nothing executes here.
    if (this.remote) return Promise.resolve('interrupted');
    return this.recovery.resumeStored(runId, opts);
  }

  /** On start: every run the last process left live is resumed, paused by the disk, or interrupted. */
  recover(): ReturnType<RunRecovery['recover']> {
    if (this.remote)
      return this.remote.recover().then((resumed) => ({ resumed, interrupted: [], final: [], paused: [] }));
    return this.recovery.recover();
  }

  /**
   * Stops hosting: nothing more is recorded, logs are flushed and closed, and the runs stay
   * `running` in the index so the next process resumes them from their checkpoints.
   */
  async detachAll(): Promise<Error[]> {
    this.closing = true;
    this.unsubscribe();
    const errors: Error[] = [];
    await this.remote?.close().catch((e: Error) => errors.push(e));
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
