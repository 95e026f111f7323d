/**
 * The pins of the flow on the canvas (see schemas/src/pins.ts): read when the flow is opened,
 * replaced whenever the server says they changed (a collaborator pinned or unpinned), and
 * changed from the trace panel and the node badges. Kept per node id, so a badge re-renders
 * only when its own node's pin changes. Runs the editor starts use them: the server applies the
 * flow's pins to every run of it.
 */
import type { FlowApi, PinView } from '../model/api.js';
import { KeyedStore } from '../store/keyed.js';

export class FlowPins {
  readonly byNode = new KeyedStore<PinView | undefined>(undefined);
  private flowId: string | undefined;

  constructor(private readonly api: FlowApi) {}

  /** Shows the pins of `flowId` (none until the server answers; none at all offline). */
  async load(flowId: string): Promise<void> {
    this.flowId = flowId;
    this.byNode.replaceAll(new Map());
    try {
      this.apply(flowId, await this.api.pins(flowId));
    } catch {
      // A flow not saved on the server yet has no pins; the first pin creates them.
    }
  }

  /** The pins of `flowId` as the server has them now (ignored for another flow). */
  apply(flowId: string, list: readonly PinView[]): void {
    if (flowId !== this.flowId) return;
    this.byNode.replaceAll(new Map(list.map((p) => [p.nodeId, p])));
  }

  /** Pins `nodeId`'s output of its turn `turn` in run `fromRun`; throws the server's sentence. */
  async pin(nodeId: string, fromRun: string, turn: number): Promise<void> {
    const flowId = this.flowId;
    if (flowId === undefined) throw new Error('Pinning needs a flow saved on the server');
    this.apply(flowId, await this.api.pin(flowId, nodeId, fromRun, turn));
  }

  async unpin(nodeId: string): Promise<void> {
    const flowId = this.flowId;
    if (flowId === undefined) return;
    this.apply(flowId, await this.api.unpin(flowId, nodeId));
  }
}
