/**
 * Run highlighting on the canvas: which node is active and the status of each node in the
 * current run, which edge control last passed along, and where breakpoints are. Each node and
 * edge component subscribes to its own entry, so one run event re-renders at most two node
 * components (the node that stops being active and the one that becomes active), or two edges.
 * The live event stream feeds this store through `applyRunEvent`. Per-node counters (turns,
 * tokens, cost, time, failures, the reply being streamed) are a keyed store of their own, computed
 * by the same function the server's `GET /api/runs/:id/nodes` uses.
 */
import { NodeSummaries, type NodeSummary, type PricedModel, type RunEvent } from '@switchboard/schemas/core';
import { KeyedStore } from './keyed.js';

/** `paused`: the run stopped before this node (a breakpoint). */
export type NodeRunStatus = 'idle' | 'running' | 'completed' | 'failed' | 'waiting' | 'paused';

export interface NodeRunView {
  active: boolean;
  status: NodeRunStatus;
}

const IDLE: NodeRunView = Object.freeze({ active: false, status: 'idle' as const });

/** An edge in the current run: control is passing along it now (`active`), or it did (`taken`). */
export type EdgeRunView = '' | 'active' | 'taken';

const RUN_END = new Set(['run.completed', 'run.failed', 'run.cancelled', 'run.interrupted']);

export class RunState {
  readonly store = new KeyedStore<NodeRunView>(IDLE);
  readonly edges = new KeyedStore<EdgeRunView>('');
  /** Nodes a run pauses before (set by the person watching; sent with each run). */
  readonly breakpoints = new KeyedStore<boolean>(false);
  /** Counters of each node that ran. */
  readonly counters = new KeyedStore<NodeSummary | undefined>(undefined);
  /** Two runs compared: which of them each node ran in ('' when no comparison is shown). */
  readonly compare = new KeyedStore<'' | 'a' | 'b' | 'both'>('');
  private summaries = new NodeSummaries();
  private activeId: string | undefined;
  private activeEdgeId: string | undefined;

  get(nodeId: string): NodeRunView {
    return this.store.get(nodeId);
  }

  subscribe(nodeId: string, fn: () => void): () => void {
    return this.store.subscribe(nodeId, fn);
  }

  /** Makes `nodeId` the active node (or none); touches only the old and the new active node. */
  setActive(nodeId: string | undefined): void {
    if (this.activeId === nodeId) return;
    const prev = this.activeId;
    this.activeId = nodeId;
    if (prev !== undefined) this.store.set(prev, this.view(this.get(prev).status, false));
    if (nodeId !== undefined) this.store.set(nodeId, this.view(this.get(nodeId).status, true));
  }

  setStatus(nodeId: string, status: NodeRunStatus): void {
    const cur = this.get(nodeId);
    if (cur.status !== status) this.store.set(nodeId, this.view(status, cur.active));
  }

  /** Marks the edge control passes along; the previous one becomes `taken`. */
  setActiveEdge(edgeId: string | undefined): void {
    if (this.activeEdgeId === edgeId) return;
    const prev = this.activeEdgeId;
    this.activeEdgeId = edgeId;
    if (prev !== undefined) this.edges.set(prev, 'taken');
    if (edgeId !== undefined) this.edges.set(edgeId, 'active');
  }

  get activeEdge(): string | undefined {
    return this.activeEdgeId;
  }

  get activeNode(): string | undefined {
    return this.activeId;
  }

  toggleBreakpoint(nodeId: string, on = !this.breakpoints.get(nodeId)): void {
    this.breakpoints.set(nodeId, on);
  }

  breakpointList(): string[] {
    return [...this.breakpoints.entries()].filter(([, on]) => on).map(([id]) => id);
  }

  /** The flow's models (their prices make the cost counters). */
  setModels(models: Readonly<Record<string, PricedModel>>): void {
    this.summaries.setModels(models);
  }

  /** Forgets the run: every node and edge back to idle (breakpoints stay). */
  reset(): void {
    this.activeId = undefined;
    this.activeEdgeId = undefined;
    this.store.replaceAll(new Map());
    this.edges.replaceAll(new Map());
    this.summaries = new NodeSummaries();
    this.counters.replaceAll(new Map());
  }

