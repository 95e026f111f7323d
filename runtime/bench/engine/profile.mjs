// Profiling helper for gate (e), not a gate. After `pnpm --filter "@switchboard/runtime..." build`:
//   node --expose-gc --min-semi-space-size=64 --max-semi-space-size=64 profile.mjs <switchboard|raw> [rounds]
// Runs the (e) workload (100 concurrent 10-agent chains, 50 ms scripted model) as cases.mjs does,
// after one warm-up round, and prints per round: wall and CPU time; bytes allocated per step
// (exact while no GC runs inside a round, hence the large new space); per step, the time from a
// model timer firing to the next one being set; how late timers fire; when the first model timers
// were set (startup: all of it delays every run); and per wave of 100 steps the span from its
// first timer firing to its last timer set (what pushes the next wave into later milliseconds).
// Also: --cpu-prof; HEAP_PROFILE=file (sampled allocations, HEAP_INTERVAL bytes); SPIN_STEP=µs and
// SPIN_START=µs add busy work to the raw chains, to see how the wall answers to per-step and
// per-run costs.
import { performance } from 'node:perf_hooks';
import { listener, rawChain } from './cases.mjs';

const [, , impl = 'switchboard', roundsArg] = process.argv;
const rounds = Number(roundsArg ?? 5);
const N = 100;
const LEN = 10;

const rt = await import('@switchboard/runtime');
const { chain } = await import('../../dist/engine/testing/flows.js');

// Records when 50 ms timers are set and when they fire (the scripted model's latency).
const realSetTimeout = globalThis.setTimeout;
let created = [];
let fired = [];
// Per step: from a timer firing to the next timer being set (the step's synchronous work, as
// everything between runs on the microtask queue of that timer's callback).
let lastFire = 0;
let stepMs = [];
let late = [];
globalThis.setTimeout = (fn, ms, ...rest) => {
  if (ms !== 50) return realSetTimeout(fn, ms, ...rest);
  const now = performance.now();
  created.push(now);
  const at = now;
  if (lastFire) stepMs.push(now - lastFire);
  lastFire = 0;
  return realSetTimeout(
    (...a) => {
      lastFire = performance.now();
      fired.push(lastFire);
      late.push(lastFire - at - 50);
      fn(...a);
    },
    ms,
    ...rest,
  );
};

const SPIN_STEP = Number(process.env.SPIN_STEP ?? 0) / 1000;
const SPIN_START = Number(process.env.SPIN_START ?? 0) / 1000;
function spin(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}
// The raw baseline of cases.mjs, with the busy work above.
const spins = {
  beforeRun: SPIN_START ? () => spin(SPIN_START) : undefined,
  afterStep: SPIN_STEP ? () => spin(SPIN_STEP) : undefined,
};

const f = chain(LEN, { memory: 'thread' });
f.models = { default: { provider: 'scripted', latencyMs: 50, script: [{ fallback: true, text: 'ok' }] } };

async function once() {
  if (impl === 'switchboard') {
    const rs = await Promise.all(
      Array.from({ length: N }, () => rt.runFlow(f, 'go', { validate: false, onEvent: listener }).result),
    );
    if (rs.some((r) => r.status !== 'completed')) throw new Error('a run failed');
  } else await Promise.all(Array.from({ length: N }, () => rawChain(rt, LEN, 50, spins)));
}

await once();
// HEAP_PROFILE=file: sampled allocations of the measured rounds, including objects already collected.
const heapOut = process.env.HEAP_PROFILE;
let session;
if (heapOut) {
  const { Session } = await import('node:inspector/promises');
  session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: Number(process.env.HEAP_INTERVAL ?? 64),
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
}
const fmt = (x) => x.toFixed(2);
for (let r = 0; r < rounds; r++) {
  globalThis.gc?.();
  created = [];
  fired = [];
  stepMs = [];
  late = [];
  const heap0 = process.memoryUsage().heapUsed;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await once();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const alloc = process.memoryUsage().heapUsed - heap0;
  const spans = [];
  // Wave w: the first timer firing of the wave (or the round's start) to the last timer set.
  for (let w = 0; w < LEN; w++) {
    const from = w === 0 ? t0 : fired[(w - 1) * N];
    const to = created[w * N + N - 1];
    spans.push(to - from);
  }
  stepMs.sort((a, b) => a - b);
  const lateAvg = late.reduce((a, b) => a + b, 0) / late.length;
  const busy = stepMs.reduce((a, b) => a + b, 0);
  console.log(
    `${impl} wall ${fmt(wall)} ms, cpu ${fmt((cpu.user + cpu.system) / 1000)} ms ` +
      `(${fmt((cpu.user + cpu.system) / (N * LEN))} µs/step), alloc ${fmt(alloc / (N * LEN) / 1024)} KB/step, ` +
      `step µs median ${fmt(stepMs[stepMs.length >> 1] * 1000)} p90 ${fmt(stepMs[Math.floor(stepMs.length * 0.9)] * 1000)} ` +
      `sum ${fmt(busy)} ms, timers late by ${fmt(lateAvg)} ms on average, first timers set ${fmt(created[0] - t0)}..${fmt(created[N - 1] - t0)} ms, ` +
      `last done ${fmt(wall - (fired[fired.length - 1] - t0))} ms after the last timer fired, wave spans ms: ${spans.map((x) => x.toFixed(1)).join(' ')}`,
  );
}
if (session) {
  const { profile } = await session.post('HeapProfiler.stopSampling');
  (await import('node:fs')).writeFileSync(heapOut, JSON.stringify(profile));
}
