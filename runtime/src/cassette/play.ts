/**
 * Replay: a model factory and a tool host that answer from a cassette — no network, no tool
 * side effects. A request the cassette does not hold is a `cassette_miss`: the player keeps the
 * first one (node, nearest recorded request, first difference) and aborts the run, so the host
 * reports it by name instead of whatever the flow's error handling made of it.
 */
import { dict } from '@switchboard/schemas/core';
import type { ModelFactory, ModelProvider, ModelResponse } from '../models/types.js';
import { ModelError } from '../models/types.js';
import type { ToolHandle, ToolHost } from '../tools/types.js';
import {
  type CanonicalRequest,
  canonicalRequest,
  type Difference,
  firstDifference,
  hashOf,
  likeness,
  toolKey,
} from './canonical.js';
import type { Cassette, CassetteModelCall, CassetteToolCall } from './file.js';

export interface CassetteMiss {
  code: 'cassette_miss';
  kind: 'model' | 'tool';
  nodeId: string;
  /** What went wrong in one sentence, with the difference. */
  message: string;
  nearest?: { nodeId: string; index: number };
  difference?: Difference;
}

export class CassetteMissError extends Error {
  readonly code = 'cassette_miss';
  constructor(readonly miss: CassetteMiss) {
    super(miss.message);
  }
}

/** Entries by key, served in recorded order. */
class Queues<T extends { key: string }> {
  private readonly byKey = new Map<string, T[]>();
  private readonly served = new Map<string, number>();
  constructor(entries: readonly T[]) {
    for (const e of entries) {
      const list = this.byKey.get(e.key);
      if (list) list.push(e);
      else this.byKey.set(e.key, [e]);
    }
  }
  take(key: string): { entry?: T; recorded: number } {
    const list = this.byKey.get(key);
    if (!list) return { recorded: 0 };
    const n = this.served.get(key) ?? 0;
    if (n >= list.length) return { recorded: list.length };
    this.served.set(key, n + 1);
    return { entry: list[n]!, recorded: list.length };
  }
}

export class CassettePlayer {
  private readonly models: Queues<CassetteModelCall>;
  private readonly tools: Queues<CassetteToolCall>;
  private readonly toolSets: Map<string, Cassette['toolSets'][number]['tools']>;
  /** The first miss, if any: the run was aborted because of it. */
  miss: CassetteMiss | undefined;
  readonly abort = new AbortController();
  modelCalls = 0;
  toolCalls = 0;

  constructor(private readonly cassette: Cassette) {
    this.models = new Queues(cassette.models);
    this.tools = new Queues(cassette.tools);
    this.toolSets = new Map(cassette.toolSets.map((s) => [s.agent, s.tools]));
  }

  private missed(m: CassetteMiss): CassetteMissError {
    if (!this.miss) {
      this.miss = m;
      this.abort.abort();
    }
    return new CassetteMissError(m);
  }

  private modelMiss(nodeId: string, request: CanonicalRequest, recorded: number): CassetteMissError {
    if (recorded > 0)
      return this.missed({
        code: 'cassette_miss',
        kind: 'model',
        nodeId,
        message: `cassette_miss at node "${nodeId}": this request was recorded ${recorded} time(s) and is now made once more`,
      });
    let best: { c: CassetteModelCall; i: number; score: number } | undefined;
    this.cassette.models.forEach((c, i) => {
      const score = likeness(c.request, request) + (c.nodeId === nodeId ? 1000 : 0);
      if (!best || score > best.score) best = { c, i, score };
    });
    const m: CassetteMiss = {
      code: 'cassette_miss',
      kind: 'model',
      nodeId,
      message: `cassette_miss at node "${nodeId}": the cassette holds no reply for this model request`,
    };
    if (best) {
      m.nearest = { nodeId: best.c.nodeId, index: best.i };
      const d = firstDifference(best.c.request, request);
      if (d) {
        m.difference = d;
        m.message += `; nearest recorded request: models[${best.i}] (node "${best.c.nodeId}"), first difference at ${d.path}: recorded ${d.recorded}, now ${d.requested}`;
      }
    } else m.message += ' (the cassette holds no model requests)';
    return this.missed(m);
  }

