// One benchmark configuration in this (fresh) process: `node --expose-gc cases.mjs <case> <impl> [n]`.
// Prints one JSON line. Every implementation does the same work per step: call the same instant
// scripted model, keep the reply, and hand one event per interpreter step to a listener that
// consumes it (events on). See run.mjs for the gates. profile.mjs imports the raw baseline
// (`rawChain`) and the `listener` from here; imported, this file runs no case.
import { setMaxListeners } from 'node:events';
import { realpathSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const [, , caseName, impl, nArg] = process.argv;
const n = Number(nArg ?? 100);
const out = (o) => process.stdout.write(`${JSON.stringify({ case: caseName, impl, n, ...o })}\n`);
const gc = () => {
  if (globalThis.gc) {
    globalThis.gc();
    globalThis.gc();
  }
};

async function engine() {
  const rt = await import('@switchboard/runtime');
  const { chain, flow, node, agent, edge } = await import('../../dist/engine/testing/flows.js');
  return { ...rt, chain, flow, node, agent, edge };
}

function scripted(rt, latencyMs = 0) {
  return new rt.ScriptedProvider(rt.parseScript([{ fallback: true, text: 'ok' }], 'bench'), { latencyMs });
}

/** One signal shared by many concurrent calls, as in the engine (no listener-count warning). */
function quietSignal() {
  const s = new AbortController().signal;
  setMaxListeners(0, s);
  return s;
}

let sink = 0;
export const listener = (e) => {
  sink += e.seq;
};

// --------------------------------------------------------------------------------------------
// Raw baseline: plain async functions doing the same work, emitting the same events.

function rawEmitter(runId) {
  let seq = 0;
  return (type, nodeId, extra) => {
    const e = { runId, seq: ++seq, ts: Date.now(), type, nodeId, ...extra };
    listener(e);
  };
}

async function rawAgent(provider, id, input, transcript, emit, signal) {
  emit('node.started', id);
  emit('turn.started', id, { turn: transcript.length });
  const messages = [
    { role: 'system', content: `You are ${id}.` },
    { role: 'user', content: input },
  ];
  const res = await provider.complete({ nodeId: id, messages, signal });
  emit('model.completed', id, { text: res.text, usage: res.usage });
  const m = { seq: transcript.length + 1, role: 'assistant', author: id, content: res.text };
  transcript.push(m);
  emit('message', id, { message: m });
  emit('turn.completed', id, { usage: res.usage });
  emit('node.completed', id);
  return res.text;
}

/**
 * A chain of `len` raw agents. profile.mjs adds busy work through the hooks: `beforeRun` before
 * the run starts, `afterStep` after each agent (before its handover).
 */
export async function rawChain(rt, len, latencyMs = 0, { beforeRun, afterStep } = {}) {
  beforeRun?.();
  const provider = scripted(rt, latencyMs);
  const signal = quietSignal();
  const emit = rawEmitter('raw');
  const transcript = [];
  let last = 'go';
  for (let i = 1; i <= len; i++) {
    last = await rawAgent(provider, `a${i}`, last, transcript, emit, signal);
    afterStep?.();
    emit('handover', `a${i}`, { edgeId: `e${i}` });
  }
  return last;
}

// --------------------------------------------------------------------------------------------

async function timeRuns(warm, reps, fn) {
  for (let i = 0; i < warm; i++) await fn();
  gc();
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) await fn();
  return performance.now() - t0;
}

function repsFor(len) {
  return { warm: Math.max(2, Math.ceil(2000 / len)), reps: Math.max(3, Math.ceil(20000 / len)) };
}

