/**
 * Fork and re-run from a node: a new run whose state up to a chosen turn of a past run is the
 * recorded one, and live from there. Up to the fork point every model call and tool call is
 * answered from the past run's cassette (built from its log) — no model is called, no tool has
 * a side effect — so the engine rebuilds the recorded state by re-executing; the first model
 * call of the chosen turn of the chosen node, and everything after it, goes to the flow's
 * current models and tools.
 *
 * Upstream calls are keyed with the past run's model configs (a fork may change models: the
 * prompts, tools and messages upstream must still be the recorded ones). A request upstream that
 * the past run did not make (the flow was edited above the fork point) aborts the fork with a
 * `cassette_miss`, as a replay does.
 */
import type { Flow, ModelConfigT } from '@switchboard/schemas';
import { dict } from '@switchboard/schemas/core';
import type { RunOptions } from '../engine/types.js';
import { defaultModelFactory } from '../models/factory.js';
import type { ModelFactory, ModelProvider } from '../models/types.js';
import type { ToolHandle, ToolHost, ToolHostContext } from '../tools/types.js';
import type { Cassette } from './file.js';
import { cassetteFromLog, type RunLog } from './from-log.js';
import { stateServers } from './live-tools.js';
import { CassettePlayer } from './play.js';

export interface ForkPoint {
  nodeId: string;
  /** The node's turn, from 1: its first model call in that turn is the first live one. */
  turn: number;
}

export interface ForkedFrom extends ForkPoint {
  runId: string;
}

export class ForkError extends Error {
  override readonly name = 'ForkError';
}

const MAX_TURN = 1_000_000;

/** `NODE` or `NODE:TURN` (TURN from 1). */
export function parseForkAt(at: string): ForkPoint {
  const i = at.lastIndexOf(':');
  const nodeId = i < 0 ? at : at.slice(0, i);
  const turnText = i < 0 ? '1' : at.slice(i + 1);
  const turn = Number(turnText);
  if (nodeId === '') throw new ForkError(`--at ${JSON.stringify(at)}: expected NODE or NODE:TURN`);
  if (!/^[0-9]+$/.test(turnText) || !Number.isInteger(turn) || turn < 1 || turn > MAX_TURN)
    throw new ForkError(`--at ${JSON.stringify(at)}: the turn must be a whole number from 1`);
  return { nodeId, turn };
}

export interface ForkPlan {
  parentRunId: string;
  at: ForkPoint;
  cassette: Cassette;
  /** How many model calls of the fork node are answered from the cassette before going live. */
  callsBefore: number;
  /** The human answers given before the fork point, by node. */
  answers: Record<string, string[]>;
  /** The past run's input (the fork's, unless another is given). */
  input: unknown;
  /** The past run's model configs, to key upstream requests as they were made. */
  parentModels: Readonly<Record<string, ModelConfigT>>;
}

/** Where in a past run a fork starts; a clear error when the run never reached that point. */
export function planFork(parentRunId: string, log: RunLog, at: ForkPoint): ForkPlan {
  const { cassette, requests } = cassetteFromLog(log);
  const own: Array<{ index: number; runId: string; turn: number; seq: number }> = [];
  cassette.models.forEach((m, index) => {
    if (m.nodeId === at.nodeId) own.push({ index, ...requests[index]! });
  });
  if (own.length === 0) {
    const known = log.flow.nodes.some((n) => n.id === at.nodeId);
    throw new ForkError(
      known
        ? `node "${at.nodeId}" made no model call in run ${parentRunId}: fork at a node that called a model (an agent, a decider, a team's speaker)`
        : `run ${parentRunId} has no node "${at.nodeId}"`,
    );
  }
  // The node's turns, in the order they began: a turn is a (run, turn) pair of its requests.
  const turns: number[] = [];
  const seen = new Set<string>();
  own.forEach((r, i) => {
    const k = `${r.runId}\u0000${r.turn}`;
    if (!seen.has(k)) {
      seen.add(k);
      turns.push(i);
    }
  });
  if (at.turn > turns.length)
    throw new ForkError(
      `node "${at.nodeId}" had ${turns.length} turn(s) in run ${parentRunId}; cannot fork at its turn ${at.turn}`,
    );
  const callsBefore = turns[at.turn - 1]!;
  const forkSeq = own[callsBefore]!.seq;
  const answers = dict<string[]>();
  for (const e of log.events)
    if (e.type === 'input.received' && e.nodeId && !e.parentRunId && e.seq < forkSeq) {
      if (!Object.hasOwn(answers, e.nodeId)) answers[e.nodeId] = [];
      answers[e.nodeId]!.push(e.answer);
    }
  return {
    parentRunId,
    at,
    cassette,
    callsBefore,
    answers,
    input: log.input,
    parentModels: log.flow.models as Record<string, ModelConfigT>,
  };
}

/** The model factory and tool host of a forked run: the recording up to the fork point, live after. */
export class Forker {
  private readonly player: CassettePlayer;
  private forkCalls = 0;
  /** True from the fork point on. */
  live = false;
  /** Model calls answered from the recording, and made live. */
  replayedCalls = 0;
  liveCalls = 0;

