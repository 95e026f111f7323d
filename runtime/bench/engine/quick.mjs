// The engine bench's quick profile (CI runs it after the tests; `pnpm bench:engine:quick`).
// Reports ratios, never fails on them: on a shared machine a timing is a figure, not a verdict.
// Runs in well under 30 s after a build. Figures:
//   (a) per step on a chain of 100, events on (one listener), in ONE process: Switchboard against
//       the raw chain of cases.mjs (plain async functions doing the same work: the same scripted
//       model, the same events) and against bare async (one awaited async call per step, no
//       model, no events). CPU time (process.cpuUsage), rounds interleaved, medians: wall time on
//       a loaded machine measures the neighbours.
//   (v) repeated runs of one flow object with validation on against `validate: false`: after the
//       first run, validation must cost nothing (the result is cached per flow object).
//   (e) 100 concurrent runs of a 10-agent chain with a 50 ms model: peak RSS against the raw
//       chains, each in a fresh process (RSS is per process), as cases.mjs measures it.
// `node quick.mjs [a] [v] [e]` runs some of them; results go to quick-results.json.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listener, rawChain } from './cases.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const want = (k) => only.length === 0 || only.includes(k);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);

const rt = await import('@switchboard/runtime');
const { chain } = await import('../../dist/engine/testing/flows.js');

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fmt = (x, d = 2) => (x === undefined || Number.isNaN(x) ? 'n/a' : Number(x).toFixed(d));
const scripted = (latencyMs = 0) =>
  new rt.ScriptedProvider(rt.parseScript([{ fallback: true, text: 'ok' }], 'bench'), { latencyMs });

/**
 * CPU µs per step of `runs` runs of `fn` (each `steps` steps). No forced GC before: process CPU
 * time counts every thread, and the sweeping a forced GC leaves to helper threads would land in
 * the round (collections the runs cause themselves are their cost and stay in).
 */
async function perStep(fn, runs, steps) {
  const c0 = cpuUs();
  for (let i = 0; i < runs; i++) await fn();
  return (cpuUs() - c0) / (runs * steps);
}

const results = {};
const report = [];

