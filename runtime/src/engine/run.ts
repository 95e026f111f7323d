/**
 * The interpreter. Control flow is an explicit state machine over cursors (see state.ts): each
 * loop iteration runs one node of one cursor and moves the cursor along edges, into and out of
 * team scopes; parallel branches are child cursors joined in a deterministic order. Nothing
 * recurses per node, so a chain of 10,000 agents runs on Node's default stack, and the whole
 * control position is plain data that is checkpointed after every turn.
 *
 * Events are stamped here (runId, seq, ts, scripted) and delivered synchronously in seq order.
 * Commands are applied between events: every await point of the loop passes a gate that is a
 * single flag test when nothing is pending, so the hot path adds no macrotask.
 */

import { setMaxListeners } from 'node:events';
import {
  asText,
  type BehaviorEvent,
  type Candidate,
  type ConditionContext,
  type Counters,
  defaultRegistry,
  type FlowBehavior,
  firstAfter,
  getPath,
  INBOX_PRIORITY,
  type InboxItem,
  type KindRegistry,
  type MemoryPolicy,
  type Message,
  type ModelCall,
  type ModelPort,
  type ModelReply,
  memoryView,
  type NodeContext,
  NodeError,
  type ObserverBehavior,
  type ObserverContext,
  renderTemplate,
  type StateAccess,
  type StepOutcome,
  type Summary,
  type TeamBehavior,
  type TeamContext,
  type ToolPort,
  threadView,
} from '@switchboard/nodes/core';
import type { EventError, Flow, RunEvent } from '@switchboard/schemas';
import { dict, ownValue } from '@switchboard/schemas/core';
import { defaultModelFactory } from '../models/factory.js';
import {
  ModelError,
  type ModelFactoryContext,
  type ModelProvider,
  type ModelRequest,
} from '../models/types.js';
import { pinnedBehaviors } from '../pins/behavior.js';
import type { ElicitationAnswer, ElicitationAsk, ToolHandle, ToolHostContext } from '../tools/types.js';
import { type AcpBackendConfig, type AcpSession, acpBehavior } from './acp-agent.js';
import { type BudgetHit, BudgetTracker } from './budgets.js';
import { answerElicitation, elicitationFromText } from './elicitation.js';
import { errorInfo, operatorRefusal } from './error-info.js';
import { Cancelled, RunFailure } from './errors.js';
import type { EventQueue } from './event-queue.js';
import { compileFlow, type GEdge, type GNode, type Graph, joinNode } from './graph.js';
import { edgesWithoutHandover, handoverParameters } from './handover-policy.js';
import { DEFAULT_MAX_STEPS, MAX_DELEGATION_DEPTH } from './limits.js';
import { grantMic, releaseMicLeaving } from './mic.js';
import { flowSecrets, RequestRecorder } from './request-log.js';
import {
  type CheckpointData,
  type Cursor,
  newRunData,
  type RunData,
  restoreRunData,
  rootScope,
  type Scope,
} from './state.js';
import type { RunCheckpoint, RunCommand, RunOptions, RunResult, RunStatus } from './types.js';

const MAX_TOOL_RESULT_IN_EVENT = 64 * 1024;

/** A message as `message` events carry it. */
type MessageEventBody = Pick<Message, 'seq' | 'role' | 'author' | 'content'>;

/** A run context: the top-level run or a delegated (nested) run sharing budgets and state. */
interface Ctx {
  runId: string;
  parentRunId?: string;
  parentCallId?: string;
  data: RunData;
  depth: number;
  /** `data.state` as behaviours access it. */
  state: StateView;
}

interface Failed {
  failed: EventError;
}

type Outcome = StepOutcome & { escalateTo?: string };

function isFailed(o: Outcome | Failed): o is Failed {
  return (o as Failed).failed !== undefined;
}

const NO_TOOLS: Promise<ToolPort[]> = Promise.resolve([]);
const NO_BUDGETS: NonNullable<RunOptions['budgets']> = {};
const SETTLED: Promise<void> = Promise.resolve();
const SYSTEM_CLOCK: { now(): number } = { now: Date.now };

// The tables most runs never fill (breakpoints, early answers, waiting humans, tool and ACP
// handles) share one empty instance until their first entry: an empty Map costs ~270 bytes,
// and a process running many runs at once carries and collects them all (bench gate e).
const NO_ENTRIES: ReadonlyMap<string, never> = new Map<string, never>();
const NO_NAMES: ReadonlySet<string> = new Set<string>();

/** `t`, or a new table of the run's own if `t` is the shared empty one. */
function own<V>(t: ReadonlyMap<string, V>): Map<string, V> {
  return t === NO_ENTRIES ? new Map() : (t as Map<string, V>);
}

function ownSet(t: ReadonlySet<string>): Set<string> {
  return t === NO_NAMES ? new Set() : (t as Set<string>);
}
const NO_ITEMS: readonly InboxItem[] = [];
const NO_SEQS: readonly number[] = [];

function emptyUsage() {
  return { turns: 0, promptTokens: 0, completionTokens: 0 };
}

export class Run {
  readonly runId: string;
  status: RunStatus = 'pending';
  readonly graph: Graph;
  /** Undoes what the run registered on the host's signal. */
  private unlisten: (() => void) | undefined;
  private seq = 0;
  private ended = false;
  private scripted = false;
  private readonly providers = new Map<string, ModelProvider>();
  private readonly abort = new AbortController();
  readonly signal: AbortSignal = this.abort.signal;
  private stop: RunFailure | Cancelled | undefined;
  private pauseRequested = false;
  private stepping = false;
  private pauseGate: { promise: Promise<void>; resolve: () => void } | undefined;
  private breakpoints: ReadonlySet<string> = NO_NAMES;
  private pendingAnswers: ReadonlyMap<string, string[]> = NO_ENTRIES;
  private waiters: ReadonlyMap<string, (answer: string) => void> = NO_ENTRIES;
  private cpChain: Promise<void> = SETTLED;
  /** No checkpoint is being saved: the next one may be handed over at once. */
  private cpIdle = true;
  private readonly maxSteps: number;
  private readonly maxTokens: number | undefined;
  /** Node, team and cost budgets and budget warnings; undefined when none is set. */
  private readonly budgets: BudgetTracker | undefined;
  private readonly timeoutMs: number | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly now: () => number;
  private readonly top: Ctx;
  private root: Cursor;
  private toolCache: ReadonlyMap<string, Promise<ToolPort[]>> = NO_ENTRIES;
  private readonly onEvent: ((e: RunEvent) => void) | undefined;
  private manyListeners = false;
  /** ACP agent processes of this run, by node id (closed when the run ends). */
  private acpAgents: ReadonlyMap<string, Promise<{ session: AcpSession; close: () => Promise<void> }>> =
    NO_ENTRIES;
  private acpFlow: FlowBehavior | undefined;
  private nestedCount = 0;
  /** Writes the `model.request` events; made on the run's first model call. */
  private recorder: RequestRecorder | undefined;
  /** Behaviours of pinned nodes (../pins/), when the run has pins. */
  private readonly pinned: Map<string, FlowBehavior> | undefined;
  /**
   * Whether an inbox item or a handover floor was ever set in this run (a resumed run may carry
   * some): until then a step does not look its node up in those tables.
   */
  inboxUsed: boolean;
  floorsUsed: boolean;
  readonly registry: KindRegistry;
  readonly clock: { now(): number };

  constructor(
    readonly flow: Flow,
    readonly input: unknown,
    readonly options: RunOptions,
    readonly queue: EventQueue,
    runId: string,
    private readonly done: (r: RunResult) => void,
  ) {
    this.registry = options.registry ?? defaultRegistry;
    this.onEvent = options.onEvent;

    this.graph = compileFlow(flow, this.registry);
    this.now = options.now ?? Date.now;
    this.clock = options.now ? { now: options.now } : SYSTEM_CLOCK;
    this.runId = runId;
    this.inboxUsed = this.floorsUsed = options.resume !== undefined;
    // Merged only when both set budgets: a run usually has no budgets of its own.
    const fb = flow.budgets;
    const ob = options.budgets;
    const b = ob === undefined ? (fb ?? NO_BUDGETS) : fb === undefined ? ob : { ...fb, ...ob };
    this.maxSteps = b.maxSteps ?? DEFAULT_MAX_STEPS;
    this.maxTokens = b.maxTokens;
    this.budgets = BudgetTracker.create(flow, b, new Set(this.graph.members.keys()));
    this.pinned = options.pins?.length ? pinnedBehaviors(options.pins, flow) : undefined;
    this.timeoutMs = b.timeoutMs;
    const cp = options.resume?.data as CheckpointData | undefined;
    if (options.resume) {
      if (cp?.v !== 1 || !cp.root || !cp.data)
        throw new RunFailure('flow_invalid', 'the checkpoint is not a version 1 engine checkpoint');
      if (options.resume.flowId !== flow.id)
        throw new RunFailure(
          'flow_invalid',
          `the checkpoint belongs to flow "${options.resume.flowId}", not "${flow.id}"`,
        );
      this.seq = options.resume.seq;
      const data = restoreRunData(cp.data);
      this.top = { runId: this.runId, data, depth: 0, state: new StateView(data) };
      this.root = cp.root;
      if (cp.breakpoints?.length) this.breakpoints = new Set(cp.breakpoints);
      const answers = new Map<string, string[]>();
      for (const [key, list] of Object.entries(cp.answers ?? {})) answers.set(key, [...list]);
      if (answers.size > 0) this.pendingAnswers = answers;
    } else {
      const data = newRunData(input);
      this.top = { runId: this.runId, data, depth: 0, state: new StateView(data) };
      this.root = { at: this.graph.start.id, scopes: [rootScope(this.now())] };
    }
    let fctx: ModelFactoryContext | undefined;
    for (const name of Object.keys(flow.models)) {
      const config = flow.models[name]!;
      const given = options.models;
      let p: ModelProvider | undefined;
      if (given && typeof given !== 'function') p = ownValue(given, name);
      else {
        fctx ??= this.factoryCtx();
        p = given ? given(name, config, fctx) : defaultModelFactory(name, config, fctx);
      }
      if (!p) continue;
      if (p.scripted) this.scripted = true;
      const snap = ownValue(cp?.providers, name);
      const restorable = p as unknown as { restore?: (s: unknown) => void };
      if (snap !== undefined && typeof restorable.restore === 'function') restorable.restore(snap);
      this.providers.set(name, p);
    }
    const host = options.signal;
    if (host) {
      if (host.aborted) queueMicrotask(() => this.cancel('aborted by the host'));
      else {
        const onAbort = () => this.cancel('aborted by the host');
        host.addEventListener('abort', onAbort, { once: true });
        // A long-lived host signal must not keep finished runs alive.
        this.unlisten = () => host.removeEventListener('abort', onAbort);
      }
    }
  }

