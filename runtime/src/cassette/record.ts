/**
 * Recording: wraps the model factory and the tool host a run uses, so that every model request
 * and reply and every tool call and result is written down as it happens, then assembled with
 * the run's flow, input and events into a cassette.
 */
import type { Flow, RunEvent } from '@switchboard/schemas';
import type { RunResult } from '../engine/types.js';
import { defaultModelFactory } from '../models/factory.js';
import { ModelError, type ModelFactory, type ModelProvider } from '../models/types.js';
import type { ToolHandle, ToolHost } from '../tools/types.js';
import { canonicalRequest, hashOf, toolKey } from './canonical.js';
import {
  CASSETTE_FORMAT,
  CASSETTE_VERSION,
  type Cassette,
  type CassetteModelCall,
  type CassetteTool,
  type CassetteToolCall,
} from './file.js';

type Restorable = { snapshot?: () => unknown; restore?: (s: unknown) => void };

export class CassetteRecorder {
  readonly models: CassetteModelCall[] = [];
  readonly tools: CassetteToolCall[] = [];
  private readonly toolSets = new Map<string, CassetteTool[]>();
  private readonly scripted = new Map<string, boolean>();

  /** A factory that records every call of the providers `inner` makes. */
  wrapModels(inner: ModelFactory = defaultModelFactory): ModelFactory {
    return (name, config, ctx) => {
      const p = inner(name, config, ctx);
      this.scripted.set(name, p.scripted);
      const rec = this.models;
      const wrapped: ModelProvider & Restorable = {
        scripted: p.scripted,
        complete(req) {
          const request = canonicalRequest(name, config, req);
          const entry: CassetteModelCall = { key: hashOf(request), nodeId: req.nodeId, request };
          rec.push(entry);
          const onDelta = req.onDelta;
          const onRetry = req.onRetry;
          const call = { ...req };
          if (onDelta)
            call.onDelta = (t) => {
              entry.deltas ??= [];
              entry.deltas.push(t);
              onDelta(t);
            };
          if (onRetry)
            call.onRetry = (i) => {
              entry.retries ??= [];
              entry.retries.push({ attempt: i.attempt, delayMs: i.delayMs, cause: i.cause });
              onRetry(i);
            };
          return p.complete(call).then(
            (res) => {
              entry.response = JSON.parse(JSON.stringify(res));
              return res;
            },
            (e: unknown) => {
              const me = e instanceof ModelError ? e : undefined;
              entry.error = {
                code: me?.code ?? 'bad_response',
                message: (e as Error)?.message ?? String(e),
                attempts: me?.attempts ?? 1,
              };
              throw e;
            },
          );
        },
      };
      // Scripted providers keep their position in checkpoints; the wrapper passes that through.
      const r = p as unknown as Restorable;
      if (r.snapshot) wrapped.snapshot = () => r.snapshot!();
      if (r.restore) wrapped.restore = (s) => r.restore!(s);
      return wrapped;
    };
  }

  /** A tool host that records the tools each agent is given and every call's result. */
  wrapTools(inner: ToolHost): ToolHost {
    return {
      toolsFor: async (agent, ctx) => {
        const handles = await inner.toolsFor(agent, ctx);
        this.toolSets.set(
          agent,
          handles.map((h) => ({
            name: h.name,
            description: h.description,
            inputSchema: h.inputSchema,
            toolNodeId: h.toolNodeId,
            server: h.server,
            remoteName: h.remoteName,
          })),
        );
        return handles.map((h) => this.wrapHandle(agent, h));
      },
      release: (runId) => inner.release(runId),
    };
  }

  private wrapHandle(agent: string, h: ToolHandle): ToolHandle {
    const calls = this.tools;
    return {
      name: h.name,
      description: h.description,
      inputSchema: h.inputSchema,
      toolNodeId: h.toolNodeId,
      server: h.server,
      remoteName: h.remoteName,
      async call(args, options) {
        const entry: CassetteToolCall = {
          key: toolKey(h.name, args),
          agent,
          tool: h.name,
          args: JSON.parse(JSON.stringify(args)),
        };
        calls.push(entry);
        try {
          const result = await h.call(args, options);
          entry.result = JSON.parse(JSON.stringify(result));
          return result;
        } catch (e) {
          entry.error = (e as Error)?.message ?? String(e);
          throw e;
        }
      },
    };
  }

  cassette(flow: Flow, input: unknown, events: readonly RunEvent[], result: RunResult): Cassette {
    const answers = new Map<string, string[]>();
    for (const e of events)
      if (e.type === 'input.received' && e.nodeId && !e.parentRunId) {
        const list = answers.get(e.nodeId) ?? [];
        list.push(e.answer);
        answers.set(e.nodeId, list);
      }
    const c: Cassette = {
      format: CASSETTE_FORMAT,
      version: CASSETTE_VERSION,
      recordedAt: new Date().toISOString(),
      flow,
      input,
      scripted: Object.fromEntries(this.scripted),
      models: this.models.filter((m) => m.response || m.error),
      toolSets: [...this.toolSets].map(([agent, tools]) => ({ agent, tools })),
      tools: this.tools.filter((t) => t.result || t.error),
      events: [...events],
      result: {
        status: result.status,
        ...(result.output !== undefined ? { output: result.output } : {}),
        ...(result.error ? { error: result.error } : {}),
      },
    };
    if (answers.size > 0) c.answers = Object.fromEntries(answers);
    return c;
  }
}