const N = 100;
const flow100 = chain(N, { memory: 'thread' });
const deepFreeze = (v) => {
  if (v !== null && typeof v === 'object') {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
};
const frozen100 = deepFreeze(chain(N, { memory: 'thread' }));
const sbRun =
  (validate, f = flow100) =>
  async () => {
    const r = await rt.runFlow(f, 'go', {
      validate,
      budgets: { maxSteps: N * 4 + 10 },
      onEvent: listener,
      models: { default: scripted() },
    }).result;
    if (r.status !== 'completed') throw new Error(JSON.stringify(r.error));
  };

async function bareAsync(n) {
  const step = async (v) => v + 1;
  let v = 0;
  for (let i = 0; i < n; i++) v = await step(v);
  return v;
}

if (want('a')) {
  const sb = sbRun(false);
  const raw = () => rawChain(rt, N);
  const bare = () => bareAsync(N);
  // Warm-up: every path optimised before the first round counts.
  for (let i = 0; i < 30; i++) {
    await sb();
    await raw();
    await bare();
  }
  const s = [];
  const r = [];
  const b = [];
  for (let i = 0; i < ROUNDS; i++) {
    s.push(await perStep(sb, 100, N));
    r.push(await perStep(raw, 100, N));
    b.push(await perStep(bare, 2000, N));
  }
  const a = {
    switchboardUs: median(s),
    rawUs: median(r),
    bareAsyncUs: median(b),
    vsRaw: median(s.map((x, i) => x / r[i])),
    vsBareAsync: median(s.map((x, i) => x / b[i])),
  };
  results.a = a;
  report.push(
    `(a) chain of 100, events on, CPU µs/step: switchboard ${fmt(a.switchboardUs)}, raw chain ${fmt(a.rawUs)}, bare async ${fmt(a.bareAsyncUs, 3)}`,
    `    ratio vs raw chain ${fmt(a.vsRaw)}x (goal ≤ 10x), vs bare async ${fmt(a.vsBareAsync, 1)}x`,
  );
}

if (want('v')) {
  const on = sbRun(true);
  const off = sbRun(false);
  const frozenOn = sbRun(true, frozen100);
  // The first validated run of this flow object pays for validation (and loads the validator).
  const c0 = cpuUs();
  await on();
  const firstMs = (cpuUs() - c0) / 1000;
  for (let i = 0; i < 20; i++) {
    await on();
    await off();
    await frozenOn();
  }
  const w = [];
  const o = [];
  const z = [];
  for (let i = 0; i < ROUNDS; i++) {
    w.push(await perStep(on, 100, N));
    o.push(await perStep(off, 100, N));
    z.push(await perStep(frozenOn, 100, N));
  }
  // The cost of validating one chain of 100 (a fresh object each time: no cache to hit).
  const check = (await import('@switchboard/nodes')).validate;
  for (let i = 0; i < 20; i++) check(chain(N, { memory: 'thread' }));
  const fresh = Array.from({ length: 20 }, () => chain(N, { memory: 'thread' }));
  const c1 = cpuUs();
  for (const f of fresh) check(f);
  const validateUs = (cpuUs() - c1) / fresh.length;
  const v = {
    firstRunMs: firstMs,
    validatedUs: median(w),
    unvalidatedUs: median(o),
    ratio: median(w.map((x, i) => x / o[i])),
    frozenUs: median(z),
    frozenRatio: median(z.map((x, i) => x / o[i])),
    validateOnceUsPerStep: validateUs / N,
  };
  results.v = v;
  report.push(
    `(v) repeated runs of one flow object, CPU µs/step: validate off ${fmt(v.unvalidatedUs)}; on ${fmt(v.validatedUs)}: ratio ${fmt(v.ratio)} (validated once, then its fingerprint compared per run); on, deep-frozen flow ${fmt(v.frozenUs)}: ratio ${fmt(v.frozenRatio)} (goal ≈ 1)`,
    `    validating the chain costs ${fmt(v.validateOnceUsPerStep)} µs per step of it (the first run of a flow object pays it; later runs pay its fingerprint)`,
  );
}

function fresh(caseName, impl, n) {
  const r = spawnSync(process.execPath, ['--expose-gc', join(here, 'cases.mjs'), caseName, impl, String(n)], {
    cwd: here,
    encoding: 'utf8',
    timeout: 60_000,
  });
  const line = (r.stdout ?? '').trim().split('\n').filter(Boolean).at(-1);
  try {
    return JSON.parse(line ?? '');
  } catch {
    return { error: `${r.signal ?? `exit ${r.status}`}: ${(r.stderr ?? '').slice(0, 200)}` };
  }
}

if (want('e')) {
  const s = [];
  const r = [];
  for (let i = 0; i < 2; i++) {
    s.push(fresh('concurrent', 'switchboard', 100));
    r.push(fresh('concurrent', 'raw', 100));
  }
  const ok = s.every((x) => !x.error) && r.every((x) => !x.error);
  const e = ok
    ? {
        switchboardRssMB: median(s.map((x) => x.peakRssMB)),
        rawRssMB: median(r.map((x) => x.peakRssMB)),
        switchboardWallMs: median(s.map((x) => x.wallMs)),
        rawWallMs: median(r.map((x) => x.wallMs)),
      }
    : { error: (s.find((x) => x.error) ?? r.find((x) => x.error)).error };
  if (ok) {
    e.rssRatio = e.switchboardRssMB / e.rawRssMB;
    e.wallRatio = e.switchboardWallMs / e.rawWallMs;
  }
  results.e = e;
  report.push(
    ok
      ? `(e) 100 concurrent runs of 10 nodes, 50 ms model: peak RSS ${fmt(e.switchboardRssMB, 1)} MB vs raw ${fmt(e.rawRssMB, 1)} MB: ${fmt(e.rssRatio)}x (goal ≤ 1.3x); wall ${fmt(e.wallRatio, 3)}x`
      : `(e) failed: ${e.error}`,
  );
}

process.stdout.write(
  `engine bench, quick profile (${process.version}, ${ROUNDS} rounds)\n${report.join('\n')}\n`,
);
writeFileSync(
  join(here, 'quick-results.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, rounds: ROUNDS, results }, null, 2)}\n`,
);
