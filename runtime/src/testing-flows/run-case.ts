/**
 * Runs one case of a flow test: the flow on the case's input, with its model replies (inline
 * scripts, a cassette, or the flow's own models), its human answers, real built-in tools in a
 * temporary data directory (or the cassette's recorded results), and checks its assertions.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { CassettePlayer } from '../cassette/play.js';
import { runFlow } from '../engine/index.js';
import type { RunOptions, RunResult } from '../engine/types.js';
import { defaultModelFactory } from '../models/factory.js';
import { ScriptedProvider } from '../models/scripted.js';
import type { ModelFactory } from '../models/types.js';
import { checkExpectations, type Failure } from './assert.js';
import type { LoadedCase, LoadedSuite } from './load.js';

export interface CaseResult {
  name: string;
  index: number;
  passed: boolean;
  failures: Failure[];
  ms: number;
  events: number;
}

export interface RunCaseOptions {
  /** A case that has not ended after this long is cancelled and fails. Default 60 s. */
  timeoutMs?: number;
}

function modelsFor(c: LoadedCase): ModelFactory | undefined {
  if (c.replies) {
    // One provider for every model: the replies are consumed in order whoever asks.
    const shared = new ScriptedProvider(c.replies, { name: 'replies' });
    return () => shared;
  }
  if (c.models) {
    const given = c.models;
    return (name, config, ctx) => {
      const script = given.get(name);
      return script ? new ScriptedProvider(script, { name }) : defaultModelFactory(name, config, ctx);
    };
  }
  return undefined;
}

export async function runCase(
  suite: LoadedSuite,
  c: LoadedCase,
  o: RunCaseOptions = {},
): Promise<CaseResult> {
  const t0 = performance.now();
  const dataDir = await mkdtemp(join(tmpdir(), 'sb-flowtest-'));
  const events: RunEvent[] = [];
  const flow = suite.flow;
  const controller = new AbortController();
  const options: RunOptions = {
    dataDir,
    baseDir: dirname(suite.flowFile),
    humanInput: 'fail',
    // Validated once when the tests file was loaded.
    validate: false,
    signal: controller.signal,
    onEvent: (e) => {
      events.push(e);
    },
  };
  if (c.def.answers) options.answers = c.def.answers;
  let player: CassettePlayer | undefined;
  if (c.cassette) {
    player = new CassettePlayer(c.cassette);
    options.models = player.modelFactory();
    const { liveReplayTools } = await import('../cassette/live-tools.js');
    const live = await liveReplayTools(flow, dataDir);
    options.tools = player.toolHost(live.host, live.servers);
    player.abort.signal.addEventListener('abort', () => controller.abort(), { once: true });
    if (!c.def.answers) {
      const a = player.answers();
      if (a) options.answers = a;
    }
  } else {
    const m = modelsFor(c);
    if (m) options.models = m;
    if (flow.nodes.some((n) => n.kind === 'tool')) {
      const { createMcpToolHost } = await import('../tools/mcp-host.js');
      const { TrustStore } = await import('../mcp/trust.js');
      // An empty trust file: a tests file never approves a command; built-ins run in process.
      options.tools = createMcpToolHost(flow, {
        trust: new TrustStore(join(dataDir, 'trust.json')),
        baseDir: dirname(suite.flowFile),
        flowRef: suite.flowFile,
      });
    }
  }
  const timeoutMs = o.timeoutMs ?? 60_000;
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let result: RunResult;
  const failures: Failure[] = [];
  try {
    result = await runFlow(flow, c.def.input, options).result;
  } catch (e) {
    result = { runId: '', status: 'failed', error: { code: 'internal', message: (e as Error).message } };
  } finally {
    clearTimeout(timer);
    await rm(dataDir, { recursive: true, force: true }).catch(() => {});
  }
  const base = `/cases/${c.index}`;
  if (player?.miss) failures.push({ path: `${base}/cassette`, message: player.miss.message });
  else if (result.status === 'cancelled' && !player && performance.now() - t0 >= timeoutMs)
    failures.push({ path: base, message: `the case did not end within ${timeoutMs} ms` });
  else failures.push(...checkExpectations(c.def.expect, events, result, `${base}/expect`));
  return {
    name: c.def.name,
    index: c.index,
    passed: failures.length === 0,
    failures,
    ms: performance.now() - t0,
    events: events.length,
  };
}
