/**
 * The interpreter. Control flow is an explicit state machine over cursors (see state.ts): each
 * loop iteration runs one node of one cursor and moves the cursor along edges (routing.ts), into
 * and out of team scopes (teams.ts); parallel branches are child cursors joined in a
 * deterministic order. Nothing recurses per node, so a chain of 10,000 agents runs on Node's
 * default stack, and the whole control position is plain data, checkpointed after every turn.
 *
 * `Run` keeps the loop, a turn and the run's lifecycle; each other concern owns its state in a
 * module of its own (CONTEXT.md has the map): events.ts, control.ts (pause, step,
 * breakpoints), human.ts, checkpoints.ts, run-limits.ts, model-calls.ts, tools.ts, nested.ts,
 * acp-processes.ts, conversation.ts, observers.ts, node-ctx.ts.
 */

import { setMaxListeners } from 'node:events';
import {
  defaultRegistry,
  type FlowBehavior,
  type KindRegistry,
  type Message,
  NodeError,
  type TeamBehavior,
} from '@switchboard/nodes/core';
import type { Flow } from '@switchboard/schemas';
import { ModelError } from '../models/types.js';
import { pinnedBehaviors } from '../pins/behavior.js';
import { AcpProcesses } from './acp-processes.js';
import { Checkpoints } from './checkpoints.js';
import {
  type Ctx,
  emptyUsage,
  type Failed,
  isFailed,
  type Outcome,
  type RunCore,
  SETTLED,
  StateView,
} from './context.js';
import { Control } from './control.js';
import { Conversation } from './conversation.js';
import { errorInfo } from './error-info.js';
import { Cancelled, RunFailure } from './errors.js';
import type { EventQueue } from './event-queue.js';
import { Emitter } from './events.js';
import { compileFlow, type GNode, type Graph } from './graph.js';
import { HumanInput } from './human.js';
import { grantMic } from './mic.js';
import { ModelCalls } from './model-calls.js';
import { Delegation } from './nested.js';
import { NodeCtx } from './node-ctx.js';
import { runGuards, runObservers } from './observers.js';
import { candidatesFor, onFailure, route, runFork } from './routing.js';
import { RunLimits, type Stopper } from './run-limits.js';
import { Sampling } from './sampling.js';
import { type CheckpointData, type Cursor, newRunData, restoreRunData, rootScope } from './state.js';
import { enterTeam, leaveTeam } from './teams.js';
import { Tools } from './tools.js';
import type { RunCheckpoint, RunCommand, RunOptions, RunResult, RunStatus } from './types.js';

const SYSTEM_CLOCK: { now(): number } = { now: Date.now };

export class Run implements RunCore, Stopper {
  readonly runId: string;
  status: RunStatus = 'pending';
  readonly graph: Graph;
  readonly registry: KindRegistry;
  readonly clock: { now(): number };
  readonly now: () => number;
  private readonly abort = new AbortController();
  readonly signal: AbortSignal = this.abort.signal;
  /** Why the run stops (cancelled, failed), once it does: set by halt(), failNow() and cancel(). */
  stop: RunFailure | Cancelled | undefined;
  /** Undoes what the run registered on the host's signal. */
  private unlisten: (() => void) | undefined;
  private manyListeners = false;
  private readonly top: Ctx;
  private root: Cursor;

  // The concerns, each owning its state (CONTEXT.md).
  readonly events: Emitter;
  readonly limits: RunLimits;
  readonly control: Control;
  readonly human: HumanInput;
  readonly checkpoints: Checkpoints;
  readonly conversation: Conversation;
  readonly models: ModelCalls;
  // Made on first use: most runs have no tools, delegations or ACP agents.
  private toolsOf: Tools | undefined;
  private acpOf: AcpProcesses | undefined;
  /** Behaviours of pinned nodes (../pins/), when the run has pins. */
  private readonly pinned: Map<string, FlowBehavior> | undefined;