async function chainCase() {
  const rt = await engine();
  const { warm, reps } = repsFor(n);
  if (impl === 'switchboard') {
    const f = rt.chain(n, { memory: 'thread' });
    const opts = { validate: false, budgets: { maxSteps: n * 4 + 10 }, onEvent: listener };
    const ms = await timeRuns(warm, reps, async () => {
      const r = await rt.runFlow(f, 'go', { ...opts, models: { default: scripted(rt) } }).result;
      if (r.status !== 'completed') throw new Error(JSON.stringify(r.error));
    });
    return out({ perStepUs: (ms * 1000) / (reps * n) });
  }
  if (impl === 'raw') {
    const ms = await timeRuns(warm, reps, () => rawChain(rt, n));
    return out({ perStepUs: (ms * 1000) / (reps * n) });
  }
  if (impl === 'langgraph') {
    const { StateGraph, Annotation, START, END } = await import('@langchain/langgraph');
    const provider = scripted(rt);
    const signal = quietSignal();
    const State = Annotation.Root({
      last: Annotation(),
      transcript: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
    });
    const g = new StateGraph(State);
    for (let i = 1; i <= n; i++) {
      const id = `a${i}`;
      g.addNode(id, async (s) => {
        const res = await provider.complete({
          nodeId: id,
          messages: [
            { role: 'system', content: id },
            { role: 'user', content: s.last },
          ],
          signal,
        });
        return { last: res.text, transcript: [{ author: id, content: res.text }] };
      });
    }
    g.addEdge(START, 'a1');
    for (let i = 1; i < n; i++) g.addEdge(`a${i}`, `a${i + 1}`);
    g.addEdge(`a${n}`, END);
    const app = g.compile();
    const ms = await timeRuns(Math.min(warm, 5), Math.min(reps, 20), async () => {
      for await (const chunk of await app.stream(
        { last: 'go' },
        { streamMode: 'updates', recursionLimit: n + 10 },
      ))
        listener({ seq: 1, chunk });
    });
    return out({ perStepUs: (ms * 1000) / (Math.min(reps, 20) * n) });
  }
  if (impl === 'rivet') {
    const rivet = await import('@ironclad/rivet-node');
    const nodes = [];
    const connections = [];
    const input = rivet.GraphInputNodeImpl.create();
    input.data.id = 'input';
    input.data.dataType = 'string';
    nodes.push(input);
    let prev = input;
    let prevOut = 'data';
    for (let i = 1; i <= n; i++) {
      const p = rivet.PassthroughNodeImpl.create();
      nodes.push(p);
      connections.push({ outputNodeId: prev.id, outputId: prevOut, inputNodeId: p.id, inputId: 'input1' });
      prev = p;
      prevOut = 'output1';
    }
    const output = rivet.GraphOutputNodeImpl.create();
    output.data.id = 'output';
    output.data.dataType = 'string';
    nodes.push(output);
    connections.push({ outputNodeId: prev.id, outputId: prevOut, inputNodeId: output.id, inputId: 'value' });
    const graph = { metadata: { id: 'g', name: 'chain', description: '' }, nodes, connections };
    const project = {
      metadata: { id: 'p', title: 'bench', description: '' },
      graphs: { g: graph },
      plugins: [],
    };
    const once = async () => {
      const proc = new rivet.GraphProcessor(project, 'g');
      proc.on('nodeFinish', listener);
      await proc.processGraph(
        { settings: { openAiKey: '', openAiOrganization: '', openAiEndpoint: '' } },
        { input: { type: 'string', value: 'go' } },
      );
    };
    try {
      const ms = await timeRuns(Math.min(warm, 5), Math.min(reps, 20), once);
      return out({ perStepUs: (ms * 1000) / (Math.min(reps, 20) * n) });
    } catch (e) {
      return out({ error: `${e?.name}: ${String(e?.message).slice(0, 200)}` });
    }
  }
  throw new Error(`unknown impl ${impl}`);
}