  /** A factory of providers that answer from the cassette. */
  modelFactory(): ModelFactory {
    return (name, config) => {
      const scripted = this.cassette.scripted[name] === true;
      const provider: ModelProvider = {
        scripted,
        complete: (req) => {
          const request = canonicalRequest(name, config, req);
          const { entry, recorded } = this.models.take(hashOf(request));
          if (!entry) return Promise.reject(this.modelMiss(req.nodeId, request, recorded));
          this.modelCalls++;
          // The reply arrives on a later turn of the event loop, as one over the network does, so
          // that parallel branches interleave their events as they did when recorded.
          return new Promise<ModelResponse>((resolve, reject) => {
            setImmediate(() => {
              for (const r of entry.retries ?? []) req.onRetry?.(r);
              if (req.onDelta) for (const d of entry.deltas ?? []) req.onDelta(d);
              if (entry.error)
                reject(
                  new ModelError(entry.error.code, entry.error.message, entry.error.attempts, 'cassette'),
                );
              else resolve(structuredClone(entry.response) as ModelResponse);
            });
          });
        },
      };
      return provider;
    };
  }

  /**
   * A tool host that gives each agent its recorded tools, whose calls return recorded results.
   * Tools of the servers in `live` (the built-in `state` server: its only effect is on the run's
   * own state, which a replay must rebuild) are called for real through `liveHost`.
   */
  toolHost(liveHost?: ToolHost, live: ReadonlySet<string> = new Set()): ToolHost {
    return {
      toolsFor: async (agent, ctx) => {
        const recorded = this.toolSets.get(agent) ?? [];
        const needsLive = liveHost !== undefined && recorded.some((t) => live.has(t.server));
        const real = needsLive
          ? new Map((await liveHost.toolsFor(agent, ctx)).map((h) => [h.name, h]))
          : undefined;
        return recorded.map((t): ToolHandle => {
          const handle = live.has(t.server) ? real?.get(t.name) : undefined;
          return {
            ...t,
            call: async (args, options) => {
              const { entry, recorded: times } = this.tools.take(toolKey(t.name, args));
              if (handle) {
                this.toolCalls++;
                return handle.call(args, options);
              }
              if (!entry) throw this.toolMiss(agent, t.name, args, times);
              this.toolCalls++;
              if (entry.error) throw new Error(entry.error);
              return structuredClone(entry.result!);
            },
          };
        });
      },
      release: async (runId) => {
        await liveHost?.release(runId);
      },
    };
  }

  private toolMiss(agent: string, tool: string, args: unknown, recorded: number): CassetteMissError {
    const same = this.cassette.tools.find((c) => c.tool === tool && c.agent === agent);
    const d = same ? firstDifference(same.args, args, 'args') : undefined;
    return this.missed({
      code: 'cassette_miss',
      kind: 'tool',
      nodeId: agent,
      message:
        recorded > 0
          ? `cassette_miss at node "${agent}": tool ${tool} was called with these arguments ${recorded} time(s) when recorded and is now called once more`
          : `cassette_miss at node "${agent}": the cassette holds no result for tool ${tool} with these arguments${d ? `; first difference from a recorded call at ${d.path}: recorded ${d.recorded}, now ${d.requested}` : ''}`,
      ...(d ? { difference: d } : {}),
    });
  }

  /** Answers for human nodes, as recorded. */
  answers(): Record<string, string[]> | undefined {
    const a = this.cassette.answers;
    if (!a) return undefined;
    const out = dict<string[]>();
    for (const [k, v] of Object.entries(a)) if (Array.isArray(v)) out[k] = [...v];
    return out;
  }
}
