/**
 * An in-memory ToolHost for tests and examples: tools are plain async functions grouped by
 * server name, granted per the flow's `tools` edges exactly as the MCP-backed host does
 * (tool node → its server, narrowed by the node's include/exclude and the edge's allow list).
 */
import type { Flow } from '@switchboard/schemas';
import type {
  ToolCallOptions,
  ToolHandle,
  ToolHost,
  ToolHostContext,
  ToolResult,
} from '../../tools/types.js';

export interface MemoryTool {
  description?: string;
  inputSchema?: Record<string, unknown>;
  run(
    args: Record<string, unknown>,
    ctx: { signal: AbortSignal; host: ToolHostContext; elicit?: ToolCallOptions['elicit'] },
  ): Promise<ToolResult | string> | ToolResult | string;
}

function matches(patterns: readonly string[] | undefined, name: string): boolean {
  if (!patterns) return true;
  return patterns.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : p === name));
}

export class MemoryToolHost implements ToolHost {
  /** Every call that reached a tool: which agent's grant, which tool, which arguments. */
  readonly calls: Array<{ agent: string; tool: string; args: Record<string, unknown> }> = [];
  released: string[] = [];

  constructor(
    private readonly flow: Flow,
    private readonly servers: Record<string, Record<string, MemoryTool>>,
  ) {}

  async toolsFor(agentNodeId: string, ctx: ToolHostContext): Promise<ToolHandle[]> {
    const out: ToolHandle[] = [];
    for (const e of this.flow.edges) {
      if (e.kind !== 'tools' || e.target !== agentNodeId) continue;
      const toolNode = this.flow.nodes.find((n) => n.id === e.source);
      if (!toolNode) continue;
      const cfg = toolNode.config as { server: string; include?: string[]; exclude?: string[] };
      const allow = (e.config as { allow?: string[] } | undefined)?.allow;
      const tools = this.servers[cfg.server] ?? {};
      for (const [name, tool] of Object.entries(tools)) {
        if (
          !matches(cfg.include, name) ||
          (cfg.exclude && matches(cfg.exclude, name)) ||
          !matches(allow, name)
        )
          continue;
        out.push({
          name,
          description: tool.description ?? name,
          inputSchema: tool.inputSchema ?? { type: 'object' },
          toolNodeId: toolNode.id,
          server: cfg.server,
          remoteName: name,
          call: async (args, opts) => {
            this.calls.push({ agent: agentNodeId, tool: name, args });
            const r = await tool.run(args, {
              signal: opts.signal,
              host: ctx,
              ...(opts.elicit ? { elicit: opts.elicit } : {}),
            });
            return typeof r === 'string' ? { content: r, isError: false } : r;
          },
        });
      }
    }
    return out;
  }

  async release(runId: string): Promise<void> {
    this.released.push(runId);
  }
}
