/**
 * Per-node counters of a run, computed from its events: the one definition the REST API
 * (`GET /api/runs/:id/nodes`) and the editor's node faces share. Incremental (`add` one event at
 * a time, O(1) each) so a live canvas updates as events arrive. Browser-safe.
 */
import type { RunEvent } from './events.js';

/** `stopped`: the run ended (cancelled, failed elsewhere, interrupted) while the node was running or waiting. */
export type NodeRunStatus = 'running' | 'waiting' | 'completed' | 'failed' | 'stopped';

export interface NodeSummary {
  nodeId: string;
  status: NodeRunStatus;
  /** Turns the node took (turn.started). */
  turns: number;
  /** Model calls (model.request; for older logs, model.completed). */
  calls: number;
  promptTokens: number;
  completionTokens: number;
  /** Cost of its model calls, from the flow's `models.<name>.pricing`; absent when none is priced. */
  cost?: number;
  toolCalls: number;
  /** Time spent in the node (node.started to node.completed/failed), up to `now` while it runs. */
  elapsedMs: number;
  /** Failed attempts (a model error or a rejected reply that made the node try again) and failed executions. */
  failures: number;
  /** Transport retries of model calls (model.retry). */
  retries: number;
  /** Turns whose output came from a pin (node.pinned): no model call; absent when none. */
  pinned?: number;
  firstSeq: number;
  lastSeq: number;
  /** The reply being generated (model.delta since the node's last call began); '' when none. */
  streaming: string;
}

export interface PricedModel {
  pricing?: { input: number; output: number };
}

interface Acc extends NodeSummary {
  /** When the node's current execution started, if it runs. */
  openSince?: number;
  /** The flow model of its last call. */
  model?: string;
}

const PER_TOKEN = 1 / 1_000_000;

export class NodeSummaries {
  private readonly nodes = new Map<string, Acc>();
  /** Timestamp of the last event seen: the clock of a finished run. */
  lastTs = 0;

  constructor(private models: Readonly<Record<string, PricedModel>> = {}) {}

  /** The flow's models, for prices of calls counted from now on. */
  setModels(models: Readonly<Record<string, PricedModel>>): void {
    this.models = models;
  }

  /** An independent copy (a view that goes back to an earlier point of the run starts from one). */
  clone(): NodeSummaries {
    const c = new NodeSummaries(this.models);
    c.lastTs = this.lastTs;
    for (const [k, a] of this.nodes) c.nodes.set(k, { ...a });
    return c;
  }

  private acc(id: string, seq: number): Acc {
    let a = this.nodes.get(id);
    if (!a) {
      a = {
        nodeId: id,
        status: 'running',
        turns: 0,
        calls: 0,
        promptTokens: 0,
        completionTokens: 0,
        toolCalls: 0,
        elapsedMs: 0,
        failures: 0,
        retries: 0,
        firstSeq: seq,
        lastSeq: seq,
        streaming: '',
      };
      this.nodes.set(id, a);
    }
    a.lastSeq = seq;
    return a;
  }

  private close(a: Acc, ts: number, status: NodeRunStatus): void {
    if (a.openSince !== undefined) a.elapsedMs += Math.max(0, ts - a.openSince);
    a.openSince = undefined;
    a.status = status;
    a.streaming = '';
  }

  add(e: RunEvent): void {
    this.lastTs = e.ts;
    const id = e.nodeId;
    if (id === undefined) {
      // The run ended: nothing runs any more, whatever its nodes last said.
      if (
        e.type === 'run.completed' ||
        e.type === 'run.failed' ||
        e.type === 'run.cancelled' ||
        e.type === 'run.interrupted'
      )
        for (const a of this.nodes.values()) if (a.openSince !== undefined) this.close(a, e.ts, 'stopped');
      return;
    }
    // A resumed run emits again what its log already holds since the checkpoint; those copies
    // (`replayed`) change nothing: turns, calls, tokens and failures are counted once.
    if (e.replayed) return;
    switch (e.type) {
      case 'node.started': {
        const a = this.acc(id, e.seq);
        if (a.openSince === undefined) a.openSince = e.ts;
        a.status = 'running';
        break;
      }
      case 'node.completed':
        this.close(this.acc(id, e.seq), e.ts, 'completed');
        break;
      case 'node.failed': {
        const a = this.acc(id, e.seq);
        a.failures++;
        this.close(a, e.ts, 'failed');
        break;
      }
      case 'turn.started':
        this.acc(id, e.seq).turns++;
        break;
      case 'model.request': {
        const a = this.acc(id, e.seq);
        a.calls++;
        a.model = e.model;
        a.streaming = '';
        if (e.attempt > 1 && e.call === 1) a.failures++;
        break;
      }
      case 'model.delta': {
        const a = this.acc(id, e.seq);
        a.streaming += e.text;
        break;
      }
      case 'model.completed': {
        const a = this.acc(id, e.seq);
        if (a.model === undefined) a.calls++;
        a.streaming = '';
        const u = e.usage;
        if (u) {
          a.promptTokens += u.promptTokens;
          a.completionTokens += u.completionTokens;
          const m =
            a.model !== undefined && Object.hasOwn(this.models, a.model) ? this.models[a.model] : undefined;
          const p = m?.pricing;
          if (p)
            a.cost = (a.cost ?? 0) + (u.promptTokens * p.input + u.completionTokens * p.output) * PER_TOKEN;
        }
        break;
      }
      case 'model.retry':
        this.acc(id, e.seq).retries++;
        break;
      case 'node.pinned': {
        const a = this.acc(id, e.seq);
        a.pinned = (a.pinned ?? 0) + 1;
        break;
      }
      case 'tool.called':
        this.acc(id, e.seq).toolCalls++;
        break;
      case 'input.requested':
        this.acc(id, e.seq).status = 'waiting';
        break;
      case 'input.received': {
        const a = this.acc(id, e.seq);
        if (a.status === 'waiting') a.status = 'running';
        break;
      }
      default:
        break;
    }
  }

  addAll(events: Iterable<RunEvent>): this {
    for (const e of events) this.add(e);
    return this;
  }

  /** One node's counters, with a running node's time counted up to `now` (default: the last event). */
  get(nodeId: string, now = this.lastTs): NodeSummary | undefined {
    const a = this.nodes.get(nodeId);
    return a ? snapshot(a, now) : undefined;
  }

  /** Every node that ran, in the order it first appeared. */
  list(now = this.lastTs): NodeSummary[] {
    return [...this.nodes.values()].map((a) => snapshot(a, now));
  }
}

function snapshot(a: Acc, now: number): NodeSummary {
  const { openSince, model: _model, ...s } = a;
  if (openSince !== undefined) s.elapsedMs += Math.max(0, now - openSince);
  return s;
}

/** Per-node counters of a log. `models` are the flow's (for prices); `now` ends a running node's time. */
export function summarizeNodes(
  events: Iterable<RunEvent>,
  models: Readonly<Record<string, PricedModel>> = {},
  now?: number,
): NodeSummary[] {
  const s = new NodeSummaries(models).addAll(events);
  return s.list(now ?? s.lastTs);
}