  /**
   * Takes the run marks of `from` (active node and edge, node statuses, edges taken): going back
   * to an earlier point of the run. Breakpoints stay; only entries that change notify (counters
   * equal field by field keep the object shown, so their node face does not re-render).
   */
  restoreRun(from: RunState): void {
    this.activeId = from.activeId;
    this.activeEdgeId = from.activeEdgeId;
    const marks = new Map<string, NodeRunView>();
    for (const [id, next] of from.store.entries()) {
      const cur = this.store.get(id);
      marks.set(id, cur.status === next.status && cur.active === next.active ? cur : next);
    }
    this.store.replaceAll(marks);
    this.edges.replaceAll(new Map(from.edges.entries()));
    this.summaries = from.summaries.clone();
    const counters = new Map<string, NodeSummary | undefined>();
    for (const [id, next] of from.counters.entries()) {
      const cur = this.counters.get(id);
      counters.set(id, cur && next && sameSummary(cur, next) ? cur : next);
    }
    this.counters.replaceAll(counters);
  }

  /** An independent copy of the run marks (no subscribers, breakpoints not taken). */
  copy(): RunState {
    const c = new RunState();
    c.restoreRun(this);
    return c;
  }

  /**
   * Follows a run's events: `node.started|completed|failed`, `input.requested`, `handover`
   * (its edge) and the end of the run. `top` is false for events of a nested (delegated) run,
   * whose end does not end the run being watched.
   */
  applyRunEvent(ev: { type: string; nodeId?: string; edgeId?: string }, top = true): void {
    if ((ev as RunEvent).seq !== undefined) {
      this.summaries.add(ev as RunEvent);
      if (ev.nodeId !== undefined) this.counters.set(ev.nodeId, this.summaries.get(ev.nodeId));
      else if (RUN_END.has(ev.type) && top)
        for (const n of this.summaries.list()) this.counters.set(n.nodeId, n);
    }
    if (ev.type === 'run.paused' && ev.nodeId !== undefined && top) {
      // A breakpoint: the run stopped before this node, which gets the glow and the pause badge.
      this.setActive(ev.nodeId);
      this.setStatus(ev.nodeId, 'paused');
      return;
    }
    if (ev.type === 'run.resumed') {
      const at = this.activeId;
      if (at !== undefined && this.get(at).status === 'paused') this.setStatus(at, 'idle');
      return;
    }
    // Control passing along a handover edge, or a delegation called through its edge.
    if (ev.type === 'handover' || (ev.type === 'tool.called' && ev.edgeId)) {
      if (ev.edgeId) this.setActiveEdge(ev.edgeId);
      return;
    }
    if (RUN_END.has(ev.type)) {
      if (top) {
        this.setActive(undefined);
        this.setActiveEdge(undefined);
      }
      return;
    }
    if (!ev.nodeId) return;
    if (ev.type === 'node.started') {
      // One change per node: the old active node loses the mark, the new one gets status and mark.
      const prev = this.activeId;
      this.activeId = ev.nodeId;
      if (prev !== undefined && prev !== ev.nodeId)
        this.store.set(prev, this.view(this.get(prev).status, false));
      this.store.set(ev.nodeId, this.view('running', true));
    } else if (ev.type === 'node.completed') this.setStatus(ev.nodeId, 'completed');
    else if (ev.type === 'node.failed') this.setStatus(ev.nodeId, 'failed');
    else if (ev.type === 'input.requested') this.setStatus(ev.nodeId, 'waiting');
  }

  private view(status: NodeRunStatus, active: boolean): NodeRunView {
    return status === 'idle' && !active ? IDLE : { status, active };
  }
}

/** Two summaries of one node that show the same (every field equal). */
export function sameSummary(a: NodeSummary, b: NodeSummary): boolean {
  if (a === b) return true;
  const ka = Object.keys(a) as Array<keyof NodeSummary>;
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) if (a[k] !== b[k]) return false;
  return true;
}