/** (c) two agents alternating through a decider for n turns: per turn time and retained heap. */
async function alternateCase() {
  const rt = await engine();
  const turns = n;
  if (impl === 'switchboard') {
    const ctx = { mode: 'lastN', n: 1 };
    const f = rt.flow(
      [
        rt.node('start', 'start'),
        rt.agent('a'),
        rt.agent('b'),
        rt.node('d', 'decider', {
          strategy: 'rules',
          rules: [
            { when: { path: 'counters.turns', op: 'gte', value: turns * 2 }, to: 'fin' },
            { when: { path: 'last.author', op: 'eq', value: 'a' }, to: 'to-b' },
          ],
          default: 'to-a',
        }),
        rt.node('end', 'end'),
      ],
      [
        rt.edge('start', 'a'),
        rt.edge('a', 'd'),
        rt.edge('b', 'd'),
        rt.edge('d', 'a', 'handover', { context: ctx }, 'to-a'),
        rt.edge('d', 'b', 'handover', { context: ctx }, 'to-b'),
        rt.edge('d', 'end', 'handover', undefined, 'fin'),
      ],
    );
    const opts = { validate: false, budgets: { maxSteps: turns * 3 + 10 } };
    await rt.runFlow(rt.flow(f.nodes, f.edges), 'warm', {
      ...opts,
      models: { default: scripted(rt) },
      onEvent: listener,
    }).result;
    gc();
    const before = process.memoryUsage().heapUsed;
    let atEnd = 0;
    let transcriptLen = 0;
    const t0 = performance.now();
    const h = rt.runFlow(f, 'go', {
      ...opts,
      models: { default: scripted(rt) },
      onEvent: (e) => {
        listener(e);
        if (e.type === 'message') transcriptLen = e.message.seq;
        // The run's state is alive here; measure what it holds.
        if (e.type === 'run.completed') {
          gc();
          atEnd = process.memoryUsage().heapUsed;
        }
      },
    });
    const r = await h.result;
    const ms = performance.now() - t0;
    if (r.status !== 'completed') throw new Error(JSON.stringify(r.error));
    // The transcript may grow; measure an identical one and subtract it.
    gc();
    const b2 = process.memoryUsage().heapUsed;
    const copy = [];
    for (let i = 1; i <= transcriptLen; i++)
      copy.push({ role: 'assistant', author: i % 2 ? 'a' : 'b', content: 'ok', seq: i });
    gc();
    const transcriptBytes = process.memoryUsage().heapUsed - b2;
    void copy.length;
    return out({
      perTurnUs: (ms * 1000) / turns,
      retainedPerTurn: (atEnd - before - transcriptBytes) / turns,
      transcriptBytesPerTurn: transcriptBytes / turns,
    });
  }
  if (impl === 'raw') {
    const provider = scripted(rt);
    const signal = quietSignal();
    const run = async () => {
      const emit = rawEmitter('raw');
      const transcript = [];
      let last = 'go';
      for (let t = 0; t < turns; t++) {
        const id = t % 2 === 0 ? 'a' : 'b';
        last = await rawAgent(provider, id, last, transcript, emit, signal);
        emit('decision', 'd', { choice: t % 2 === 0 ? 'to-b' : 'to-a', reason: 'rule' });
        emit('handover', 'd', { edgeId: 'x' });
      }
      return transcript;
    };
    await run();
    gc();
    const t0 = performance.now();
    await run();
    const ms = performance.now() - t0;
    return out({ perTurnUs: (ms * 1000) / turns, retainedPerTurn: 0 });
  }
  if (impl === 'langgraph') {
    const { StateGraph, Annotation, START, END } = await import('@langchain/langgraph');
    const provider = scripted(rt);
    const signal = quietSignal();
    const State = Annotation.Root({
      last: Annotation(),
      author: Annotation(),
      turns: Annotation({ reducer: (a, b) => a + b, default: () => 0 }),
      limit: Annotation(),
      transcript: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
    });
    const agentFn = (id) => async (s) => {
      const res = await provider.complete({
        nodeId: id,
        messages: [{ role: 'user', content: s.last }],
        signal,
      });
      return {
        last: res.text,
        author: id,
        turns: 1,
        transcript: [{ role: 'assistant', author: id, content: res.text }],
      };
    };
    const app = new StateGraph(State)
      .addNode('a', agentFn('a'))
      .addNode('b', agentFn('b'))
      .addEdge(START, 'a')
      .addConditionalEdges('a', (s) => (s.turns >= s.limit ? END : 'b'))
      .addConditionalEdges('b', (s) => (s.turns >= s.limit ? END : 'a'))
      .compile();
    const small = Math.min(turns, 2000);
    for await (const c of await app.stream(
      { last: 'warm', limit: small },
      { streamMode: 'updates', recursionLimit: small * 2 + 10 },
    ))
      listener({ seq: 1, c });
    gc();
    const before = process.memoryUsage().heapUsed;
    let atEnd = 0;
    const t0 = performance.now();
    let count = 0;
    for await (const c of await app.stream(
      { last: 'go', limit: turns },
      { streamMode: 'updates', recursionLimit: turns + 10 },
    )) {
      listener({ seq: 1, c });
      if (++count === turns) {
        gc();
        atEnd = process.memoryUsage().heapUsed;
      }
    }
    const ms = performance.now() - t0;
    gc();
    const b2 = process.memoryUsage().heapUsed;
    const copy = [];
    for (let i = 1; i <= turns; i++)
      copy.push({ role: 'assistant', author: i % 2 ? 'a' : 'b', content: 'ok' });
    gc();
    const transcriptBytes = process.memoryUsage().heapUsed - b2;
    void copy.length;
    return out({
      perTurnUs: (ms * 1000) / turns,
      retainedPerTurn: (atEnd - before - transcriptBytes) / turns,
    });
  }
  throw new Error(`unknown impl ${impl}`);
}

