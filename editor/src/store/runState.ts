/**
 * Run highlighting on the canvas: which node is active and the status of each node in the
 * current run. Each node component subscribes to its own entry, so one run event re-renders at
 * most two node components (the node that stops being active and the one that becomes active).
 * The live event stream feeds this store through `applyRunEvent`.
 */
import { KeyedStore } from './keyed.js';

export type NodeRunStatus = 'idle' | 'running' | 'completed' | 'failed' | 'waiting';

export interface NodeRunView {
  active: boolean;
  status: NodeRunStatus;
}

const IDLE: NodeRunView = Object.freeze({ active: false, status: 'idle' as const });

export class RunState {
  readonly store = new KeyedStore<NodeRunView>(IDLE);
  private activeId: string | undefined;

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

  /** Forgets the run: every node back to idle. */
  reset(): void {
    this.activeId = undefined;
    this.store.replaceAll(new Map());
  }

  /** Follows the node events of a run (`node.started|completed|failed`, `input.requested`). */
  applyRunEvent(ev: { type: string; nodeId?: string }): void {
    if (!ev.nodeId) return;
    if (ev.type === 'node.started') {
      this.setStatus(ev.nodeId, 'running');
      this.setActive(ev.nodeId);
    } else if (ev.type === 'node.completed') this.setStatus(ev.nodeId, 'completed');
    else if (ev.type === 'node.failed') this.setStatus(ev.nodeId, 'failed');
    else if (ev.type === 'input.requested') this.setStatus(ev.nodeId, 'waiting');
  }

  private view(status: NodeRunStatus, active: boolean): NodeRunView {
    return status === 'idle' && !active ? IDLE : { status, active };
  }
}