  private factoryCtx() {
    const env = this.options.env ?? (typeof process !== 'undefined' ? process.env : {});
    const ctx: ModelFactoryContext = {
      resolveEnv: (v) => {
        if (v === undefined) return undefined;
        const m = /^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(v);
        return m ? ownValue(env, m[1]!) : v;
      },
    };
    if (this.options.baseDir !== undefined) ctx.baseDir = this.options.baseDir;
    if (this.options.allowLocalModels) ctx.allowLocalEndpoints = true;
    if (this.options.outbound) ctx.outbound = this.options.outbound;
    if (this.options.secrets) ctx.secrets = this.options.secrets;
    return ctx;
  }

  // -------------------------------------------------------------------------------------------
  // Events

  emit(cx: Ctx, e: Record<string, unknown>): void {
    if (this.ended) return;
    e.runId = cx.runId;
    e.seq = ++this.seq;
    e.ts = this.now();
    if (this.scripted) e.scripted = true;
    if (cx.parentRunId !== undefined) {
      e.parentRunId = cx.parentRunId;
      e.parentCallId = cx.parentCallId;
    }
    this.deliver(e as unknown as RunEvent);
  }

  private deliver(ev: RunEvent): void {
    if (this.onEvent !== undefined) this.onEvent(ev);
    if (this.queue.active) this.queue.push(ev);
  }

  // The events of every step are built whole, in emit()'s key order (fields, runId, seq, ts,
  // scripted): stamping a built event adds four properties, each a shape transition, and
  // allocates its property array twice — about 60 ns an event, seven events a step (bench gate
  // e). Events of nested runs carry two more fields and go through emit().

  private direct(cx: Ctx): boolean {
    return cx.parentRunId === undefined && !this.ended;
  }

  /** node.started, and node.completed without output. */
  private emitNode(cx: Ctx, type: 'node.started' | 'node.completed', nodeId: string): void {
    if (!this.direct(cx)) {
      this.emit(cx, { type, nodeId });
      return;
    }
    const runId = cx.runId;
    const seq = ++this.seq;
    const ts = this.now();
    const e = this.scripted
      ? { type, nodeId, runId, seq, ts, scripted: true }
      : { type, nodeId, runId, seq, ts };
    this.deliver(e as RunEvent);
  }

  private emitTurnStarted(cx: Ctx, nodeId: string, turn: number): void {
    const type = 'turn.started';
    if (!this.direct(cx)) {
      this.emit(cx, { type, nodeId, turn });
      return;
    }
    const runId = cx.runId;
    const seq = ++this.seq;
    const ts = this.now();
    const e = this.scripted
      ? { type, nodeId, turn, runId, seq, ts, scripted: true }
      : { type, nodeId, turn, runId, seq, ts };
    this.deliver(e as RunEvent);
  }

  private emitHandover(cx: Ctx, nodeId: string, edge: GEdge): void {
    const type = 'handover';
    const edgeId = edge.id;
    const from = edge.source;
    const to = edge.target;
    if (!this.direct(cx)) {
      this.emit(cx, { type, nodeId, edgeId, from, to });
      return;
    }
    const runId = cx.runId;
    const seq = ++this.seq;
    const ts = this.now();
    const e = this.scripted
      ? { type, nodeId, edgeId, from, to, runId, seq, ts, scripted: true }
      : { type, nodeId, edgeId, from, to, runId, seq, ts };
    this.deliver(e as RunEvent);
  }

  private emitMessage(cx: Ctx, message: MessageEventBody, nodeId: string): void {
    const type = 'message';
    if (!this.direct(cx)) {
      this.emit(cx, { type, message, nodeId });
      return;
    }
    const runId = cx.runId;
    const seq = ++this.seq;
    const ts = this.now();
    const e = this.scripted
      ? { type, message, nodeId, runId, seq, ts, scripted: true }
      : { type, message, nodeId, runId, seq, ts };
    this.deliver(e as RunEvent);
  }

  private emitModelCompleted(cx: Ctx, nodeId: string, res: ModelReply): void {
    const type = 'model.completed';
    const text = res.text;
    const usage = { promptTokens: res.usage.promptTokens, completionTokens: res.usage.completionTokens };
    const model = res.model;
    const finishReason = res.finishReason;
    if (!this.direct(cx)) {
      this.emit(cx, { type, nodeId, text, usage, model, finishReason });
      return;
    }
    const runId = cx.runId;
    const seq = ++this.seq;
    const ts = this.now();
    const e = this.scripted
      ? { type, nodeId, text, usage, model, finishReason, runId, seq, ts, scripted: true }
      : { type, nodeId, text, usage, model, finishReason, runId, seq, ts };
    this.deliver(e as RunEvent);
  }

  private emitTurnCompleted(cx: Ctx, nodeId: string, turn: number, usage: object, model: string): void {
    const type = 'turn.completed';
    if (!this.direct(cx)) {
      this.emit(cx, { type, nodeId, turn, usage, model });
      return;
    }
    const runId = cx.runId;
    const seq = ++this.seq;
    const ts = this.now();
    const e = this.scripted
      ? { type, nodeId, turn, usage, model, runId, seq, ts, scripted: true }
      : { type, nodeId, turn, usage, model, runId, seq, ts };
    this.deliver(e as RunEvent);
  }

  // -------------------------------------------------------------------------------------------
  // Lifecycle

  /**
   * Runs the run to its end. Not an async function: its frame and its await would last the
   * whole run, and a process running many runs at once starts them all together (bench gate e).
   */
  start(): Promise<void> {
    this.status = 'running';
    const cx = this.top;
    let driven: Promise<void>;
    try {
      if (this.options.resume) this.emit(cx, { type: 'run.resumed', fromCheckpoint: true });
      else {
        const fork = this.options.forkedFrom;
        this.emit(cx, {
          type: 'run.started',
          flowId: this.flow.id,
          input: this.input as never,
          ...(fork ? { forkedFrom: fork } : {}),
          ...(this.options.pins?.length ? { pins: this.options.pins } : {}),
        });
        this.appendMessage(cx, { role: 'user', author: 'user', content: cx.data.task });
      }
      if (this.timeoutMs !== undefined) {
        this.timer = setTimeout(
          () => this.exceeded(cx, 'time', this.timeoutMs!, this.timeoutMs!),
          this.timeoutMs,
        );
        (this.timer as { unref?: () => void }).unref?.();
      }
      driven = this.drive(cx, this.root);
    } catch (e) {
      try {
        this.endedBy(cx, e);
      } catch (e2) {
        return Promise.reject(e2);
      }
      return SETTLED;
    }
    return driven.then(
      () => {
        try {
          if (this.stop) throw this.stop;
          const d = cx.data;
          const last = d.transcript[d.transcript.length - 1];
          const output = d.hasOutput ? d.output : last ? (last.json ?? last.content) : '';
          this.emit(cx, { type: 'run.completed', output: output as never });
          this.finish({ runId: this.runId, status: 'completed', output });
        } catch (e) {
          this.endedBy(cx, e);
        }
      },
      (e) => this.endedBy(cx, e),
    );
  }

  /** The run ends on an error: cancelled, or failed. */
  private endedBy(cx: Ctx, e: unknown): void {
    const stop = this.stop ?? e;
    if (stop instanceof Cancelled) {
      this.finish({ runId: this.runId, status: 'cancelled' });
      return;
    }
    const error = errorInfo(stop);
    this.emit(cx, { type: 'run.failed', error });
    this.finish({
      runId: this.runId,
      status: 'failed',
      error: { code: error.code, message: error.message },
    });
  }