  constructor(
    readonly flow: Flow,
    readonly input: unknown,
    readonly options: RunOptions,
    queue: EventQueue,
    runId: string,
    private readonly done: (r: RunResult) => void,
  ) {
    this.registry = options.registry ?? defaultRegistry;
    this.graph = compileFlow(flow, this.registry);
    this.now = options.now ?? Date.now;
    this.clock = options.now ? { now: options.now } : SYSTEM_CLOCK;
    this.runId = runId;
    this.events = new Emitter(this.now, options.onEvent, queue, options.resume?.seq ?? 0);
    this.limits = new RunLimits(this, flow, this.graph, options);
    this.pinned = options.pins?.length ? pinnedBehaviors(options.pins, flow) : undefined;
    const cp = options.resume?.data as CheckpointData | undefined;
    if (options.resume) {
      if (cp?.v !== 1 || !cp.root || !cp.data)
        throw new RunFailure('flow_invalid', 'the checkpoint is not a version 1 engine checkpoint');
      if (options.resume.flowId !== flow.id)
        throw new RunFailure(
          'flow_invalid',
          `the checkpoint belongs to flow "${options.resume.flowId}", not "${flow.id}"`,
        );
      const data = restoreRunData(cp.data);
      this.top = { runId: this.runId, data, depth: 0, state: new StateView(data) };
      this.root = cp.root;
    } else {
      const data = newRunData(input);
      this.top = { runId: this.runId, data, depth: 0, state: new StateView(data) };
      this.root = { at: this.graph.start.id, scopes: [rootScope(this.now())] };
    }
    this.checkpoints = new Checkpoints(this, () => this.snapshot());
    const save = (cx: Ctx) => this.checkpoints.save(cx);
    this.control = new Control(this, save, cp?.breakpoints);
    this.human = new HumanInput(this, this.checkpoints, cp?.answers);
    this.conversation = new Conversation(this, options.resume !== undefined);
    this.models = new ModelCalls(this, this.control, this.limits, cp?.providers);
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

  get tools(): Tools {
    if (this.toolsOf === undefined) {
      const parts = { control: this.control, limits: this.limits, conversation: this.conversation };
      const delegation = new Delegation(this, this, parts);
      this.toolsOf = new Tools(this, {
        ...parts,
        human: this.human,
        delegation,
        sampling: new Sampling(this, this.models),
      });
    }
    return this.toolsOf;
  }

  get acp(): AcpProcesses {
    this.acpOf ??= new AcpProcesses(this);
    return this.acpOf;
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
      if (this.options.resume) this.events.emit(cx, { type: 'run.resumed', fromCheckpoint: true });
      else {
        const fork = this.options.forkedFrom;
        this.events.emit(cx, {
          type: 'run.started',
          flowId: this.flow.id,
          input: this.input as never,
          ...(fork ? { forkedFrom: fork } : {}),
          ...(this.options.pins?.length ? { pins: this.options.pins } : {}),
        });
        this.conversation.append(cx, { role: 'user', author: 'user', content: cx.data.task });
      }
      this.limits.startClock(cx);
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
          this.events.emit(cx, { type: 'run.completed', output: output as never });
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
    this.events.emit(cx, { type: 'run.failed', error });
    this.finish({
      runId: this.runId,
      status: 'failed',
      error: { code: error.code, message: error.message },
    });
  }

  private finish(r: RunResult): void {
    this.limits.stopClock();
    if (this.status === 'completed' || this.status === 'failed' || this.status === 'cancelled') return;
    this.status = r.status;
    this.events.close();
    this.control.release();
    this.checkpoints.release();
    const release = this.options.tools?.release(this.runId);
    if (release) release.catch(() => {});
    this.acpOf?.closeAll();
    this.unlisten?.();
    this.done(r);
  }

  cancel(reason?: string): void {
    if (this.events.ended || this.stop) return;
    this.stop = new Cancelled(reason ?? 'cancelled');
    const ev: Record<string, unknown> = { type: 'run.cancelled' };
    if (reason !== undefined) ev.reason = reason;
    this.events.emit(this.top, ev);
    this.events.ended = true; // nothing follows run.cancelled
    this.abort.abort(this.stop);
    this.human.wakeAll();
    this.finish({ runId: this.runId, status: 'cancelled' });
  }

  /** Sets the run's stop: the loop ends the run when it finds it. */
  halt(stop: RunFailure): void {
    this.stop = stop;
  }

  /** Fails the run now, whatever is in flight: a call that ignores its abort cannot hold it open. */
  failNow(stop: RunFailure): void {
    this.stop = stop;
    const error = errorInfo(stop);
    this.events.emit(this.top, { type: 'run.failed', error });
    this.finish({ runId: this.runId, status: 'failed', error: { code: error.code, message: error.message } });
    this.abort.abort(stop);
    this.human.wakeAll();
  }

  /** Calls in flight listen on the run's signal; parallel work legitimately adds many (set once, lazily: it is not cheap). */
  allowManyListeners(): void {
    if (this.manyListeners) return;
    this.manyListeners = true;
    setMaxListeners(0, this.abort.signal);
  }

  // -------------------------------------------------------------------------------------------
  // Commands

  send(cmd: RunCommand): void {
    if (this.events.ended) return;
    switch (cmd.type) {
      case 'cancel':
        this.cancel(cmd.reason);
        return;
      case 'fail':
        // The host ended the run by name.
        if (!this.stop) this.failNow(new RunFailure(cmd.code, cmd.message));
        return;
      case 'pause':
        this.control.pause();
        return;
      case 'resume':
        this.control.resume(false);
        return;
      case 'step':
        this.control.resume(true);
        return;
      case 'breakpoint':
        this.control.breakpoint(cmd.nodeId, cmd.on);
        return;
      case 'inject': {
        const msg: Omit<Message, 'seq'> = { role: 'user', author: 'user', content: cmd.text };
        if (cmd.nodeId !== undefined) {
          msg.to = cmd.nodeId;
          this.conversation.addInbox(this.top, cmd.nodeId, { kind: 'user', text: cmd.text, from: 'user' });
        }
        this.conversation.append(this.top, msg);
        return;
      }
      case 'answer':
        this.human.answer(cmd.nodeId, cmd.answer);
        return;
    }
  }

  /** The run's position as plain data; valid until the next turn, so hosts serialise it at once. */
  snapshot(): RunCheckpoint {
    const data: CheckpointData = {
      v: 1,
      root: this.root,
      data: this.top.data,
      providers: this.models.snapshots(),
    };
    const breakpoints = this.control.breakpointList();
    if (breakpoints) data.breakpoints = breakpoints;
    const answers = this.human.pending();
    if (answers) data.answers = answers;
    return { version: 1, runId: this.runId, flowId: this.flow.id, seq: this.events.seq, data };
  }

  // The control loop

  /** Runs one cursor until it is done. Iterative: one node per iteration. */
  async drive(cx: Ctx, cur: Cursor): Promise<void> {
    while (!cur.done) {
      if (this.stop) throw this.stop;
      // Between steps: a pause here checkpoints the run (control.ts).
      const g = this.control.gate(cx, true);
      if (g) await g;
      if (cur.fork) {
        await runFork(this, cx, cur);
        continue;
      }
      const scope = cur.scopes[cur.scopes.length - 1]!;
      if (cur.at === null && cur.scopes.length === 1) {
        cur.done = true;
        break;
      }
      if (cur.stopAt !== undefined && cur.at === cur.stopAt) {
        cur.done = true;
        break;
      }
      // A step opens: no checkpoint is cut until it closes (checkpoints.ts).
      const w = this.checkpoints.enter(cx);
      if (w) {
        await w;
        if (this.stop) throw this.stop;
      }
      if (cur.at === null) {
        await leaveTeam(this, cx, cur, 'no further member');
        await this.checkpoints.leave(cx, false);
        continue;
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
          this.conversation.lastMessage(cx),
          this.now(),
        );
        if (reason !== undefined) {
          await leaveTeam(this, cx, cur, reason);
          await this.checkpoints.leave(cx, false);
          continue;
        }
      }
      if (node.role === 'team') {
        await enterTeam(this, cx, cur, node, undefined);
        await this.checkpoints.leave(cx, false);
        continue;
      }
      let outcome: Outcome | Failed;
      if (this.control.hasBreakpoint(node.id) || (node.role === 'agent' && node.observers.length > 0))
        outcome = await this.execute(cx, cur, node);
      else {
        // A plain step (no breakpoint, no observers), as execute() runs it, inline: an async
        // frame of its own, or a reaction between the turn and this loop, costs every step of
        // every run (bench gate e).
        const beh = this.flowBehavior(node);
        const turn = this.beginNode(cx, node);
        const nc = new NodeCtx(this, cx, node, candidatesFor(this.graph, cur, node), cur);
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
        await onFailure(this, cx, cur, node, outcome.failed);
        await this.checkpoints.leave(cx, false);
        continue;
      }
      // A delegated run ends with its target: the target's own handovers are not followed.
      if (cur.stopAfter === node.id && cur.scopes.length === 1) cur.done = true;
      else {
        const r = route(this, cx, cur, node, outcome);
        if (r) await r;
      }
      const cp = this.checkpoints.leave(cx, true);
      if (cp) await cp;
      this.control.stepped(node.role);
    }
  }

