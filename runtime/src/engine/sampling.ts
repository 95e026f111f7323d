/**
 * MCP sampling in a run: a server asks, during a tool call, for a completion from the model of the
 * agent that called it. Only where the flow's tool node allows it (`sampling` in its config), at
 * most `maxRequests` times per call and `maxTokens` per answer. The call is a model call of the
 * agent's turn like any other: a `model.request` event, tokens counted against the budgets, a
 * trace entry; and a log line says what the server asked and what it got.
 */
import type { ChatMessage } from '@switchboard/nodes/core';
import type { SamplingAnswer, SamplingAsk } from '../tools/types.js';
import type { Ctx, RunCore } from './context.js';
import type { ModelCalls } from './model-calls.js';
import type { NodeCtx } from './node-ctx.js';

/** What a tool node's `sampling` allows (see the tool kind's schema). */
interface Allowance {
  maxTokens?: number;
  maxRequests?: number;
}

const DEFAULT_MAX_TOKENS = 1024;
const DEFAULT_MAX_REQUESTS = 3;

export class Sampling {
  constructor(
    private readonly run: RunCore,
    private readonly models: ModelCalls,
  ) {}

  private allowance(toolNodeId: string): Allowance | undefined {
    const v = this.run.graph.nodes.get(toolNodeId)?.config.sampling;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Allowance) : undefined;
  }

  /**
   * The answerer for one tool call, or undefined when the tool node does not allow sampling (the
   * connection then refuses the server's request, saying so). `turn` is the calling agent's turn.
   */
  forCall(
    cx: Ctx,
    turn: () => NodeCtx | undefined,
    toolNodeId: string,
    tool: string,
  ): ((ask: SamplingAsk) => Promise<SamplingAnswer>) | undefined {
    const allow = this.allowance(toolNodeId);
    if (!allow) return undefined;
    let asked = 0;
    return async (ask) => {
      const nc = turn();
      const limit = allow.maxRequests ?? DEFAULT_MAX_REQUESTS;
      const refuse = (why: string, nodeId = nc?.node.id): never => {
        this.log(cx, nodeId, `${tool} asked the model (sampling): refused, ${why}`);
        throw new Error(`sampling refused: ${why}`);
      };
      if (!nc) return refuse('no agent turn is in progress');
      if (++asked > limit)
        refuse(`more than ${limit} requests in one call (tool node "${toolNodeId}", sampling.maxRequests)`);
      const model = nc.node.config.model;
      if (typeof model !== 'string') return refuse(`agent "${nc.node.id}" has no model`);
      const messages: ChatMessage[] = [];
      if (ask.systemPrompt) messages.push({ role: 'system', content: ask.systemPrompt });
      for (const m of ask.messages) messages.push({ role: m.role, content: m.text });
      const maxTokens = Math.min(ask.maxTokens, allow.maxTokens ?? DEFAULT_MAX_TOKENS);
      const reply = await this.models.call(nc, model, { messages, maxTokens });
      this.log(
        cx,
        nc.node.id,
        `${tool} asked the model (sampling, ${ask.messages.length} message${ask.messages.length === 1 ? '' : 's'}): answered with ${reply.text.length} characters`,
      );
      return {
        text: reply.text,
        model: reply.model,
        stopReason: reply.finishReason === 'length' ? 'maxTokens' : 'endTurn',
      };
    };
  }

  private log(cx: Ctx, nodeId: string | undefined, text: string): void {
    this.run.events.emit(cx, { type: 'log', ...(nodeId ? { nodeId } : {}), level: 'info', text });
  }
}