/** (d) fan-out 1 → n parallel agents → join, each with a 50 ms model. */
async function fanoutCase() {
  const rt = await engine();
  // The flow is built once, as a host that runs a stored flow would; compiled graphs are cached per flow object.
  let f;
  if (impl === 'switchboard') {
    const nodes = [rt.node('start', 'start'), rt.agent('joiner'), rt.node('end', 'end')];
    const edges = [rt.edge('joiner', 'end')];
    for (let i = 0; i < n; i++) {
      nodes.push(rt.agent(`p${i}`));
      edges.push(rt.edge('start', `p${i}`), rt.edge(`p${i}`, 'joiner'));
    }
    f = rt.flow(nodes, edges, [], {
      models: {
        default: {
          provider: 'scripted',
          latencyMs: 50,
          script: [
            { node: 'joiner', fallback: true, text: 'joined', latencyMs: 0 },
            { fallback: true, text: 'ok' },
          ],
        },
      },
    });
  }
  const once = async () => {
    if (impl === 'switchboard') {
      const t0 = performance.now();
      const r = await rt.runFlow(f, 'go', { validate: false, onEvent: listener }).result;
      if (r.status !== 'completed') throw new Error(JSON.stringify(r.error));
      return performance.now() - t0;
    }
    const slow = scripted(rt, 50);
    const fast = scripted(rt, 0);
    const signal = quietSignal();
    const emit = rawEmitter('raw');
    const t0 = performance.now();
    const transcript = [];
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) => rawAgent(slow, `p${i}`, 'go', transcript, emit, signal)),
    );
    await rawAgent(fast, 'joiner', results.join('\n'), transcript, emit, signal);
    return performance.now() - t0;
  };
  await once();
  const times = [];
  for (let i = 0; i < 5; i++) times.push(await once());
  times.sort((a, b) => a - b);
  return out({ wallMs: times[2] });
}

/** (e) n concurrent runs of a 10-agent chain with a 50 ms model: wall and peak RSS. */
async function concurrentCase() {
  const rt = await engine();
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const f = rt.chain(10, { memory: 'thread' });
  f.models = { default: { provider: 'scripted', latencyMs: 50, script: [{ fallback: true, text: 'ok' }] } };
  const once = async () => {
    const t0 = performance.now();
    if (impl === 'switchboard') {
      const rs = await Promise.all(
        Array.from({ length: n }, () => rt.runFlow(f, 'go', { validate: false, onEvent: listener }).result),
      );
      if (rs.some((r) => r.status !== 'completed')) throw new Error('a run failed');
    } else {
      await Promise.all(Array.from({ length: n }, () => rawChain(rt, 10, 50)));
    }
    return performance.now() - t0;
  };
  await once();
  const times = [];
  for (let i = 0; i < 3; i++) times.push(await once());
  clearInterval(sampler);
  times.sort((a, b) => a - b);
  return out({ wallMs: times[1], peakRssMB: peak / 1048576 });
}

/** (f) import time of the library (the first import in a fresh process). */
async function importCase() {
  const t0 = performance.now();
  if (impl === 'switchboard') await import('@switchboard/runtime');
  else if (impl === 'langgraph') await import('@langchain/langgraph');
  else if (impl === 'rivet') await import('@ironclad/rivet-node');
  return out({ importMs: performance.now() - t0 });
}

const cases = {
  chain: chainCase,
  alternate: alternateCase,
  fanout: fanoutCase,
  concurrent: concurrentCase,
  import: importCase,
};
// Only when run as a script (run.mjs spawns it), not when profile.mjs imports it.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url))
  await cases[caseName]();
void sink;