  constructor(readonly plan: ForkPlan) {
    this.player = new CassettePlayer(plan.cassette);
  }

  /** Aborted when the run upstream of the fork point asks what the past run did not. */
  get signal(): AbortSignal {
    return this.player.abort.signal;
  }

  get miss() {
    return this.player.miss;
  }

  get forkedFrom(): ForkedFrom {
    return { runId: this.plan.parentRunId, ...this.plan.at };
  }

  /** Called with each model request before it is answered: is it the first live one? */
  private reaches(nodeId: string): boolean {
    if (this.live) return true;
    if (nodeId === this.plan.at.nodeId) {
      if (this.forkCalls === this.plan.callsBefore) this.live = true;
      else this.forkCalls++;
    }
    return this.live;
  }

  models(liveFactory: ModelFactory): ModelFactory {
    const recorded = this.player.modelFactory();
    return (name, config, ctx) => {
      const live = liveFactory(name, config, ctx);
      const past = Object.hasOwn(this.plan.parentModels, name) ? this.plan.parentModels[name]! : config;
      const replay = recorded(name, past, ctx);
      const p: ModelProvider & { snapshot?: () => unknown; restore?: (s: unknown) => void } = {
        scripted: live.scripted,
        complete: (req) => {
          if (this.reaches(req.nodeId)) {
            this.liveCalls++;
            return live.complete(req);
          }
          this.replayedCalls++;
          return replay.complete(req);
        },
      };
      const r = live as unknown as { snapshot?: () => unknown; restore?: (s: unknown) => void };
      if (r.snapshot) p.snapshot = () => r.snapshot!();
      if (r.restore) p.restore = (s) => r.restore!(s);
      return p;
    };
  }

  /**
   * The recorded tools up to the fork point (the `state` servers in `replayLive` run for real, as
   * in a replay: the run's state must be rebuilt), the live host's after it.
   */
  tools(liveHost: ToolHost | undefined, replayHost?: ToolHost, replayLive?: ReadonlySet<string>): ToolHost {
    const recorded = this.player.toolHost(replayHost, replayLive);
    return {
      toolsFor: async (agent: string, ctx: ToolHostContext): Promise<ToolHandle[]> => {
        if (this.live) return liveHost ? liveHost.toolsFor(agent, ctx) : [];
        const handles = await recorded.toolsFor(agent, ctx);
        let real: Promise<Map<string, ToolHandle>> | undefined;
        const liveHandle = (name: string) => {
          if (!liveHost) throw new ForkError(`tool ${name}: this fork has no tool host to go live with`);
          real ??= liveHost.toolsFor(agent, ctx).then((hs) => new Map(hs.map((h) => [h.name, h])));
          return real.then((m) => {
            const h = m.get(name);
            if (!h) throw new ForkError(`tool ${name} is no longer granted to node "${agent}"`);
            return h;
          });
        };
        return handles.map(
          (h): ToolHandle => ({
            ...h,
            call: async (args, options) =>
              this.live ? (await liveHandle(h.name)).call(args, options) : h.call(args, options),
          }),
        );
      },
      release: async (runId) => {
        await recorded.release(runId);
        await liveHost?.release(runId);
      },
    };
  }
}

/** The answers a forked run starts with: the recorded ones before the fork point, then `more`. */
export function forkAnswers(
  plan: ForkPlan,
  more?: Record<string, string | string[]>,
): Record<string, string[]> | undefined {
  const out = dict<string[]>();
  for (const [k, v] of Object.entries(plan.answers)) out[k] = [...v];
  for (const [k, v] of Object.entries(more ?? {})) {
    if (!Object.hasOwn(out, k)) out[k] = [];
    out[k]!.push(...(Array.isArray(v) ? v : [v]));
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * Sets up a run's options for a fork: the forker's models over the run's own (or the built-in
 * ones), its tools over the run's host (the flow's `state` servers run for real while
 * replaying), the recorded answers before the fork point first, and `forkedFrom`. The caller
 * watches `forker.signal`: it aborts when the run upstream of the fork point diverges.
 */
export function forkRunOptions(plan: ForkPlan, options: RunOptions, flow: Flow): Forker {
  const forker = new Forker(plan);
  options.models = forker.models(asFactory(options.models));
  if (options.tools) options.tools = forker.tools(options.tools, options.tools, stateServers(flow));
  else if (plan.cassette.toolSets.length > 0) options.tools = forker.tools(undefined);
  options.forkedFrom = forker.forkedFrom;
  const answers = forkAnswers(plan, options.answers);
  if (answers) options.answers = answers;
  else delete options.answers;
  return forker;
}

function asFactory(models: RunOptions['models']): ModelFactory {
  if (models === undefined) return defaultModelFactory;
  if (typeof models === 'function') return models;
  const table = models as Record<string, ModelProvider>;
  return (name, config, ctx) =>
    Object.hasOwn(table, name) ? table[name]! : defaultModelFactory(name, config, ctx);
}
