/**
 * Agents backed by an external process speaking the Agent Client Protocol (`config.backend`
 * `{ type: 'acp', command, args }`) instead of a model. The process is spawned only after the
 * operator approved that exact command line (checked right before every spawn), lives for the
 * run, and gets each turn's input as one prompt; its streamed text becomes `model.delta` events
 * and its tool-permission requests are answered by the agent's grant (anything else is denied).
 * The ACP SDK is imported only when such an agent runs.
 */
import {
  buildSystemPrompt,
  type FlowBehavior,
  type Message,
  type NodeContext,
  NodeError,
} from '@switchboard/nodes/core';

export interface AcpBackendConfig {
  type: 'acp';
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
}

/** What the interpreter lends the ACP behaviour: its event stream and the agent processes of the run. */
export interface AcpHost {
  agentFor(nodeId: string, backend: AcpBackendConfig): Promise<AcpSession>;
  emitModel(nc: NodeContext, type: 'model.delta' | 'model.completed', text: string): void;
}

export interface AcpSession {
  /** Prompts sent to this process so far (the system prompt goes with the first). */
  prompts: number;
  prompt(
    text: string,
    options: {
      signal: AbortSignal;
      onUpdate: (t: string) => void;
      requestPermission: (tool: string, args: unknown) => Promise<boolean>;
    },
  ): Promise<{ text: string; stopReason: string }>;
}

/** The turn's input: what was handed or said to the agent since it last spoke. */
function turnInput(ctx: NodeContext, view: readonly Message[]): string {
  const parts: string[] = [];
  for (let i = view.length - 1; i >= 0; i--) {
    const m = view[i]!;
    if (m.author === ctx.node.id) break;
    parts.unshift(m.author === 'user' ? m.content : `[${m.author}] ${m.content}`);
  }
  for (const item of ctx.inbox) parts.push(item.text);
  return parts.join('\n\n') || ctx.run.task;
}

export function acpBehavior(host: AcpHost): FlowBehavior {
  return {
    type: 'flow',
    async run(ctx) {
      const backend = ctx.node.config.backend as AcpBackendConfig;
      const session = await host.agentFor(ctx.node.id, backend);
      const memory =
        (ctx.node.config.memory as 'transcript' | 'thread' | 'summary' | undefined) ?? 'transcript';
      let text = turnInput(ctx, ctx.run.view(memory));
      if (session.prompts === 0) {
        const system = buildSystemPrompt(ctx as never);
        if (system) text = `${system}\n\n${text}`;
      }
      const granted = new Set((await ctx.tools()).map((t) => t.name));
      session.prompts++;
      const res = await session.prompt(text, {
        signal: ctx.signal,
        onUpdate: (t) => host.emitModel(ctx, 'model.delta', t),
        requestPermission: async (tool) => {
          if (granted.has(tool)) return true;
          ctx.emit({
            type: 'tool.denied',
            callId: `acp-${session.prompts}`,
            tool: tool.slice(0, 64),
            reason: `tool "${tool.slice(0, 64)}" is not granted to this agent`,
          });
          return false;
        },
      });
      host.emitModel(ctx, 'model.completed', res.text);
      if (res.stopReason === 'cancelled')
        throw new NodeError('cancelled', `ACP agent "${ctx.node.id}" was cancelled`, 1, false);
      return { message: { content: res.text } };
    },
  };
}
