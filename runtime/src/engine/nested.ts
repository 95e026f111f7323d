/**
 * Agent-as-tool: a delegation edge gives its source a tool that runs the target as a nested run
 * (a `Ctx` of its own, sharing the parent's counters and state) whose events name this run and
 * the call. Nested runs are driven by the same loop and are not checkpointed on their own.
 */
import type { ToolPort } from '@switchboard/nodes/core';
import { type Ctx, type RunCore, StateView } from './context.js';
import type { Control } from './control.js';
import type { Conversation } from './conversation.js';
import { errorInfo } from './error-info.js';
import type { GNode } from './graph.js';
import { MAX_DELEGATION_DEPTH } from './limits.js';
import type { RunLimits } from './run-limits.js';
import { type Cursor, newRunData, rootScope } from './state.js';

/** The loop that drives a nested run's cursor (run.ts). */
export interface Driver {
  drive(cx: Ctx, cur: Cursor): Promise<void>;
  /** Many calls in flight may listen on the run's signal from now on. */
  allowManyListeners(): void;
}

export class Delegation {
  private count = 0;

  constructor(
    private readonly run: RunCore,
    private readonly driver: Driver,
    private readonly parts: { control: Control; limits: RunLimits; conversation: Conversation },
  ) {}

  port(cx: Ctx, node: GNode, e: { id: string; target: string; config?: Record<string, unknown> }): ToolPort {
    const run = this.run;
    const { control, limits } = this.parts;
    const target = run.graph.nodes.get(e.target)!;
    const cfg = (e.config ?? {}) as { toolName?: string; description?: string };
    const name = cfg.toolName ?? `ask_${e.target.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
    return {
      name,
      description:
        cfg.description ??
        `Delegate a task to ${target.label}${typeof target.config.role === 'string' ? ` (${target.config.role})` : ''}; returns its final answer.`,
      parameters: {
        type: 'object',
        properties: { task: { type: 'string', description: 'What to do, with everything needed to do it.' } },
        required: ['task'],
      },
      source: 'delegate',
      call: async (args, callId) => {
        const g = control.gate(cx);
        if (g) await g;
        limits.countStep(cx, node.id);
        run.events.emit(cx, { type: 'tool.called', nodeId: node.id, edgeId: e.id, callId, tool: name, args });
        const res = await this.runNested(cx, target, String(args.task), callId);
        run.events.emit(cx, {
          type: 'tool.result',
          nodeId: node.id,
          edgeId: e.id,
          callId,
          tool: name,
          result: res.content,
          isError: res.isError,
        });
        return res;
      },
    };
  }

  /** The target runs as a nested run whose events name this run and call. */
  private async runNested(
    parent: Ctx,
    target: GNode,
    task: string,
    callId: string,
  ): Promise<{ content: string; isError: boolean }> {
    const run = this.run;
    this.driver.allowManyListeners();
    if (parent.depth + 1 > MAX_DELEGATION_DEPTH)
      return { content: `delegation deeper than ${MAX_DELEGATION_DEPTH} levels is refused`, isError: true };
    const data = newRunData({ task }, { counters: parent.data.counters, state: parent.data.state });
    const cx: Ctx = {
      runId: `${parent.runId}~${++this.count}`,
      parentRunId: parent.runId,
      parentCallId: callId,
      data,
      depth: parent.depth + 1,
      state: new StateView(data),
    };
    run.events.emit(cx, { type: 'run.started', flowId: run.flow.id, input: { task } });
    this.parts.conversation.append(cx, { role: 'user', author: 'user', content: task, to: target.id });
    const cursor: Cursor = { at: target.id, scopes: [rootScope(run.now())], stopAfter: target.id };
    if (target.parent !== undefined) cursor.scopes[0]!.team = null;
    try {
      await this.driver.drive(cx, cursor);
    } catch (e) {
      if (run.stop) throw run.stop;
      const error = errorInfo(e);
      run.events.emit(cx, { type: 'run.failed', error });
      return { content: `the delegated run failed: ${error.message}`, isError: true };
    }
    const last = cx.data.transcript[cx.data.transcript.length - 1];
    const output = last && last.author !== 'user' ? last.content : '';
    run.events.emit(cx, { type: 'run.completed', output });
    return { content: output, isError: false };
  }
}