  /** The behaviour that runs a node on the control path. */
  private flowBehavior(node: GNode): FlowBehavior {
    const pinned = this.pinned?.get(node.id);
    if (pinned) return pinned;
    const beh =
      node.role === 'agent' && node.config.backend !== undefined
        ? this.acp.behavior()
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
    this.limits.countStep(cx, node.id);
    const turnBearing =
      node.role === 'agent' || node.role === 'decider' || node.role === 'human' || node.role === 'step';
    this.events.node(cx, 'node.started', node.id);
    if (!turnBearing) return 0;
    const turn = ++cx.data.counters.turns;
    this.events.turnStarted(cx, node.id, turn);
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
      this.events.emit(cx, {
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
    this.events.emit(cx, { type: 'node.failed', nodeId: node.id, error });
    return { failed: error };
  }

  private commitTurn(cx: Ctx, cur: Cursor, nc: NodeCtx, o: Outcome, turn: number): void {
    this.commit(cx, cur, nc, o);
    if (turn > 0) this.turnCompleted(cx, nc, turn);
  }

  private nodeCompleted(cx: Ctx, node: GNode, o: Outcome): void {
    if (o.output !== undefined)
      this.events.emit(cx, { type: 'node.completed', nodeId: node.id, output: o.output });
    else this.events.node(cx, 'node.completed', node.id);
  }

  /** Runs one node: events, observers, retries, commit. Returns its outcome or its failure. */
  async execute(cx: Ctx, cur: Cursor, node: GNode): Promise<Outcome | Failed> {
    if (this.control.hasBreakpoint(node.id)) {
      // Stopped before the step: a boundary, where the pause checkpoints the run.
      await this.checkpoints.leave(cx, false);
      await this.control.breakAt(cx, node.id);
      const w = this.checkpoints.enter(cx);
      if (w) await w;
    }
    const beh = this.flowBehavior(node);
    const turn = this.beginNode(cx, node);
    const nc = new NodeCtx(this, cx, node, candidatesFor(this.graph, cur, node), cur);
    nc.turn = turn;
    let outcome: Outcome | undefined;
    // Guard rejections per observer, for this node's attempts; only agents with observers need it.
    let rejections: Map<string, number> | undefined;
    if (node.role === 'agent' && node.observers.length > 0) {
      await runObservers(this, cx, nc, 'before', undefined);
      rejections = new Map();
      // A `before` guard that refuses the turn holds it here: the model is never called.
      const held: Outcome = {};
      if ((await runGuards(this, cx, nc, 'before', held, rejections)) === 'held') outcome = held;
    }
    for (let attempt = 1; outcome === undefined; ) {
      try {
        const o: Outcome = await beh.run(nc);
        if (this.stop) throw this.stop;
        if (node.role === 'agent' && o.message && node.observers.length > 0) {
          rejections ??= new Map();
          const verdict = await runGuards(this, cx, nc, 'after', o, rejections);
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
    if (node.role === 'agent' && node.observers.length > 0)
      await runObservers(this, cx, nc, 'after', outcome);
    this.nodeCompleted(cx, node, outcome);
    return outcome;
  }

  turnCompleted(cx: Ctx, nc: NodeCtx, turn: number): void {
    const usage = { promptTokens: nc.promptTokens, completionTokens: nc.completionTokens };
    if (nc.modelName !== undefined) this.events.turnCompleted(cx, nc.node.id, turn, usage, nc.modelName);
    else this.events.emit(cx, { type: 'turn.completed', nodeId: nc.node.id, turn, usage });
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
        msg = this.conversation.record(cx, { role, author: node.id, content, seq: ++d.msgSeq }, node.id);
      else {
        const m: Omit<Message, 'seq'> = { role, author: node.id, content };
        if (json !== undefined) m.json = json;
        if (to !== undefined) m.to = to;
        msg = this.conversation.append(cx, m, node.id);
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
    if (o.grantMic !== undefined) grantMic(d, o.grantMic, node.id, (e) => this.events.emit(cx, e));
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
}
