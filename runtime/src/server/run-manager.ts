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
import { serverScriptsDir } from '../models/script-file.js';
import type { RunRecord } from '../store/catalog.js';
import { StoreError } from '../store/errors.js';
import type { EventLog, LogLine } from '../store/event-log.js';
import type { GroupCommit } from '../store/group-commit.js';
import type { RunSpec } from '../store/run-files.js';
import type { Store } from '../store/store.js';
import type { ToolJournal } from '../store/tool-journal.js';
import type { ToolHost } from '../tools/types.js';
import { CheckpointPolicy, type SliceOptions } from './checkpoint-policy.js';
import { type JournalState, journaledTools, journalState } from './journaled-tools.js';
import { afterPoll } from './loop-turn.js';

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

  constructor(private readonly o: RunManagerOptions) {
    this.log = o.logger ?? silent;
  }

  private get store(): Store {
    return this.o.store;
  }

  private loadEngine(): Promise<RunFlow> {
    if (this.o.runFlow) return Promise.resolve(this.o.runFlow);
    this.engine ??= import('../engine/index.js').then((m) => (m as { runFlow: RunFlow }).runFlow);
    return this.engine;
  }

  isLive(runId: string): boolean {
    return this.active.has(runId);
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
      counters: { turns: 0, promptTokens: 0, completionTokens: 0, toolCalls: 0 },
      resumes: 0,
      source: p.source,
    };
    this.store.catalog.data.runs[runId] = record;
    await this.store.catalog.save();
    const spec: RunSpec = { version: 1, runId, flow, input: p.input, createdAt: t };
    if (p.answers) spec.answers = p.answers;
    await this.store.writeSpec(spec);
    const a = this.launch(runFlow, record, spec, undefined, true);
    for (const nodeId of p.breakpoints ?? []) a.send({ type: 'breakpoint', nodeId, on: true });
    return record;
  }

  /**
   * Applies one event to the run's index entry. Returns whether the entry on disk must follow
   * now: only a pause (or its end) changes what recovery does with a run — it resumes paused
   * runs paused and every other live one running — and a final status is written once the
   * log under it is durable (settle). The in-memory index, which the API reads, is current.
   */
  private track(rec: RunRecord, ev: RunEvent): boolean {
    rec.lastSeq = ev.seq;
    const before = rec.status;
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
      case 'turn.completed':
        rec.counters.turns++;
        rec.counters.promptTokens += ev.usage.promptTokens;
        rec.counters.completionTokens += ev.usage.completionTokens;
        changed = false;
        break;
      case 'tool.called':
        rec.counters.toolCalls++;
        changed = false;
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
    this.watch(runId, commit, policy);
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
    let nextSeq = log.lastSeq + 1;
    const onEvent = (ev: RunEvent) => {
      if (a.detached || commit.failed) return;
      if (ev.seq !== nextSeq) {
        // The log must stay contiguous; an engine that skips or repeats a seq is a bug to surface.
        this.log.error(
          { runId, seq: ev.seq, expected: nextSeq },
          'engine emitted an out-of-order seq; dropped',
        );
        return;
      }
      commit.append(ev);
      nextSeq++;
      policy.onEvent(ev);
      if (this.track(record, ev)) this.saveSoon();
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

  /** Publishes a run's events once durable, and reports a store that can no longer write. */
  private watch(runId: string, commit: GroupCommit, policy?: CheckpointPolicy): void {
    const { publish, publishWritten } = this.o;
    commit.onDurable = publish
      ? (events, lines) => {
          const watchers = publish(runId, events, lines);
          if (typeof watchers === 'number') policy?.watchedBy(watchers);
        }
      : undefined;
    commit.onWritten = publishWritten
      ? (events, lines) => {
          const watchers = publishWritten(runId, events, lines);
          if (typeof watchers === 'number') policy?.watchedBy(watchers);
        }
      : undefined;
    commit.onError = (e) =>
      this.log.error({ runId, file: commit.log.file, err: e.message }, 'run log cannot be written');
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
    if (!FINAL.has(rec.status)) {
      // The engine ended without a final event in the log (should not happen): record the result.
      rec.status = r.status;
      if (r.error) rec.error = r.error;
      if (r.output !== undefined) rec.output = r.output;
      rec.endedAt = rec.updatedAt = nowIso();
    }
    if (r.status === 'completed' && rec.output === undefined) rec.output = r.output;
    if (a.commit.failed && rec.status !== 'failed') {
      rec.status = 'failed';
      rec.error = { code: 'store', message: `the run log cannot be written: ${a.commit.failed.message}` };
    }
    await this.store.closeLog(a.runId);
    a.journal.close();
    this.active.delete(a.runId);
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
      this.watch(rec.id, commit);
      commit.append(ev);
      this.track(rec, ev);
      await this.store.closeLog(rec.id);
    } catch (e) {
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
    let log: EventLog;
    try {
      const opened = this.store.openLog(runId);
      log = opened.log;
      if (opened.torn)
        this.log.warn(
          { runId, file: log.file, ...opened.torn },
          'cut a torn record at the end of the run log',
        );
    } catch (e) {
      await this.interrupt(rec, `the run log cannot be read: ${(e as Error).message}`);
      await this.store.catalog.save();
      return 'interrupted';
    }
    // The log is the truth: the process may have died after the final event but before the index.
    const finalRe = opts.allowInterrupted
      ? /^run\.(completed|failed|cancelled)$/
      : /^run\.(completed|failed|cancelled|interrupted)$/;
    const final = [...log.events].reverse().find((e) => e.runId === runId && finalRe.test(e.type));
    if (final) {
      for (const e of log.events.slice(-1)) this.track(rec, e);
      this.track(rec, final);
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
      this.log.error(
        { runId, file: (e as StoreError).file, err: (e as Error).message },
        'run file is damaged',
      );
      await this.interrupt(rec, `a run file is damaged: ${(e as Error).message}`);
      await this.store.catalog.save();
      return 'interrupted';
    }
    if (!spec || !cp) {
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
    rec.resumes++;
    rec.status = 'running';
    rec.lastSeq = log.lastSeq;
    const a = this.launch(runFlow, rec, spec, cp);
    if (opts.pause) a.send({ type: 'pause' });
    await this.store.catalog.save();
    this.log.info({ runId, fromSeq: cp.seq, logSeq: log.lastSeq }, 'run resumed from its checkpoint');
    return 'resumed';
  }

  /** On start: every run the last process left live is resumed or marked interrupted. */
  async recover(): Promise<{ resumed: string[]; interrupted: string[]; final: string[] }> {
    const out = { resumed: [] as string[], interrupted: [] as string[], final: [] as string[] };
    for (const rec of Object.values(this.store.catalog.data.runs)) {
      if (FINAL.has(rec.status) || this.active.has(rec.id)) continue;
      const wasPaused = rec.status === 'paused';
      try {
        const r = await this.resumeStored(rec.id, { pause: wasPaused });
        out[r].push(rec.id);
      } catch (e) {
        this.log.error({ runId: rec.id, err: (e as Error).message }, 'could not recover run');
        await this.interrupt(rec, `recovery failed: ${(e as Error).message}`);
        out.interrupted.push(rec.id);
      }
    }
    await this.store.catalog.save();
    return out;
  }

  /**
   * Stops hosting: nothing more is recorded, logs are flushed and closed, and the runs stay
   * `running` in the index so the next process resumes them from their checkpoints.
   */
  async detachAll(): Promise<void> {
    this.closing = true;
    for (const a of [...this.active.values()]) {
      a.detached = true;
      a.abort.abort(new Error('server shutting down'));
      await this.store.closeLog(a.runId);
      a.journal.close();
      this.active.delete(a.runId);
    }
    // Runs that ended just before are still writing their index entry.
    await Promise.all([...this.settling]);
    await this.store.catalog.save();
  }
}

export { StoreError };