  private finish(r: RunResult): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.status === 'completed' || this.status === 'failed' || this.status === 'cancelled') return;
    this.status = r.status;
    this.ended = true;
    this.queue.close();
    this.pauseGate?.resolve();
    const release = this.options.tools?.release(this.runId);
    if (release) release.catch(() => {});
    for (const a of this.acpAgents.values()) a.then((x) => x.close()).catch(() => {});
    this.unlisten?.();
    this.done(r);
  }

  cancel(reason?: string): void {
    if (this.ended || this.stop) return;
    this.stop = new Cancelled(reason ?? 'cancelled');
    const ev: Record<string, unknown> = { type: 'run.cancelled' };
    if (reason !== undefined) ev.reason = reason;
    this.emit(this.top, ev);
    this.ended = true; // nothing follows run.cancelled
    this.abort.abort(this.stop);
    for (const w of this.waiters.values()) w('');
    this.finish({ runId: this.runId, status: 'cancelled' });
  }

  /** The host ended the run by name: stop it, fail it with that code and abort what is in flight. */
  private failByHost(code: string, message: string): void {
    if (this.stop) return;
    const stop = new RunFailure(code, message);
    this.stop = stop;
    const error = errorInfo(stop);
    this.emit(this.top, { type: 'run.failed', error });
    this.finish({ runId: this.runId, status: 'failed', error: { code: error.code, message: error.message } });
    this.abort.abort(stop);
    for (const w of this.waiters.values()) w('');
  }

  /** A budget ran out: say so, stop the run and abort whatever is in flight. */
  private exceeded(
    cx: Ctx,
    budget: string,
    limit: number,
    used: number,
    where?: { scope: string; nodeId: string },
  ): void {
    if (this.stop) return;
    if (where) this.emit(cx, { type: 'budget.exceeded', budget, limit, used, ...where });
    else this.emit(cx, { type: 'budget.exceeded', budget, limit, used });
    const stop = new RunFailure(
      'budget_exceeded',
      `the ${budget} budget of ${where ? `${where.scope} "${where.nodeId}" ` : ''}${limit} was exceeded (${used})`,
    );
    this.stop = stop;
    // The run ends now, whatever is in flight: a call that ignores its abort cannot hold it open.
    const error = errorInfo(stop);
    this.emit(this.top, { type: 'run.failed', error });
    this.finish({ runId: this.runId, status: 'failed', error: { code: error.code, message: error.message } });
    this.abort.abort(stop);
    for (const w of this.waiters.values()) w('');
  }

  // -------------------------------------------------------------------------------------------
  // Commands

  send(cmd: RunCommand): void {
    if (this.ended) return;
    switch (cmd.type) {
      case 'cancel':
        this.cancel(cmd.reason);
        return;
      case 'fail':
        this.failByHost(cmd.code, cmd.message);
        return;
      case 'pause':
        this.pauseRequested = true;
        return;
      case 'resume':
        this.stepping = false;
        this.pauseRequested = false;
        this.releasePause();
        return;
      case 'step':
        this.stepping = true;
        this.pauseRequested = false;
        this.releasePause();
        return;
      case 'breakpoint':
        if (cmd.on) {
          const b = ownSet(this.breakpoints);
          b.add(cmd.nodeId);
          this.breakpoints = b;
        } else ownSet(this.breakpoints).delete(cmd.nodeId);
        return;
      case 'inject': {
        const cx = this.top;
        const item: Omit<InboxItem, 'order'> = { kind: 'user', text: cmd.text, from: 'user' };
        const msg: Omit<Message, 'seq'> = { role: 'user', author: 'user', content: cmd.text };
        if (cmd.nodeId !== undefined) {
          msg.to = cmd.nodeId;
          this.addInbox(cx, cmd.nodeId, item);
        }
        this.appendMessage(cx, msg);
        return;
      }
      case 'answer': {
        const key = cmd.nodeId ?? [...this.waiters.keys()][0] ?? '*';
        const w = this.waiters.get(key);
        if (w) w(cmd.answer);
        else {
          const l = this.pendingAnswers.get(key) ?? [];
          l.push(cmd.answer);
          const answers = own(this.pendingAnswers);
          answers.set(key, l);
          this.pendingAnswers = answers;
        }
        return;
      }
    }
  }

  private releasePause(): void {
    const g = this.pauseGate;
    if (!g) return;
    this.pauseGate = undefined;
    g.resolve();
  }

  /** Between events: a flag test, unless a pause, a stop or a step is pending. */
  private gate(cx: Ctx): Promise<void> | undefined {
    if (this.stop) throw this.stop;
    if (this.pauseRequested || this.pauseGate) return this.pauseNow(cx, 'requested');
    return undefined;
  }

  /** `nodeId`: the node the run stops before (a breakpoint), named in run.paused. */
  private async pauseNow(cx: Ctx, reason: string, nodeId?: string): Promise<void> {
    if (!this.pauseGate) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.pauseGate = { promise, resolve };
      this.pauseRequested = false;
      this.status = 'paused';
      this.emit(
        cx,
        nodeId === undefined ? { type: 'run.paused', reason } : { type: 'run.paused', nodeId, reason },
      );
      await this.checkpoint(cx);
      await promise;
      if (this.stop) throw this.stop;
      this.status = 'running';
      this.emit(cx, { type: 'run.resumed' });
      return;
    }
    await this.pauseGate.promise;
    if (this.stop) throw this.stop;
  }

  // -------------------------------------------------------------------------------------------
  // Checkpoints

  /**
   * Hands the run's position to the host, in order: at once when no earlier one is still being
   * saved (most turns: a host that is done with it returns nothing and the turn goes on
   * without a microtask), else after the earlier one.
   */
  private checkpoint(cx: Ctx): Promise<void> | undefined {
    const save = this.options.checkpoint;
    if (!save || cx.depth > 0) return undefined;
    if (this.cpIdle) {
      if (this.stop) return undefined;
      const saving = save(this.snapshot());
      if (saving === undefined) return undefined;
      return this.trackSave(saving);
    }
    return this.trackSave(this.cpChain.then(() => (this.stop ? undefined : save(this.snapshot()))));
  }

  /** The checkpoint being saved; the next one waits for it. */
  private trackSave(saving: Promise<void>): Promise<void> {
    this.cpIdle = false;
    const p: Promise<void> = saving.then(() => {
      if (this.cpChain === p) this.cpIdle = true;
    });
    this.cpChain = p;
    return p;
  }

  /** The run's position as plain data; valid until the next turn, so hosts serialise it at once. */
  snapshot(): RunCheckpoint {
    const providers = dict<unknown>();
    for (const [name, p] of this.providers) {
      const s = p as unknown as { snapshot?: () => unknown };
      if (typeof s.snapshot === 'function') providers[name] = s.snapshot();
    }
    const data: CheckpointData = { v: 1, root: this.root, data: this.top.data, providers };
    if (this.breakpoints.size > 0) data.breakpoints = [...this.breakpoints];
    if (this.pendingAnswers.size > 0) data.answers = Object.fromEntries(this.pendingAnswers);
    return { version: 1, runId: this.runId, flowId: this.flow.id, seq: this.seq, data };
  }

  // -------------------------------------------------------------------------------------------
  // Budgets

  private countStep(cx: Ctx, nodeId: string): void {
    const c = cx.data.counters;
    if (++c.steps > this.maxSteps) {
      this.emit(cx, {
        type: 'budget.exceeded',
        nodeId,
        budget: 'steps',
        limit: this.maxSteps,
        used: c.steps,
      });
      this.stop = new RunFailure(
        'budget_exceeded',
        `the step budget of ${this.maxSteps} was exceeded at node "${nodeId}"`,
      );
      throw this.stop;
    }
  }

  // -------------------------------------------------------------------------------------------
  // Transcript and inboxes

  appendMessage(cx: Ctx, m: Omit<Message, 'seq'>, nodeId?: string): Message {
    const msg = m as Message;
    msg.seq = ++cx.data.msgSeq;
    return this.record(cx, msg, nodeId);
  }

  /** Appends a message that already has its seq (the next one). */
  private record(cx: Ctx, msg: Message, nodeId?: string): Message {
    const d = cx.data;
    d.transcript.push(msg);
    const message = { seq: msg.seq, role: msg.role, author: msg.author, content: msg.content };
    if (nodeId !== undefined) this.emitMessage(cx, message, nodeId);
    else this.emit(cx, { type: 'message', message });
    if (this.graph.threads.size > 0) {
      if (this.graph.threads.has(msg.author)) this.addToThread(d, msg.author, msg.seq);
      if (msg.to !== undefined && msg.to !== msg.author && this.graph.threads.has(msg.to))
        this.addToThread(d, msg.to, msg.seq);
    }
    return msg;
  }

  private addToThread(d: RunData, id: string, seq: number): void {
    const t = d.threads[id];
    // Threads of one and two seqs are built whole: a push gives the array room for 17, and most
    // threads (an agent of a chain: what it was handed, what it said) stay that short.
    if (t === undefined) d.threads[id] = [seq];
    else if (t.length === 1) d.threads[id] = [t[0]!, seq];
    else t.push(seq);
  }

  addInbox(cx: Ctx, nodeId: string, item: Omit<InboxItem, 'order'>): void {
    this.inboxUsed = true;
    const d = cx.data;
    d.inbox[nodeId] ??= [];
    const list = d.inbox[nodeId]!;
    const full = item as InboxItem;
    full.order = ++d.inboxOrder;
    list.push(full);
    // Stable by arrival within a priority: tool results, then directives and briefings, then user messages.
    list.sort((a, b) => INBOX_PRIORITY[a.kind] - INBOX_PRIORITY[b.kind] || a.order - b.order);
  }

  // -------------------------------------------------------------------------------------------
  // Models and tools for behaviours

  provider(name: string, nodeId: string): ModelProvider {
    const p = this.providers.get(name);
    if (!p)
      throw new RunFailure(
        'unknown_model',
        `node "${nodeId}" uses model "${name}", which is not in the flow's models`,
      );
    return p;
  }

  /** A model call; `then`, when given, runs in the reaction that accounts for the reply (ModelPort.completeThen). */
  callModel<T = ModelReply>(
    nc: NodeCtx,
    name: string,
    call: ModelCall,
    then?: (reply: ModelReply) => T | PromiseLike<T>,
  ): Promise<T> {
    try {
      const g = this.gate(nc.cx);
      if (g) return g.then(() => this.requestModel(nc, name, call, then));
      return this.requestModel(nc, name, call, then);
    } catch (e) {
      return Promise.reject(this.stop ?? e);
    }
  }

  /** A rejected model call fails with the run's stop when there is one (cancelled, over budget). */
  private readonly rethrowStop = (e: unknown): never => {
    throw this.stop ?? e;
  };

  /**
   * Not an async function: a model call is made on every agent step, and an async frame (its
   * register file, promise and await closures) costs more than one reaction on the provider's promise.
   */
  private requestModel<T>(
    nc: NodeCtx,
    name: string,
    call: ModelCall,
    then: ((reply: ModelReply) => T | PromiseLike<T>) | undefined,
  ): Promise<T> {
    const cx = nc.cx;
    const provider = this.provider(name, nc.node.id);
    const nodeId = nc.node.id;
    this.recordRequest(nc, name, call);
    const req: ModelRequest = { nodeId, messages: call.messages, signal: this.signal };
    if (call.tools) req.tools = call.tools;
    if (call.jsonSchema) req.jsonSchema = call.jsonSchema;
    req.onDelta = (text) => this.emit(cx, { type: 'model.delta', nodeId, text });
    // A provider that asks again with corrections appended sends other messages: a request of its own.
    const sent = call.messages.length;
    req.onCorrection = (c) => {
      const messages = call.messages.slice(0, sent);
      for (const content of c) messages.push({ role: 'user', content });
      this.recordRequest(nc, name, { ...call, messages });
    };
    req.onRetry = (i) =>
      this.emit(cx, { type: 'model.retry', nodeId, attempt: i.attempt, delayMs: i.delayMs, cause: i.cause });
    const done = provider.complete(req);
    if (then === undefined)
      return done.then((res) => this.modelReplied(nc, res, name) as T, this.rethrowStop);
    return done.then((res) => then(this.modelReplied(nc, res, name)), this.rethrowStop);
  }

  /** The `model.request` event of a call about to be made: what is sent, secrets redacted. */
  private recordRequest(nc: NodeCtx, name: string, call: ModelCall): void {
    if (this.ended) return;
    if (this.recorder === undefined) {
      const env = this.options.env ?? (typeof process !== 'undefined' ? process.env : {});
      this.recorder = new RequestRecorder(this.flow.models, flowSecrets(this.flow, env));
    }
    const nodeId = nc.node.id;
    const ctx = { nodeId, turn: nc.turn, attempt: nc.attempt, call: ++nc.calls, model: name };
    const e = this.recorder.build(ctx, call);
    this.emit(nc.cx, e);
    if (typeof e.seq === 'number') this.recorder.sent(nodeId, e.seq, call.messages);
  }

  private modelReplied(nc: NodeCtx, res: ModelReply, modelKey?: string): ModelReply {
    if (this.stop) throw this.stop;
    const cx = nc.cx;
    const u = res.usage;
    const d = cx.data;
    const c = d.counters;
    c.promptTokens += u.promptTokens;
    c.completionTokens += u.completionTokens;
    c.tokens += u.promptTokens + u.completionTokens;
    let bm = c.byModel[res.model];
    if (bm == null) c.byModel[res.model] = bm = emptyUsage();
    bm.turns++;
    bm.promptTokens += u.promptTokens;
    bm.completionTokens += u.completionTokens;
    nc.promptTokens += u.promptTokens;
    nc.completionTokens += u.completionTokens;
    nc.modelName = res.model;
    this.emitModelCompleted(cx, nc.node.id, res);
    if (this.budgets) this.chargeBudgets(nc, u, modelKey, c.tokens);
    if (this.maxTokens !== undefined && c.tokens > this.maxTokens) {
      this.exceeded(cx, 'tokens', this.maxTokens, c.tokens);
      throw this.stop;
    }
    return res;
  }

  /** Node, team and cost budgets: warnings as events, the first budget spent stops the run. */
  private chargeBudgets(
    nc: NodeCtx,
    u: ModelReply['usage'],
    modelKey: string | undefined,
    runTokens: number,
  ): void {
    const cx = nc.cx;
    const counters = cx.data.counters;
    // A null-prototype table: node ids are data (and it survives checkpoints as plain JSON).
    counters.budgetUse ??= dict<number>();
    const hits: BudgetHit[] = this.budgets!.charge(
      nc.node.id,
      nc.node.ancestors,
      modelKey,
      u,
      runTokens,
      counters.budgetUse,
    );
    for (const h of hits) {
      const where = h.scope && h.nodeId ? { scope: h.scope, nodeId: h.nodeId } : undefined;
      if (h.kind === 'warning')
        this.emit(cx, {
          type: 'budget.warning',
          budget: h.budget,
          limit: h.limit,
          used: h.used,
          fraction: h.fraction,
          ...(where ?? {}),
        });
      else {
        this.exceeded(cx, h.budget, h.limit, h.used, where);
        throw this.stop;
      }
    }
  }

  toolsFor(nc: NodeCtx): Promise<ToolPort[]> {
    const offerHandover = nc.offerHandoverTools;
    // Most agents of a chain have no tools at all: no lookup, no allocation.
    if (nc.noTools) return NO_TOOLS;
    const key = `${nc.cx.runId}\u0000${nc.node.id}\u0000${offerHandover ? 1 : 0}`;
    let p = this.toolCache.get(key);
    if (!p) {
      p = this.buildTools(nc, offerHandover);
      const cache = own(this.toolCache);
      cache.set(key, p);
      this.toolCache = cache;
      // A failed lookup (e.g. a server that would not start) is not cached.
      p.catch(() => cache.delete(key));
    }
    return p;
  }

  private async buildTools(nc: NodeCtx, offerHandover: boolean): Promise<ToolPort[]> {
    const node = nc.node;
    const cx = nc.cx;
    const ports: ToolPort[] = [];
    const host = this.options.tools;
    if (host) {
      const hctx: ToolHostContext = {
        runId: this.runId,
        state: nc.state,
        signal: this.signal,
        emit: (e) => this.emit(cx, { ...e }),
      };
      if (this.options.dataDir !== undefined) hctx.dataDir = this.options.dataDir;
      let handles: Awaited<ReturnType<typeof host.toolsFor>>;
      try {
        handles = await host.toolsFor(node.id, hctx);
      } catch (e) {
        throw operatorRefusal(e) ?? e;
      }
      for (const h of handles) ports.push(this.mcpPort(cx, node.id, h));
    }
    for (const e of node.delegates) ports.push(this.delegatePort(cx, node, e));
    if (offerHandover)
      for (const e of node.out) {
        const target = this.graph.nodes.get(e.target)!;
        ports.push({
          name: `handover_to_${e.target.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64),
          description:
            e.config.description ??
            `Hand the work over to ${target.label}${typeof target.config.role === 'string' ? ` (${target.config.role})` : ''}.`,
          parameters: handoverParameters(e.target),
          source: 'handover',
          edgeId: e.id,
          call: async (args, callId) => {
            this.toolEvent(cx, node.id, 'tool.called', { callId, tool: `handover_to_${e.target}`, args });
            if (typeof args.note === 'string' && args.note !== '')
              this.addInbox(cx, e.target, {
                kind: 'directive',
                text: args.note.slice(0, 10_000),
                from: node.id,
              });
            const content = `Handing over to ${target.label}.`;
            this.toolEvent(cx, node.id, 'tool.result', {
              callId,
              tool: `handover_to_${e.target}`,
              result: content,
              isError: false,
            });
            return { content, isError: false };
          },
        });
      }
    const seen = new Set<string>();
    for (const p of ports) {
      if (seen.has(p.name))
        throw new RunFailure('flow_invalid', `agent "${node.id}" has two tools named "${p.name}"`);
      seen.add(p.name);
    }
    return ports;
  }

  private toolEvent(cx: Ctx, nodeId: string, type: string, fields: Record<string, unknown>): void {
    fields.type = type;
    fields.nodeId = nodeId;
    this.emit(cx, fields);
  }

  private mcpPort(cx: Ctx, nodeId: string, h: ToolHandle): ToolPort {
    return {
      name: h.name,
      description: h.description,
      parameters: h.inputSchema,
      source: 'mcp',
      call: async (args, callId) => {
        const g = this.gate(cx);
        if (g) await g;
        this.countStep(cx, nodeId);
        this.toolEvent(cx, nodeId, 'tool.called', { callId, tool: h.name, args });
        let res: { content: string; isError: boolean; structured?: unknown };
        try {
          res = await h.call(args, {
            signal: this.signal,
            onLog: (text) => this.emit(cx, { type: 'log', nodeId, level: 'info', text }),
            elicit: (ask) => this.answerElicitation(cx, nodeId, h.name, ask),
          });
        } catch (e) {
          if (this.stop) throw this.stop;
          res = { content: `tool error: ${(e as Error).message ?? String(e)}`, isError: true };
        }
        if (this.stop) throw this.stop;
        const shown =
          res.content.length > MAX_TOOL_RESULT_IN_EVENT
            ? `${res.content.slice(0, MAX_TOOL_RESULT_IN_EVENT)}…`
            : res.content;
        this.toolEvent(cx, nodeId, 'tool.result', {
          callId,
          tool: h.name,
          result: shown,
          isError: res.isError,
        });
        return res;
      },
    };
  }

  /**
   * An MCP server's elicitation during a tool call of `nodeId`, by the run's policy: asked as
   * human input of the run (`ask`, the default where someone can answer: servers, terminals,
   * served flows), the form's defaults, or declined.
   */
  private async answerElicitation(
    cx: Ctx,
    nodeId: string,
    tool: string,
    ask: ElicitationAsk,
  ): Promise<ElicitationAnswer> {
    const policy =
      this.options.elicitation ?? ((this.options.humanInput ?? 'wait') === 'wait' ? 'ask' : 'decline');
    let a: ElicitationAnswer;
    if (policy !== 'ask') a = answerElicitation(ask, policy);
    else
      try {
        a = elicitationFromText(
          ask,
          await this.askAt(cx, nodeId, ask.message, { form: ask.requestedSchema }),
        );
      } catch (e) {
        if (this.stop) throw this.stop;
        if (!(e instanceof NodeError && e.code === 'human_input_required')) throw e;
        a = { action: 'decline' };
      }
    const outcome =
      a.action === 'accept'
        ? policy === 'accept-defaults'
          ? 'accepted its defaults'
          : 'accepted'
        : a.action === 'cancel'
          ? 'cancelled'
          : 'declined';
    this.emit(cx, {
      type: 'log',
      nodeId,
      level: 'info',
      text: `${tool} asked ${JSON.stringify(ask.message.slice(0, 200))}: ${outcome}`,
    });
    return a;
  }

  private delegatePort(
    cx: Ctx,
    node: GNode,
    e: { id: string; target: string; config?: Record<string, unknown> },
  ): ToolPort {
    const target = this.graph.nodes.get(e.target)!;
    const cfg = (e.config ?? {}) as { toolName?: string; description?: string };
    const name = cfg.toolName ?? `ask_${e.target.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
    return {
      name,
      description:
        cfg.description ??
        `Delegate a task to ${target.label}${typeof target.config.role === 'string' ? ` (${target.config.role})` : ''}; returns its final answer.`,
      parameters: {
        type: 'object',
        properties: { task: { type: 'string', description: 'What to do, with everything needed to do it.' } },
        required: ['task'],
      },
      source: 'delegate',
      call: async (args, callId) => {
        const g = this.gate(cx);
        if (g) await g;
        this.countStep(cx, node.id);
        this.emit(cx, { type: 'tool.called', nodeId: node.id, edgeId: e.id, callId, tool: name, args });
        const res = await this.runNested(cx, target, String(args.task), callId);
        this.emit(cx, {
          type: 'tool.result',
          nodeId: node.id,
          edgeId: e.id,
          callId,
          tool: name,
          result: res.content,
          isError: res.isError,
        });
        return res;
      },
    };
  }

  /** Agent-as-tool: the target runs as a nested run whose events name this run and call. */
  private async runNested(
    parent: Ctx,
    target: GNode,
    task: string,
    callId: string,
  ): Promise<{ content: string; isError: boolean }> {
    this.allowManyListeners();
    if (parent.depth + 1 > MAX_DELEGATION_DEPTH)
      return { content: `delegation deeper than ${MAX_DELEGATION_DEPTH} levels is refused`, isError: true };
    const data = newRunData({ task }, { counters: parent.data.counters, state: parent.data.state });
    const cx: Ctx = {
      runId: `${parent.runId}~${++this.nestedCount}`,
      parentRunId: parent.runId,
      parentCallId: callId,
      data,
      depth: parent.depth + 1,
      state: new StateView(data),
    };
    this.emit(cx, { type: 'run.started', flowId: this.flow.id, input: { task } });
    this.appendMessage(cx, { role: 'user', author: 'user', content: task, to: target.id });
    const cursor: Cursor = { at: target.id, scopes: [rootScope(this.now())], stopAfter: target.id };
    if (target.parent !== undefined) cursor.scopes[0]!.team = null;
    try {
      await this.drive(cx, cursor);
    } catch (e) {
      if (this.stop) throw this.stop;
      const error = errorInfo(e);
      this.emit(cx, { type: 'run.failed', error });
      return { content: `the delegated run failed: ${error.message}`, isError: true };
    }
    const last = cx.data.transcript[cx.data.transcript.length - 1];
    const output = last && last.author !== 'user' ? last.content : '';
    this.emit(cx, { type: 'run.completed', output });
    return { content: output, isError: false };
  }

  // -------------------------------------------------------------------------------------------
  // Human input

  ask(nc: NodeCtx, question: string, options?: string[]): Promise<string> {
    const timeoutMs = typeof nc.node.config.timeoutMs === 'number' ? nc.node.config.timeoutMs : undefined;
    return this.askAt(nc.cx, nc.node.id, question, { options, timeoutMs });
  }

  /** Asks a person on behalf of node `nodeId` (a human node, or an agent whose tool asked). */
  private async askAt(
    cx: Ctx,
    nodeId: string,
    question: string,
    o: { options?: string[] | undefined; timeoutMs?: number | undefined; form?: Record<string, unknown> },
  ): Promise<string> {
    const ev: Record<string, unknown> = { type: 'input.requested', nodeId, question };
    if (o.options) ev.options = o.options;
    if (o.form) ev.form = o.form;
    this.emit(cx, ev);
    let answer = this.takeAnswer(cx, nodeId);
    if (answer === undefined) {
      if ((this.options.humanInput ?? 'wait') === 'fail')
        throw new NodeError(
          'human_input_required',
          `human node "${nodeId}" needs an answer to "${question.slice(0, 200)}" and none was supplied`,
          1,
          false,
        );
      this.status = 'waiting';
      const cp = this.checkpoint(cx);
      if (cp) await cp;
      if (this.stop) throw this.stop;
      // An answer that came in while the checkpoint was written is taken, not waited for.
      answer = this.takeAnswer(cx, nodeId) ?? (await this.waitForAnswer(nodeId, o.timeoutMs));
      if (this.stop) throw this.stop;
      this.status = 'running';
    }
    this.emit(cx, { type: 'input.received', nodeId, answer });
    return answer;
  }

  private waitForAnswer(nodeId: string, timeoutMs: number | undefined): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiters = own(this.waiters);
      this.waiters = waiters;
      waiters.set(nodeId, (a) => {
        if (timer) clearTimeout(timer);
        waiters.delete(nodeId);
        resolve(a);
      });
      if (timeoutMs !== undefined)
        timer = setTimeout(() => {
          waiters.delete(nodeId);
          reject(
            new NodeError(
              'human_timeout',
              `human node "${nodeId}" got no answer within ${timeoutMs} ms`,
              1,
              false,
            ),
          );
        }, timeoutMs);
    });
  }

  private takeAnswer(cx: Ctx, nodeId: string): string | undefined {
    for (const key of [nodeId, '*']) {
      const l = this.pendingAnswers.get(key);
      if (l && l.length > 0) return l.shift();
    }
    const given = ownValue(this.options.answers, nodeId);
    if (given === undefined) return undefined;
    if (typeof given === 'string') return given;
    const pos = cx.data.answerPos[nodeId] ?? 0;
    if (pos >= given.length) return undefined;
    cx.data.answerPos[nodeId] = pos + 1;
    return given[pos];
  }

  // -------------------------------------------------------------------------------------------
  // The control loop

  /** Runs one cursor until it is done. Iterative: one node per iteration. */
  private async drive(cx: Ctx, cur: Cursor): Promise<void> {
    while (!cur.done) {
      if (this.stop) throw this.stop;
      if (this.pauseRequested || this.pauseGate) await this.pauseNow(cx, 'requested');
      if (cur.fork) {
        await this.runFork(cx, cur);
        continue;
      }
      const scope = cur.scopes[cur.scopes.length - 1]!;
      if (cur.at === null) {
        if (cur.scopes.length === 1) {
          cur.done = true;
          break;
        }
        await this.leaveTeam(cx, cur, 'no further member');
        continue;
      }
      if (cur.stopAt !== undefined && cur.at === cur.stopAt) {
        cur.done = true;
        break;
      }
      const node = this.graph.nodes.get(cur.at);
      if (!node)
        throw new RunFailure('flow_invalid', `control reached "${cur.at}", which is not a node of the flow`);
      // Team termination is checked before each member turn.
      if (scope.team !== null && node.parent === scope.team && scope.turns > 0) {
        const team = this.graph.nodes.get(scope.team)!;
        const reason = (team.behavior as TeamBehavior).terminated(
          team.config,
          scope,
          this.lastMessage(cx),
          this.now(),
        );
        if (reason !== undefined) {
          await this.leaveTeam(cx, cur, reason);
          continue;
        }
      }
      if (node.role === 'team') {
        await this.enterTeam(cx, cur, node, undefined);
        continue;
      }
      let outcome: Outcome | Failed;
      if (
        (this.breakpoints.size > 0 && this.breakpoints.has(node.id)) ||
        (node.role === 'agent' && node.observers.length > 0)
      )
        outcome = await this.execute(cx, cur, node);
      else {
        // A plain step (no breakpoint, no observers), as execute() runs it, inline: an async
        // frame of its own, or a reaction between the turn and this loop, costs every step of
        // every run (bench gate e).
        const beh = this.flowBehavior(node);
        const turn = this.beginNode(cx, node);
        const nc = new NodeCtx(this, cx, node, this.candidatesFor(cur, node), cur);
        nc.turn = turn;
        let o: Outcome | undefined;
        let failed: Failed | undefined;
        for (let attempt = 1; ; attempt++) {
          try {
            o = await beh.run(nc);
            if (this.stop) throw this.stop;
            break;
          } catch (e) {
            failed = this.failedAttempt(cx, nc, e, attempt, turn);
            if (failed) break;
            nc.resetTurn();
          }
        }
        if (failed) outcome = failed;
        else {
          this.commitTurn(cx, cur, nc, o!, turn);
          this.nodeCompleted(cx, node, o!);
          outcome = o!;
        }
      }
      if (isFailed(outcome)) {
        await this.onFailure(cx, cur, node, outcome.failed);
        continue;
      }
      // A delegated run ends with its target: the target's own handovers are not followed.
      if (cur.stopAfter === node.id && cur.scopes.length === 1) cur.done = true;
      else {
        const r = this.route(cx, cur, node, outcome);
        if (r) await r;
      }
      const cp = this.checkpoint(cx);
      if (cp) await cp;
      if (this.stepping && (node.role === 'agent' || node.role === 'decider' || node.role === 'human')) {
        this.stepping = false;
        this.pauseRequested = true;
      }
    }
  }

  private lastMessage(cx: Ctx): Message | undefined {
    const t = cx.data.transcript;
    return t[t.length - 1];
  }

  private acpBehavior(): FlowBehavior {
    this.acpFlow ??= acpBehavior({
      agentFor: (nodeId, backend) => this.acpAgentFor(nodeId, backend).then((a) => a.session),
      emitModel: (nc, type, text) => {
        const n = nc as unknown as NodeCtx;
        if (type === 'model.delta') this.emit(n.cx, { type, nodeId: n.node.id, text });
        else {
          n.modelName = `acp:${(n.node.config.backend as AcpBackendConfig).command}`;
          this.emit(n.cx, {
            type,
            nodeId: n.node.id,
            text,
            usage: { promptTokens: 0, completionTokens: 0 },
            model: n.modelName,
            finishReason: 'stop',
          });
        }
      },
    });
    return this.acpFlow;
  }

  /** Spawns (once per run) the ACP process of an agent, after checking the operator's consent. */
  private acpAgentFor(nodeId: string, backend: AcpBackendConfig) {
    let p = this.acpAgents.get(nodeId);
    if (!p) {
      p = (async () => {
        const { requireFlowConsent } = await import('../mcp/consent.js');
        try {
          // Approved for this flow as it is now (id and a hash of its command definitions).
          requireFlowConsent(this.flow, 'acp-agent', nodeId);
        } catch (e) {
          throw new NodeError('consent_required', (e as Error).message, 1, false);
        }
        const { createAcpAgent } = await import('../acp/index.js');
        const cfg: Parameters<typeof createAcpAgent>[0] = { command: backend.command };
        if (backend.args) cfg.args = backend.args;
        if (backend.env) cfg.env = backend.env;
        if (backend.cwd !== undefined) cfg.cwd = backend.cwd;
        const agent = createAcpAgent(cfg);
        return {
          session: { prompts: 0, prompt: (text, o) => agent.prompt(text, o) } as AcpSession,
          close: () => agent.close(),
        };
      })();
      const agents = own(this.acpAgents);
      agents.set(nodeId, p);
      this.acpAgents = agents;
      p.catch(() => agents.delete(nodeId));
    }
    return p;
  }

  /** Calls in flight listen on the run's signal; parallel work legitimately adds many (set once, lazily: it is not cheap). */
  private allowManyListeners(): void {
    if (this.manyListeners) return;
    this.manyListeners = true;
    setMaxListeners(0, this.abort.signal);
  }

  private async runFork(cx: Ctx, cur: Cursor): Promise<void> {
    const fork = cur.fork!;
    this.allowManyListeners();
    await Promise.all(fork.branches.map((b) => (b.done ? undefined : this.drive(cx, b))));
    // Merge in branch (edge) order, whatever order they finished in.
    const d = cx.data;
    const parts: string[] = [];
    const values: unknown[] = [];
    for (const b of fork.branches) {
      // Seqs are increasing: a search, not a scan per branch (100 branches, hundreds of messages).
      const at = b.lastSeq !== undefined ? d.transcript[firstAfter(d.transcript, b.lastSeq - 1)] : undefined;
      const m = at !== undefined && at.seq === b.lastSeq ? at : undefined;
      values.push(m ? (m.json ?? m.content) : null);
      parts.push(m ? `[${m.author}] ${m.content}` : '[no result]');
    }
    cur.fork = undefined;
    cur.at = fork.join;
    const merged: Omit<Message, 'seq'> = {
      role: 'user',
      author: fork.origin,
      content: parts.join('\n\n'),
      json: values,
    };
    if (fork.join !== null) merged.to = fork.join;
    const m = this.appendMessage(cx, merged, fork.origin);
    cur.lastSeq = m.seq;
    if (fork.join !== null)
      this.addInbox(cx, fork.join, {
        kind: 'briefing',
        text: `Results of the parallel branches:\n\n${merged.content}`,
        from: fork.origin,
      });
  }

  private candidatesFor(cur: Cursor, node: GNode): Candidate[] {
    const scope = cur.scopes[cur.scopes.length - 1]!;
    let edges: GEdge[] = node.out;
    if (scope.mode === 'fsm' && scope.team !== null && node.role === 'decider' && scope.state !== undefined) {
      const team = this.graph.nodes.get(scope.team)!;
      if (team.config.decider === node.id) edges = this.graph.nodes.get(scope.state)?.out ?? [];
    }
    // Candidates depend only on the edges, so each node's list is built once per compiled flow.
    const owner = edges === node.out ? node : this.graph.nodes.get(edges[0]?.source ?? '');
    if (!owner) return [];
    let list = this.graph.candidates.get(owner.id);
    if (!list) {
      list = edges.map((e) => this.candidate(e));
      this.graph.candidates.set(owner.id, list);
    }
    return list;
  }

  private candidate(e: GEdge): Candidate {
    const t = this.graph.nodes.get(e.target)!;
    const c: Candidate = { edgeId: e.id, target: e.target, label: e.label ?? t.label };
    if (typeof t.config.role === 'string') c.role = t.config.role;
    if (e.config.description !== undefined) c.description = e.config.description;
    if (e.config.branch !== undefined) c.branch = e.config.branch;
    if (e.config.escalation) c.escalation = true;
    return c;
  }

  /** The behaviour that runs a node on the control path. */
  private flowBehavior(node: GNode): FlowBehavior {
    const pinned = this.pinned?.get(node.id);
    if (pinned) return pinned;
    const beh =
      node.role === 'agent' && node.config.backend !== undefined
        ? this.acpBehavior()
        : (node.behavior as FlowBehavior | undefined);
    if (beh?.type !== 'flow')
      throw new RunFailure(
        'flow_invalid',
        `node "${node.id}" of kind "${node.kind}" cannot be on the control path`,
      );
    return beh;
  }

  /** Counts the step and emits node.started, and turn.started: returns the turn, 0 for kinds that bear none. */
  private beginNode(cx: Ctx, node: GNode): number {
    this.countStep(cx, node.id);
    const turnBearing =
      node.role === 'agent' || node.role === 'decider' || node.role === 'human' || node.role === 'step';
    this.emitNode(cx, 'node.started', node.id);
    if (!turnBearing) return 0;
    const turn = ++cx.data.counters.turns;
    this.emitTurnStarted(cx, node.id, turn);
    return turn;
  }

  /**
   * After a failed attempt: rethrows what ends the run; undefined when the node is tried again
   * (said in a log event); else the node's failure, with its events.
   */
  private failedAttempt(cx: Ctx, nc: NodeCtx, e: unknown, attempt: number, turn: number): Failed | undefined {
    if (this.stop) throw this.stop;
    if (e instanceof RunFailure) throw e;
    const node = nc.node;
    const maxAttempts = 1 + (node.role === 'agent' ? ((node.config.retries as number | undefined) ?? 1) : 0);
    // A model failure is retried within the model call's one budget (models/retry.ts), never on top of it.
    const retryable = !(e instanceof NodeError && !e.retryable) && !(e instanceof ModelError && !e.retryable);
    if (retryable && attempt < maxAttempts) {
      this.emit(cx, {
        type: 'log',
        nodeId: node.id,
        level: 'warn',
        text: `retrying ${node.id} (attempt ${attempt + 1}): ${(e as Error).message}`,
      });
      return undefined;
    }
    const error = errorInfo(e);
    if (error.attempts === undefined) error.attempts = attempt;
    if (turn > 0) this.turnCompleted(cx, nc, turn);
    this.emit(cx, { type: 'node.failed', nodeId: node.id, error });
    return { failed: error };
  }

  private commitTurn(cx: Ctx, cur: Cursor, nc: NodeCtx, o: Outcome, turn: number): void {
    this.commit(cx, cur, nc, o);
    if (turn > 0) this.turnCompleted(cx, nc, turn);
  }

  private nodeCompleted(cx: Ctx, node: GNode, o: Outcome): void {
    if (o.output !== undefined) this.emit(cx, { type: 'node.completed', nodeId: node.id, output: o.output });
    else this.emitNode(cx, 'node.completed', node.id);
  }

  /** Runs one node: events, observers, retries, commit. Returns its outcome or its failure. */
  private async execute(cx: Ctx, cur: Cursor, node: GNode): Promise<Outcome | Failed> {
    if (this.breakpoints.size > 0 && this.breakpoints.has(node.id))
      await this.pauseNow(cx, `breakpoint at ${node.id}`, node.id);
    const beh = this.flowBehavior(node);
    const turn = this.beginNode(cx, node);
    const nc = new NodeCtx(this, cx, node, this.candidatesFor(cur, node), cur);
    nc.turn = turn;
    let outcome: Outcome | undefined;
    // Guard rejections per observer, for this node's attempts; only agents with observers need it.
    let rejections: Map<string, number> | undefined;
    if (node.role === 'agent' && node.observers.length > 0) {
      await this.runObservers(cx, nc, 'before', undefined);
      rejections = new Map();
      // A `before` guard that refuses the turn holds it here: the model is never called.
      const held: Outcome = {};
      if ((await this.runGuards(cx, nc, 'before', held, rejections)) === 'held') outcome = held;
    }
    for (let attempt = 1; outcome === undefined; ) {
      try {
        const o: Outcome = await beh.run(nc);
        if (this.stop) throw this.stop;
        if (node.role === 'agent' && o.message && node.observers.length > 0) {
          rejections ??= new Map();
          const verdict = await this.runGuards(cx, nc, 'after', o, rejections);
          if (verdict === 'retry') {
            nc.resetTurn();
            continue;
          }
        }
        outcome = o;
        break;
      } catch (e) {
        const failed = this.failedAttempt(cx, nc, e, attempt, turn);
        if (failed) return failed;
        attempt++;
        nc.resetTurn();
      }
    }
    this.commitTurn(cx, cur, nc, outcome, turn);
    if (node.role === 'agent' && node.observers.length > 0) await this.runObservers(cx, nc, 'after', outcome);
    this.nodeCompleted(cx, node, outcome);
    return outcome;
  }

  private turnCompleted(cx: Ctx, nc: NodeCtx, turn: number): void {
    const usage = { promptTokens: nc.promptTokens, completionTokens: nc.completionTokens };
    if (nc.modelName !== undefined) this.emitTurnCompleted(cx, nc.node.id, turn, usage, nc.modelName);
    else this.emit(cx, { type: 'turn.completed', nodeId: nc.node.id, turn, usage });
  }

  private commit(cx: Ctx, cur: Cursor, nc: NodeCtx, o: Outcome): void {
    const d = cx.data;
    const node = nc.node;
    // Inbox items read by this turn are consumed now, so a turn redone after a crash still sees them.
    if (nc.inboxTaken.length > 0) {
      const list = d.inbox[node.id];
      if (list) {
        const taken = new Set(nc.inboxTaken);
        d.inbox[node.id] = list.filter((i) => !taken.has(i));
      }
    }
    if (o.message) {
      const role = node.role === 'human' ? 'user' : 'assistant';
      const { content, json, to } = o.message;
      let msg: Message;
      // Built whole when it has no optional fields: a seq added afterwards costs every message the
      // transcript keeps a property array.
      if (json === undefined && to === undefined)
        msg = this.record(cx, { role, author: node.id, content, seq: ++d.msgSeq }, node.id);
      else {
        const m: Omit<Message, 'seq'> = { role, author: node.id, content };
        if (json !== undefined) m.json = json;
        if (to !== undefined) m.to = to;
        msg = this.appendMessage(cx, m, node.id);
      }
      cur.lastSeq = msg.seq;
      if (nc.tracksRate) {
        const now = this.now();
        d.recent[node.id] ??= [];
        const r = d.recent[node.id]!;
        r.push(now);
        while (r.length > 0 && now - r[0]! > 60_000) r.shift();
      }
    }
    if (o.state) for (const k of Object.keys(o.state)) nc.state.set(k, o.state[k]);
    if (o.grantMic !== undefined) grantMic(d, o.grantMic, node.id, (e) => this.emit(cx, e));
    if (o.output !== undefined) {
      d.output = o.output;
      d.hasOutput = true;
    }
    // One lookup: these tables are keyed by name, and a chain adds a node to byNode every step.
    const byNode = d.counters.byNode;
    let u = byNode[node.id];
    if (u == null) byNode[node.id] = u = emptyUsage();
    u.turns++;
    u.promptTokens += nc.promptTokens;
    u.completionTokens += nc.completionTokens;
    const speaks = node.role === 'agent' || node.role === 'human';
    const tokens = nc.promptTokens + nc.completionTokens;
    for (let i = 1; i < cur.scopes.length; i++) {
      const s = cur.scopes[i]!;
      s.tokens += tokens;
      if (speaks) s.turns++;
    }
  }

  // -------------------------------------------------------------------------------------------
  // Observers

  private observerNodes(node: GNode): GNode[] {
    const out: GNode[] = [];
    for (const id of node.observers) {
      const o = this.graph.nodes.get(id);
      if (o && (o.behavior as ObserverBehavior | undefined)?.type === 'observer') out.push(o);
    }
    return out;
  }

  /**
   * Guards `after` a turn check the message it produced before it is committed ('retry' redoes
   * the turn). Guards `before` a turn check it before the model is called; a violation holds the
   * turn ('held': `o` says what happens instead — nothing, or an escalation).
   */
  private async runGuards(
    cx: Ctx,
    nc: NodeCtx,
    phase: 'before' | 'after',
    o: Outcome,
    rejections: Map<string, number>,
  ): Promise<'ok' | 'retry' | 'held'> {
    for (const obs of this.observerNodes(nc.node)) {
      if (obs.config.type !== 'guard') continue;
      const beh = obs.behavior as ObserverBehavior;
      if (!beh.runsAt(obs.config, phase)) continue;
      const oc = new ObserverCtx(this, cx, obs, nc, phase, o, rejections.get(obs.id) ?? 0);
      const v = await beh.observe(oc);
      if (v.action !== 'violation') continue;
      const n = (rejections.get(obs.id) ?? 0) + 1;
      rejections.set(obs.id, n);
      const base = { type: 'observer.fired', nodeId: obs.id, observer: obs.id, target: nc.node.id };
      if (phase === 'after' && v.onViolation === 'retry' && n <= v.maxRetries) {
        this.emit(cx, { ...base, action: 'retry', detail: { reason: v.reason, attempt: n } });
        nc.extraInbox.push({
          kind: 'directive',
          text: `Your last message was rejected: ${v.reason}. Try again.`,
          from: obs.id,
          order: 0,
        });
        return 'retry';
      }
      const d = cx.data;
      d.counters.failures[nc.node.id] = (d.counters.failures[nc.node.id] ?? 0) + 1;
      if (v.onViolation === 'escalate' && v.escalateTo !== undefined) {
        this.emit(cx, {
          ...base,
          action: 'escalate',
          detail: { reason: v.reason, to: v.escalateTo, when: phase },
        });
        o.escalateTo = v.escalateTo;
        delete o.message;
        delete o.route;
        return phase === 'before' ? 'held' : 'ok';
      }
      this.emit(cx, { ...base, action: 'block', detail: { reason: v.reason, when: phase } });
      delete o.message;
      return phase === 'before' ? 'held' : 'ok';
    }
    return 'ok';
  }

  private async runObservers(
    cx: Ctx,
    nc: NodeCtx,
    phase: 'before' | 'after',
    o: Outcome | undefined,
  ): Promise<void> {
    for (const obs of this.observerNodes(nc.node)) {
      if (obs.config.type === 'guard') continue;
      const beh = obs.behavior as ObserverBehavior;
      if (!beh.runsAt(obs.config, phase)) continue;
      const oc = new ObserverCtx(this, cx, obs, nc, phase, o, 0);
      const r = await beh.observe(oc);
      const base = { type: 'observer.fired', nodeId: obs.id, observer: obs.id, target: nc.node.id };
      if (r.action === 'summary') {
        cx.data.summaries[obs.id] = r.summary;
        this.emit(cx, {
          ...base,
          action: 'summary',
          detail: { coversSeq: r.summary.coversSeq, text: r.summary.text },
        });
      } else if (r.action === 'remind') {
        this.addInbox(cx, nc.node.id, { kind: 'reflection', text: r.text, from: obs.id });
        this.emit(cx, { ...base, action: 'remind', detail: { text: r.text } });
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // Routing

  private async onFailure(cx: Ctx, cur: Cursor, node: GNode, error: EventError): Promise<void> {
    const d = cx.data;
    const scope = cur.scopes[cur.scopes.length - 1]!;
    const failures = (d.counters.failures[node.id] ?? 0) + 1;
    d.counters.failures[node.id] = failures;
    if (scope.mode === 'fsm' && scope.team !== null && node.parent === scope.team) {
      const team = this.graph.nodes.get(scope.team)!;
      const max = (team.config.maxFailures as number | undefined) ?? 3;
      if (failures < max) {
        // The state is retried; the transition function sees the failure counter.
        this.emit(cx, {
          type: 'log',
          nodeId: node.id,
          level: 'warn',
          text: `${node.id} failed (${failures}/${max}); retrying the state`,
        });
        return;
      }
      const esc = node.out.find((e) => e.config.escalation) ?? team.out.find((e) => e.config.escalation);
      if (esc) {
        this.emit(cx, {
          type: 'log',
          nodeId: node.id,
          level: 'warn',
          text: `${node.id} failed ${failures} times; escalating along ${esc.id}`,
        });
        d.counters.failures[node.id] = 0;
        await this.take(cx, cur, this.graph.nodes.get(esc.source)!, [esc]);
        return;
      }
      throw new RunFailure(
        'node_failed',
        `"${node.id}" failed ${failures} times in FSM team "${team.id}" and no escalation edge is drawn: ${error.message}`,
        failures,
        error.code,
      );
    }
    throw new RunFailure(
      error.code === 'human_input_required' ? 'human_input_required' : error.code,
      error.message,
      error.attempts,
      error.cause,
    );
  }

  /**
   * Where control goes after a node. Outside teams (the common case) this is synchronous and
   * returns undefined: no async frame or promise per step; inside a team the mode decides.
   */
  private route(cx: Ctx, cur: Cursor, node: GNode, o: Outcome): Promise<void> | undefined {
    if (o.escalateTo !== undefined) return this.moveTo(cx, cur, o.escalateTo);
    const scope = cur.scopes[cur.scopes.length - 1]!;
    if (scope.team !== null) return this.routeInTeam(cx, cur, node, o, scope);
    if (o.route && 'done' in o.route) {
      cur.at = null;
      return undefined;
    }
    return this.take(
      cx,
      cur,
      node,
      o.route ? this.edgesById(node, o.route.edges) : this.defaultEdges(cx, node),
    );
  }

  private async routeInTeam(cx: Ctx, cur: Cursor, node: GNode, o: Outcome, scope: Scope): Promise<void> {
    if (scope.team !== null && node.parent === scope.team) {
      const team = this.graph.nodes.get(scope.team)!;
      if (scope.mode === 'groupChat') {
        const speakerDecider = (team.config.speaker as { decider?: string } | undefined)?.decider;
        if (
          node.id === speakerDecider &&
          (team.config.speaker as { strategy?: string }).strategy === 'decider'
        ) {
          if (o.route && 'done' in o.route) cur.at = null;
          else if (o.route) await this.take(cx, cur, node, this.edgesById(node, o.route.edges));
          else cur.at = null;
          return;
        }
        await this.runTerminationDecider(cx, cur, team);
        if (cur.at === null) return;
        await this.selectSpeaker(cx, cur, team);
        return;
      }
      if (scope.mode === 'fsm') {
        const decider = team.config.decider as string | undefined;
        if (node.id === decider) {
          if (!o.route || 'done' in o.route) {
            cur.at = null;
            return;
          }
          const from = this.graph.nodes.get(scope.state ?? '')!;
          await this.take(cx, cur, from, this.edgesById(from, o.route.edges));
          return;
        }
        scope.state = node.id;
        if (o.route && 'done' in o.route) {
          cur.at = null;
          return;
        }
        if (decider !== undefined) {
          cur.at = decider;
          return;
        }
      }
    }
    if (o.route && 'done' in o.route) {
      cur.at = null;
      return;
    }
    if (scope.team !== null && scope.mode === 'handover') {
      await this.runTerminationDecider(cx, cur, this.graph.nodes.get(scope.team)!);
      if (cur.at === null) return;
    }
    const edges = o.route ? this.edgesById(node, o.route.edges) : this.defaultEdges(cx, node);
    await this.take(cx, cur, node, edges);
  }

  private edgesById(node: GNode, ids: readonly string[]): GEdge[] {
    const out: GEdge[] = [];
    for (const id of ids) {
      const e = node.out.find((x) => x.id === id);
      if (!e)
        throw new RunFailure('flow_invalid', `"${node.id}" chose edge "${id}", which does not leave it`);
      out.push(e);
    }
    return out;
  }

  /** Without an explicit choice: one edge is followed; several fan out, except from an agent (it chose none: handover-policy.ts). */
  private defaultEdges(cx: Ctx, node: GNode): GEdge[] {
    if (node.out.length <= 1) return node.out;
    if (node.role === 'agent') return edgesWithoutHandover(node, (e) => this.emit(cx, e));
    if (node.role === 'human') return node.out.filter((e) => e.config.branch === undefined);
    return node.out;
  }

  /**
   * Follows edges: none ends the scope, one moves, several fork parallel branches. Synchronous
   * (undefined) unless entering a team needs to wait.
   */
  private take(cx: Ctx, cur: Cursor, from: GNode, edges: GEdge[]): Promise<void> | undefined {
    if (edges.length === 0) {
      cur.at = null;
      return undefined;
    }
    // Indexed, as on every per-step path: for-of allocates an iterator wherever V8 has not
    // optimised the code yet, and a short-lived process (bench gate e) runs much of it unoptimised.
    for (let i = 0; i < edges.length; i++) {
      const e = edges[i]!;
      this.emitHandover(cx, from.id, e);
      this.applyProtocol(cx, from, e);
    }
    if (edges.length === 1) return this.moveTo(cx, cur, edges[0]!.target);
    const targets = edges.map((e) => e.target);
    const join = joinNode(this.graph, targets);
    cur.fork = {
      origin: from.id,
      join,
      edges: edges.map((e) => e.id),
      branches: targets.map((t) => ({
        at: t,
        scopes: cur.scopes.map((s) => ({ ...s })),
        stopAt: join,
      })),
    };
    cur.at = null;
    return undefined;
  }

  /** The handover protocol: what context goes along, and a briefing as the receiver's first inbox item. */
  private applyProtocol(cx: Ctx, from: GNode, e: GEdge): void {
    const d = cx.data;
    const to = e.target;
    const c = e.config;
    const ctxMode = c.context?.mode ?? 'all';
    if (ctxMode === 'all') {
      if (this.floorsUsed && d.floors[to] !== undefined) delete d.floors[to];
    } else {
      this.floorsUsed = true;
      if (ctxMode === 'lastN') {
        const n = c.context?.n ?? 1;
        const t = d.transcript;
        d.floors[to] = t.length >= n ? t[t.length - n]!.seq : 0;
      } else d.floors[to] = d.msgSeq + 1;
    }
    const last = d.transcript[d.transcript.length - 1];
    if (last && this.graph.threads.has(to) && last.author !== to) this.addToThread(d, to, last.seq);
    let package_ = '';
    if (ctxMode === 'summary') {
      const s = this.summaryFor(cx, from);
      package_ = s ? `Summary so far:\n${s.text}` : '';
    } else if (ctxMode === 'state') {
      const keys = c.context?.keys ?? [];
      const picked = dict<unknown>();
      for (const k of keys) picked[k] = getPath(d.state, k) ?? null;
      package_ = `State:\n${JSON.stringify(picked)}`;
    }
    if (c.briefing !== undefined || package_ !== '') {
      const briefing = c.briefing
        ? renderTemplate(c.briefing, {
            task: d.task,
            last: last?.content ?? '',
            state: d.state,
            input: d.input,
            from: from.id,
          })
        : '';
      const text = [briefing, package_].filter((s) => s !== '').join('\n\n');
      this.addInbox(cx, to, { kind: 'briefing', text, from: e.id });
    }
  }

  summaryFor(cx: Ctx, node: GNode): Summary | undefined {
    const ids = node.observers;
    for (let i = 0; i < ids.length; i++) {
      const s = cx.data.summaries[ids[i]!];
      if (s) return s;
    }
    if (node.role === 'observer') return cx.data.summaries[node.id];
    return undefined;
  }

  /**
   * Moves control to a node, leaving and entering team scopes as needed. Synchronous
   * (undefined) when no team is entered.
   */
  private moveTo(cx: Ctx, cur: Cursor, target: string): Promise<void> | undefined {
    const node = this.graph.nodes.get(target);
    if (!node) throw new RunFailure('flow_invalid', `no node "${target}"`);
    // Leave scopes the target is not inside of (without following the teams' own edges).
    while (cur.scopes.length > 1) {
      const top = cur.scopes[cur.scopes.length - 1]!;
      if (top.team !== null && node.ancestors.includes(top.team)) break;
      cur.scopes.pop();
      this.emit(cx, { type: 'node.completed', nodeId: top.team!, output: `left for ${target}` });
    }
    // Enter teams between the current scope and the target.
    const topTeam = cur.scopes[cur.scopes.length - 1]!.team;
    const startAt = topTeam === null ? 0 : node.ancestors.indexOf(topTeam) + 1;
    if (startAt >= node.ancestors.length) {
      cur.at = target;
      return undefined;
    }
    return this.enterTeams(cx, cur, node, startAt, target);
  }

  private async enterTeams(
    cx: Ctx,
    cur: Cursor,
    node: GNode,
    startAt: number,
    target: string,
  ): Promise<void> {
    for (let i = startAt; i < node.ancestors.length; i++) {
      const team = this.graph.nodes.get(node.ancestors[i]!)!;
      await this.enterTeam(cx, cur, team, node.ancestors[i + 1] ?? target);
    }
    cur.at = target;
  }

  private async enterTeam(
    cx: Ctx,
    cur: Cursor,
    team: GNode,
    entryOverride: string | undefined,
  ): Promise<void> {
    this.countStep(cx, team.id);
    this.emitNode(cx, 'node.started', team.id);
    const mode = (team.config.mode as 'handover' | 'groupChat' | 'fsm' | undefined) ?? 'handover';
    const scope: Scope = { team: team.id, mode, turns: 0, tokens: 0, startedAt: this.now(), spoken: 0 };
    cur.scopes.push(scope);
    const d = cx.data;
    const entry = entryOverride ?? this.graph.entry.get(team.id) ?? null;
    // What was handed to the team goes to its first member.
    const items = this.inboxUsed ? d.inbox[team.id] : undefined;
    if (items && items.length > 0 && entry !== null) {
      delete d.inbox[team.id];
      for (const it of items)
        this.addInbox(cx, entry, { kind: it.kind, text: it.text, from: it.from ?? team.id });
    }
    const floor = this.floorsUsed ? d.floors[team.id] : undefined;
    if (floor !== undefined) for (const m of this.graph.members.get(team.id) ?? []) d.floors[m.id] = floor;
    if (mode === 'groupChat' && entryOverride === undefined) {
      cur.at = null;
      await this.selectSpeaker(cx, cur, team);
      return;
    }
    cur.at = entry;
  }

  private async leaveTeam(cx: Ctx, cur: Cursor, reason: string): Promise<void> {
    const scope = cur.scopes.pop()!;
    const team = this.graph.nodes.get(scope.team!)!;
    const last = this.lastMessage(cx);
    this.emit(cx, { type: 'log', nodeId: team.id, level: 'info', text: `team ${team.id} ended: ${reason}` });
    const d = cx.data;
    if (d.mic !== undefined) releaseMicLeaving(d, team, this.graph.nodes.get(d.mic), (e) => this.emit(cx, e));
    this.emit(cx, {
      type: 'node.completed',
      nodeId: team.id,
      output: last ? (last.json ?? last.content) : '',
    });
    if (cur.stopAfter === team.id && cur.scopes.length === 1) {
      cur.done = true;
      cur.at = null;
      return;
    }
    await this.route(cx, cur, team, {});
    if (cur.stopAfter === team.id && cur.scopes.length === 1) cur.done = true;
  }

  /** Group chat: who speaks next (round robin, an LLM manager, or a decider member). */
  private async selectSpeaker(cx: Ctx, cur: Cursor, team: GNode): Promise<void> {
    const scope = cur.scopes[cur.scopes.length - 1]!;
    const reason = (team.behavior as TeamBehavior).terminated(
      team.config,
      scope,
      this.lastMessage(cx),
      this.now(),
    );
    if (reason !== undefined) {
      cur.at = null;
      this.emit(cx, { type: 'log', nodeId: team.id, level: 'info', text: `team ${team.id}: ${reason}` });
      return;
    }
    const speaker = team.config.speaker as { strategy?: string; decider?: string } | undefined;
    if (speaker?.strategy === 'decider' && speaker.decider) {
      cur.at = speaker.decider;
      return;
    }
    // A pause (and a redirect injected during it) lands before the manager reads the transcript,
    // so the next speaker is chosen with whatever the user said while the run was paused.
    const g = this.gate(cx);
    if (g) await g;
    const tc = new TeamCtx(this, cx, team, cur, scope);
    // An LLM manager's call is a turn of the team node, so its token usage is reported like any other.
    const llm = speaker?.strategy === 'llm';
    const turn = llm ? ++cx.data.counters.turns : 0;
    if (llm) this.emit(cx, { type: 'turn.started', nodeId: team.id, turn });
    tc.turn = turn;
    const next = await (team.behavior as TeamBehavior).nextSpeaker(tc);
    if (llm) this.turnCompleted(cx, tc, turn);
    if ('done' in next) {
      this.emit(cx, { type: 'decision', nodeId: team.id, choice: 'done', reason: next.reason });
      cur.at = null;
      return;
    }
    this.emit(cx, { type: 'decision', nodeId: team.id, choice: next.speaker, reason: next.reason });
    scope.spoken++;
    scope.lastSpeaker = next.speaker;
    cur.at = next.speaker;
  }

  /** A team's `termination.decider` (when not its speaker or FSM decider) may end it after any member turn. */
  private async runTerminationDecider(cx: Ctx, cur: Cursor, team: GNode): Promise<void> {
    const id = (team.config.termination as { decider?: string } | undefined)?.decider;
    if (id === undefined) return;
    if (
      id === (team.config.speaker as { decider?: string } | undefined)?.decider ||
      id === team.config.decider
    )
      return;
    const decider = this.graph.nodes.get(id);
    if (!decider) return;
    const o = await this.execute(cx, cur, decider);
    if (isFailed(o)) throw new RunFailure(o.failed.code, o.failed.message);
    if (o.route && 'done' in o.route) cur.at = null;
  }
}

// ---------------------------------------------------------------------------------------------
// Contexts handed to behaviours

/** The last message as conditions see it, with `json` parsed on first read. */
class LastView {
  readonly content: string;
  readonly author: string;
  constructor(private readonly m: Message) {
    this.content = m.content;
    this.author = m.author;
  }
  get json(): unknown {
    return jsonOf(this.m);
  }
}

const parsedJson = new WeakMap<Message, unknown>();
/** `last.json` of a text message that happens to be JSON (parsed once, bounded). */
function jsonOf(m: Message): unknown {
  const t = m.content.trimStart();
  // Most messages are prose: nothing to parse, so nothing worth remembering.
  if (!(t.startsWith('{') || t.startsWith('[')) || t.length > 1024 * 1024) return undefined;
  if (parsedJson.has(m)) return parsedJson.get(m);
  let v: unknown;
  try {
    v = JSON.parse(t);
  } catch {
    v = undefined;
  }
  parsedJson.set(m, v);
  return v;
}

class StateView implements StateAccess {
  constructor(private readonly d: RunData) {}
  get(path: string): unknown {
    return getPath(this.d.state, path);
  }
  set(key: string, value: unknown): void {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') return;
    this.d.state[key] = value;
  }
  snapshot(): Readonly<Record<string, unknown>> {
    return this.d.state;
  }
}

class BoundModel implements ModelPort {
  constructor(
    private readonly run: Run,
    private readonly nc: NodeCtx,
    readonly name: string,
  ) {}
  complete(call: ModelCall): Promise<ModelReply> {
    return this.run.callModel(this.nc, this.name, call);
  }
  completeThen<T>(call: ModelCall, then: (reply: ModelReply) => T | PromiseLike<T>): Promise<T> {
    return this.run.callModel(this.nc, this.name, call, then);
  }
}

/** The context of one node execution; also its RunView. No per-step closures beyond this object. */
export class NodeCtx implements NodeContext {
  promptTokens = 0;
  completionTokens = 0;
  /** The run's turn this execution belongs to (0: none), the attempt at it, model calls in the attempt. */
  turn = 0;
  attempt = 1;
  calls = 0;
  modelName: string | undefined;
  extraInbox: InboxItem[] = [];
  inboxTaken: readonly InboxItem[];
  readonly offerHandoverTools: boolean;
  readonly noTools: boolean;

  constructor(
    readonly engine: Run,
    readonly cx: Ctx,
    readonly node: GNode,
    readonly candidates: Candidate[],
    cur: Cursor,
  ) {
    this.inboxTaken = engine.inboxUsed ? (cx.data.inbox[node.id] ?? NO_ITEMS) : NO_ITEMS;
    const scope = cur.scopes[cur.scopes.length - 1]!;
    this.offerHandoverTools =
      node.role === 'agent' &&
      node.out.length > 1 &&
      (scope.mode === 'root' || scope.mode === 'handover') &&
      cur.stopAfter !== node.id;
    this.noTools = !engine.options.tools && node.delegates.length === 0 && !this.offerHandoverTools;
  }

  // Read through, not copied: a context is made for every step, and most steps read none of these.
  get state(): StateAccess {
    return this.cx.state;
  }
  get signal(): AbortSignal {
    return this.engine.signal;
  }
  get clock(): { now(): number } {
    return this.engine.clock;
  }
  get tracksRate(): boolean {
    return this.node.observers.length > 0;
  }

  get run(): this {
    return this;
  }
  get inbox(): readonly InboxItem[] {
    return this.extraInbox.length === 0 ? this.inboxTaken : [...this.inboxTaken, ...this.extraInbox];
  }
  get memo() {
    const d = this.cx.data;
    const id = this.node.id;
    return {
      get: (key: string) => d.memo[id]?.[key],
      set: (key: string, value: unknown) => {
        d.memo[id] ??= dict();
        d.memo[id][key] = value;
      },
    };
  }
  /** Before a retried attempt: usage of the failed attempt still counts, extra inbox items stay. */
  resetTurn(): void {
    this.attempt++;
    this.calls = 0;
  }

  // RunView
  get runId(): string {
    return this.cx.runId;
  }
  get input(): unknown {
    return this.cx.data.input;
  }
  get task(): string {
    return this.cx.data.task;
  }
  get transcript(): readonly Message[] {
    return this.cx.data.transcript;
  }
  get counters(): Counters {
    // The live counters, read-only by contract (behaviours get no copy to allocate per step).
    return this.cx.data.counters;
  }
  get mic(): string | undefined {
    return this.cx.data.mic;
  }
  summary(): Summary | undefined {
    return this.engine.summaryFor(this.cx, this.node);
  }
  view(memory: MemoryPolicy): readonly Message[] {
    const d = this.cx.data;
    const id = this.node.id;
    const floor = this.engine.floorsUsed ? d.floors[id] : undefined;
    if (memory === 'thread') return threadView(d.transcript, d.threads[id] ?? NO_SEQS, floor ?? 0);
    const opts: Parameters<typeof memoryView>[2] = { nodeId: id };
    if (floor !== undefined) opts.floor = floor;
    if (memory === 'summary') {
      const s = this.summary();
      if (s) opts.summary = s;
    }
    return memoryView(d.transcript, memory, opts);
  }

  emit(event: BehaviorEvent): void {
    const e = event as unknown as Record<string, unknown>;
    if (e.nodeId === undefined) e.nodeId = this.node.id;
    this.engine.emit(this.cx, e);
  }
  model(name?: string): ModelPort {
    return new BoundModel(this.engine, this, name ?? 'default');
  }
  tools(): Promise<readonly ToolPort[]> {
    return this.engine.toolsFor(this);
  }
  ask(question: string, options?: string[]): Promise<string> {
    return this.engine.ask(this, question, options);
  }
  conditions(extra?: Partial<ConditionContext>): ConditionContext {
    const d = this.cx.data;
    const last = d.transcript[d.transcript.length - 1];
    const c: ConditionContext = { state: d.state, counters: this.counters, input: d.input };
    if (last) {
      // `last.json` is parsed only when a condition reads it.
      c.last =
        last.json !== undefined
          ? { content: last.content, author: last.author, json: last.json }
          : new LastView(last);
    }
    if (extra) Object.assign(c, extra);
    return c;
  }
}

/** What an agent is about to read this turn: its pending inbox items, or else the last message someone else wrote. */
function turnInput(nc: NodeCtx): string | undefined {
  const inbox = nc.inbox;
  if (inbox.length > 0) return inbox.map((i) => i.text).join('\n\n');
  const t = nc.transcript;
  for (let i = t.length - 1; i >= 0; i--) if (t[i]!.author !== nc.node.id) return t[i]!.content;
  return undefined;
}

class ObserverCtx extends NodeCtx implements ObserverContext {
  readonly subject: string;
  readonly pending?: { content: string; json?: unknown };
  readonly toolCalls: number;
  readonly recentBySubject: number;

  constructor(
    engine: Run,
    cx: Ctx,
    observer: GNode,
    subject: NodeCtx,
    readonly phase: 'before' | 'after',
    o: Outcome | undefined,
    readonly rejections: number,
  ) {
    super(engine, cx, observer, [], { at: null, scopes: [rootScope(0)] });
    this.subject = subject.node.id;
    this.turn = subject.turn;
    if (o?.message) this.pending = o.message;
    else if (phase === 'before') {
      const read = turnInput(subject);
      if (read !== undefined) this.pending = { content: read };
    }
    this.toolCalls = o?.toolCalls ?? 0;
    // The engine's clock, as commit() stamps `recent` with it.
    const now = engine.clock.now();
    this.recentBySubject = (cx.data.recent[this.subject] ?? []).filter((t) => now - t <= 60_000).length;
  }
  override summary(): Summary | undefined {
    return this.cx.data.summaries[this.node.id];
  }
}

class TeamCtx extends NodeCtx implements TeamContext {
  readonly members;
  readonly stats;
  constructor(engine: Run, cx: Ctx, team: GNode, cur: Cursor, scope: Scope) {
    super(engine, cx, team, [], cur);
    this.members = (engine.graph.members.get(team.id) ?? []).map((m) => {
      const r: { id: string; kind: string; label: string; role?: string } = {
        id: m.id,
        kind: m.kind,
        label: m.label,
      };
      if (typeof m.config.role === 'string') r.role = m.config.role;
      return r;
    });
    this.stats = scope;
    void asText;
  }
  override summary(): Summary | undefined {
    return this.engine.summaryFor(this.cx, this.node);
  }
}
