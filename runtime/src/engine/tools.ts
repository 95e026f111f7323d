/**
 * The tools an agent is offered, per node (cached for the run): the host's MCP tools, delegation
 * tools (nested.ts) and the generated handover tools; each call journaled as `tool.called` /
 * `tool.result` events, every MCP call a step of the run.
 */
import type { ToolPort } from '@switchboard/nodes/core';
import type { ToolHandle, ToolHostContext } from '../tools/types.js';
import { type Ctx, NO_ENTRIES, own, type RunCore } from './context.js';
import type { Control } from './control.js';
import type { Conversation } from './conversation.js';
import { operatorRefusal } from './error-info.js';
import { RunFailure } from './errors.js';
import type { GEdge, GNode } from './graph.js';
import { handoverParameters } from './handover-policy.js';
import type { HumanInput } from './human.js';
import type { Delegation } from './nested.js';
import type { NodeCtx } from './node-ctx.js';
import type { RunLimits } from './run-limits.js';
import type { Sampling } from './sampling.js';

const MAX_TOOL_RESULT_IN_EVENT = 64 * 1024;
const NO_TOOLS: Promise<ToolPort[]> = Promise.resolve([]);

export class Tools {
  private cache: ReadonlyMap<string, Promise<ToolPort[]>> = NO_ENTRIES;

  constructor(
    private readonly run: RunCore,
    private readonly parts: {
      control: Control;
      limits: RunLimits;
      human: HumanInput;
      conversation: Conversation;
      delegation: Delegation;
      sampling: Sampling;
    },
  ) {}

  /** The turn each agent with tools is in, by run and node: a server's sampling request is answered in it. */
  private readonly turns = new Map<string, NodeCtx>();

  forNode(nc: NodeCtx): Promise<ToolPort[]> {
    const offerHandover = nc.offerHandoverTools;
    // Most agents of a chain have no tools at all: no lookup, no allocation.
    if (nc.noTools) return NO_TOOLS;
    this.turns.set(`${nc.cx.runId}\u0000${nc.node.id}`, nc);
    const key = `${nc.cx.runId}\u0000${nc.node.id}\u0000${offerHandover ? 1 : 0}`;
    let p = this.cache.get(key);
    if (!p) {
      p = this.build(nc, offerHandover);
      const cache = own(this.cache);
      cache.set(key, p);
      this.cache = cache;
      // A failed lookup (e.g. a server that would not start) is not cached.
      p.catch(() => cache.delete(key));
    }
    return p;
  }

  private async build(nc: NodeCtx, offerHandover: boolean): Promise<ToolPort[]> {
    const node = nc.node;
    const cx = nc.cx;
    const run = this.run;
    const ports: ToolPort[] = [];
    const host = run.options.tools;
    if (host) {
      const hctx: ToolHostContext = {
        runId: run.runId,
        state: nc.state,
        signal: run.signal,
        emit: (e) => run.events.emit(cx, { ...e }),
      };
      if (run.options.dataDir !== undefined) hctx.dataDir = run.options.dataDir;
      let handles: Awaited<ReturnType<typeof host.toolsFor>>;
      try {
        handles = await host.toolsFor(node.id, hctx);
      } catch (e) {
        throw operatorRefusal(e) ?? e;
      }
      for (const h of handles) ports.push(this.mcpPort(cx, node.id, h));
    }
    for (const e of node.delegates) ports.push(this.parts.delegation.port(cx, node, e));
    if (offerHandover) for (const e of node.out) ports.push(this.handoverPort(cx, node, e));
    const seen = new Set<string>();
    for (const p of ports) {
      if (seen.has(p.name))
        throw new RunFailure('flow_invalid', `agent "${node.id}" has two tools named "${p.name}"`);
      seen.add(p.name);
    }
    return ports;
  }

  /** A generated handover tool: calling it chooses the edge; its note goes to the target's inbox. */
  private handoverPort(cx: Ctx, node: GNode, e: GEdge): ToolPort {
    const events = this.run.events;
    const target = this.run.graph.nodes.get(e.target)!;
    return {
      name: `handover_to_${e.target.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64),
      description:
        e.config.description ??
        `Hand the work over to ${target.label}${typeof target.config.role === 'string' ? ` (${target.config.role})` : ''}.`,
      parameters: handoverParameters(e.target),
      source: 'handover',
      edgeId: e.id,
      call: async (args, callId) => {
        events.tool(cx, node.id, 'tool.called', { callId, tool: `handover_to_${e.target}`, args });
        if (typeof args.note === 'string' && args.note !== '')
          this.parts.conversation.addInbox(cx, e.target, {
            kind: 'directive',
            text: args.note.slice(0, 10_000),
            from: node.id,
          });
        const content = `Handing over to ${target.label}.`;
        events.tool(cx, node.id, 'tool.result', {
          callId,
          tool: `handover_to_${e.target}`,
          result: content,
          isError: false,
        });
        return { content, isError: false };
      },
    };
  }

  private mcpPort(cx: Ctx, nodeId: string, h: ToolHandle): ToolPort {
    const run = this.run;
    const { control, limits, human } = this.parts;
    return {
      name: h.name,
      description: h.description,
      parameters: h.inputSchema,
      source: 'mcp',
      call: async (args, callId) => {
        const g = control.gate(cx);
        if (g) await g;
        limits.countStep(cx, nodeId);
        run.events.tool(cx, nodeId, 'tool.called', { callId, tool: h.name, args });
        let res: { content: string; isError: boolean; structured?: unknown };
        try {
          res = await h.call(args, {
            signal: run.signal,
            onLog: (text) => run.events.emit(cx, { type: 'log', nodeId, level: 'info', text }),
            elicit: (ask) => human.elicit(cx, nodeId, h.name, ask),
            sample: this.parts.sampling.forCall(
              cx,
              () => this.turns.get(`${cx.runId}\u0000${nodeId}`),
              h.toolNodeId,
              h.name,
            ),
          });
        } catch (e) {
          if (run.stop) throw run.stop;
          res = { content: `tool error: ${(e as Error).message ?? String(e)}`, isError: true };
        }
        if (run.stop) throw run.stop;
        const shown =
          res.content.length > MAX_TOOL_RESULT_IN_EVENT
            ? `${res.content.slice(0, MAX_TOOL_RESULT_IN_EVENT)}…`
            : res.content;
        run.events.tool(cx, nodeId, 'tool.result', {
          callId,
          tool: h.name,
          result: shown,
          isError: res.isError,
        });
        return res;
      },
    };
  }
}
