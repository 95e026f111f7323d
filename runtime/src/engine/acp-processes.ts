/**
 * The ACP agent processes of a run (acp-agent.ts is the behaviour): one process per agent node,
 * spawned on its first turn after checking the operator's consent, closed when the run ends.
 */
import { type FlowBehavior, NodeError } from '@switchboard/nodes/core';
import { type AcpBackendConfig, type AcpSession, acpBehavior } from './acp-agent.js';
import { NO_ENTRIES, own, type RunCore } from './context.js';
import type { NodeCtx } from './node-ctx.js';

type AcpProcess = Promise<{ session: AcpSession; close: () => Promise<void> }>;

export class AcpProcesses {
  /** ACP agent processes of this run, by node id. */
  private agents: ReadonlyMap<string, AcpProcess> = NO_ENTRIES;
  private flow: FlowBehavior | undefined;

  constructor(private readonly run: RunCore) {}

  /** The behaviour of agents whose `config.backend` is an ACP process. */
  behavior(): FlowBehavior {
    const events = this.run.events;
    this.flow ??= acpBehavior({
      agentFor: (nodeId, backend) => this.agentFor(nodeId, backend).then((a) => a.session),
      emitModel: (nc, type, text) => {
        const n = nc as unknown as NodeCtx;
        if (type === 'model.delta') events.emit(n.cx, { type, nodeId: n.node.id, text });
        else {
          n.modelName = `acp:${(n.node.config.backend as AcpBackendConfig).command}`;
          events.emit(n.cx, {
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
    return this.flow;
  }

  /** The run ended: every process it spawned is closed. */
  closeAll(): void {
    for (const a of this.agents.values()) a.then((x) => x.close()).catch(() => {});
  }

  /** Spawns (once per run) the ACP process of an agent, after checking the operator's consent. */
  private agentFor(nodeId: string, backend: AcpBackendConfig): AcpProcess {
    let p = this.agents.get(nodeId);
    if (!p) {
      const flow = this.run.flow;
      p = (async () => {
        const { requireFlowConsent } = await import('../mcp/consent.js');
        try {
          // Approved for this flow as it is now (id and a hash of its command definitions).
          requireFlowConsent(flow, 'acp-agent', nodeId);
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
      const agents = own(this.agents);
      agents.set(nodeId, p);
      this.agents = agents;
      p.catch(() => agents.delete(nodeId));
    }
    return p;
  }
}
