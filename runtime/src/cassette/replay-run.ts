/** Re-executes a cassette's flow (or an edited flow) from the cassette and compares the events. */
import { tmpdir } from 'node:os';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { dict } from '@switchboard/schemas/core';
import { runFlow } from '../engine/index.js';
import type { RunOptions, RunResult } from '../engine/types.js';
import { pinsOfEvents } from '../pins/file.js';
import { compareEvents, type EventComparison } from './compare.js';
import type { Cassette } from './file.js';
import { liveReplayTools } from './live-tools.js';
import { type CassetteMiss, CassettePlayer } from './play.js';

export interface ReplayOutcome {
  result: RunResult;
  events: RunEvent[];
  comparison: EventComparison;
  miss?: CassetteMiss;
  modelCalls: number;
  toolCalls: number;
  ms: number;
}

export interface ReplayOptions {
  /** Replay this flow instead of the recorded one (to see whether an edit changes the run). */
  flow?: Flow;
  /** The input instead of the recorded one. */
  input?: unknown;
  dataDir?: string;
  onEvent?: (e: RunEvent) => void;
  validate?: boolean;
}

/** The flow with the models the recorded run used, for the names it has. */
function withModelsAsRun(flow: Flow, asRun: Cassette['modelsAsRun']): Flow {
  if (!asRun) return flow;
  const models = dict(flow.models);
  for (const [name, config] of Object.entries(asRun)) if (Object.hasOwn(models, name)) models[name] = config;
  return { ...flow, models };
}

export async function replayCassette(cassette: Cassette, o: ReplayOptions = {}): Promise<ReplayOutcome> {
  const player = new CassettePlayer(cassette);
  const flow = withModelsAsRun(o.flow ?? cassette.flow, cassette.modelsAsRun);
  const events: RunEvent[] = [];
  const options: RunOptions = {
    models: player.modelFactory(),
    humanInput: 'fail',
    signal: player.abort.signal,
    onEvent: (e) => {
      events.push(e);
      o.onEvent?.(e);
    },
  };
  if (o.validate === false) options.validate = false;
  if (flow.nodes.some((n) => n.kind === 'tool') || cassette.toolSets.length > 0) {
    const live = await liveReplayTools(flow, o.dataDir ?? tmpdir());
    options.tools = player.toolHost(live.host, live.servers);
  }
  const answers = player.answers();
  if (answers) options.answers = answers;
  // The recorded run's pinned nodes made no model request: the replay pins them the same way.
  const pins = pinsOfEvents(cassette.events);
  if (pins) options.pins = pins;
  if (o.dataDir) options.dataDir = o.dataDir;
  const t0 = performance.now();
  const result = await runFlow(flow, o.input === undefined ? cassette.input : o.input, options).result;
  const ms = performance.now() - t0;
  const out: ReplayOutcome = {
    result,
    events,
    comparison: compareEvents(cassette.events, events),
    modelCalls: player.modelCalls,
    toolCalls: player.toolCalls,
    ms,
  };
  if (player.miss) out.miss = player.miss;
  return out;
}
