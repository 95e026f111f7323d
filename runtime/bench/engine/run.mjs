// Engine benchmarks, one command: `pnpm bench:engine` (builds, then runs this).
// Every configuration runs in a fresh process (`cases.mjs`), REPEATS times; the median is kept.
// Figures are compared as ratios to the raw baseline (plain async functions doing the same work)
// and to LangGraph / Rivet in the same run, because this machine's noise between processes is
// up to 2x. Results are printed as a table and written to results.json next to this file.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);
const only = process.argv.slice(2);

function once(caseName, impl, n) {
  const args = ['--expose-gc', '--stack-size=984', join(here, 'cases.mjs'), caseName, impl];
  if (n !== undefined) args.push(String(n));
  const r = spawnSync(process.execPath, args, {
    cwd: here,
    encoding: 'utf8',
    timeout: 600_000,
    maxBuffer: 1 << 24,
  });
  const line = (r.stdout ?? '').trim().split('\n').filter(Boolean).at(-1);
  if (r.status !== 0 || !line) {
    const why =
      `${r.signal ?? `exit ${r.status}`}: ${(r.stderr ?? '').split('\n').find((l) => /Error|error/.test(l)) ?? ''}`.trim();
    return { error: why.slice(0, 160) };
  }
  try {
    return JSON.parse(line);
  } catch {
    return { error: `unparseable output: ${line.slice(0, 100)}` };
  }
}

function median(xs) {
  const s = xs.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return undefined;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function summarize(caseName, impl, n, runs) {
  const ok = runs.filter((r) => !r.error);
  const res = { case: caseName, impl, n, repeats: ok.length };
  if (ok.length === 0) return { ...res, error: runs[0].error };
  for (const k of Object.keys(ok[0]))
    if (typeof ok[0][k] === 'number' && k !== 'n') res[k] = median(ok.map((r) => r[k]));
  process.stderr.write(`  ${caseName} ${impl} ${n ?? ''}: ${JSON.stringify(res)}\n`);
  return res;
}

/**
 * Runs the configurations of one gate REPEATS times each, interleaved (A B C, A B C, …) so that
 * load from other processes on this machine falls on all of them alike; keeps the medians.
 */
function measureAll(configs) {
  const runs = configs.map(() => []);
  for (let i = 0; i < REPEATS; i++)
    for (const [k, [c, impl, n]] of configs.entries()) runs[k].push(once(c, impl, n));
  return configs.map(([c, impl, n], k) => summarize(c, impl, n, runs[k]));
}

const want = (k) => only.length === 0 || only.includes(k);
const results = {};
const gates = [];
const gate = (id, what, value, limit, pass) => gates.push({ id, what, value, limit, pass });
const fmt = (x, d = 2) => (x === undefined ? 'n/a' : Number(x).toFixed(d));

if (want('a')) {
  process.stderr.write('(a) chain of 100 agents, instant scripted model\n');
  const [sb, raw, lg, rv] = measureAll([
    ['chain', 'switchboard', 100],
    ['chain', 'raw', 100],
    ['chain', 'langgraph', 100],
    ['chain', 'rivet', 100],
  ]);
  results.a = { switchboard: sb, raw, langgraph: lg, rivet: rv };
  gate('a', 'per step vs raw', sb.perStepUs / raw.perStepUs, 10, sb.perStepUs / raw.perStepUs <= 10);
  if (lg.perStepUs)
    gate(
      'a',
      'per step vs LangGraph',
      sb.perStepUs / lg.perStepUs,
      0.02,
      sb.perStepUs / lg.perStepUs <= 0.02,
    );
}

if (want('b')) {
  process.stderr.write('(b) chains of 10, 1,000 and 10,000 on the default stack\n');
  const [c10, c1k, c10k, rv1k] = measureAll([
    ['chain', 'switchboard', 10],
    ['chain', 'switchboard', 1000],
    ['chain', 'switchboard', 10000],
    ['chain', 'rivet', 1000],
  ]);
  results.b = { n10: c10, n1000: c1k, n10000: c10k, rivet1000: rv1k };
  gate('b', '10,000-agent chain completes', c10k.error ? 0 : 1, 1, !c10k.error);
  gate(
    'b',
    'per step at 1,000 / at 10',
    c1k.perStepUs / c10.perStepUs,
    1.5,
    c1k.perStepUs / c10.perStepUs <= 1.5,
  );
}

if (want('c')) {
  process.stderr.write('(c) two agents alternating through a decider, 10,000 turns\n');
  const [sb, raw, lg] = measureAll([
    ['alternate', 'switchboard', 10000],
    ['alternate', 'raw', 10000],
    ['alternate', 'langgraph', 10000],
  ]);
  results.c = { switchboard: sb, raw, langgraph: lg };
  gate('c', 'per turn vs raw', sb.perTurnUs / raw.perTurnUs, 10, sb.perTurnUs / raw.perTurnUs <= 10);
  gate('c', 'bytes retained per turn (bookkeeping)', sb.retainedPerTurn, 50, sb.retainedPerTurn <= 50);
}

if (want('d')) {
  process.stderr.write('(d) fan-out 1 → 100 parallel agents → join, 50 ms model\n');
  const [sb, raw] = measureAll([
    ['fanout', 'switchboard', 100],
    ['fanout', 'raw', 100],
  ]);
  results.d = { switchboard: sb, raw };
  gate('d', 'wall vs raw', sb.wallMs / raw.wallMs, 1.05, sb.wallMs / raw.wallMs <= 1.05);
}

if (want('e')) {
  process.stderr.write('(e) 100 concurrent runs of a 10-agent chain, 50 ms model\n');
  const [sb, raw] = measureAll([
    ['concurrent', 'switchboard', 100],
    ['concurrent', 'raw', 100],
  ]);
  results.e = { switchboard: sb, raw };
  gate('e', 'wall vs raw', sb.wallMs / raw.wallMs, 1.02, sb.wallMs / raw.wallMs <= 1.02);
  gate(
    'e',
    'peak RSS vs raw process',
    sb.peakRssMB / raw.peakRssMB,
    1.3,
    sb.peakRssMB / raw.peakRssMB <= 1.3,
  );
}

if (want('f')) {
  process.stderr.write('(f) import time of the library\n');
  const [sb, lg] = measureAll([
    ['import', 'switchboard'],
    ['import', 'langgraph'],
  ]);
  results.f = { switchboard: sb, langgraph: lg };
  gate('f', 'import vs LangGraph', sb.importMs / lg.importMs, 0.25, sb.importMs / lg.importMs <= 0.25);
}

if (want('q')) {
  // The quick profile's in-process figures (quick.mjs): per step against raw async measured in
  // one process (CPU time, interleaved rounds), and repeated validated runs of one flow object.
  process.stderr.write('(q) in one process: chain of 100 vs raw async; validated runs of one flow object\n');
  const r = spawnSync(process.execPath, ['--expose-gc', join(here, 'quick.mjs'), 'a', 'v'], {
    cwd: here,
    encoding: 'utf8',
    timeout: 600_000,
  });
  process.stderr.write(r.stdout ?? '');
  let q;
  try {
    q = JSON.parse(readFileSync(join(here, 'quick-results.json'), 'utf8')).results;
  } catch {
    q = undefined;
  }
  results.q = q ?? { error: `quick.mjs: ${r.signal ?? `exit ${r.status}`}` };
  if (q?.a) gate('q', 'per step vs raw chain, one process (CPU)', q.a.vsRaw, 10, q.a.vsRaw <= 10);
  if (q?.v) {
    gate('q', 'validated / unvalidated runs of one flow object', q.v.ratio, 1.3, q.v.ratio <= 1.3);
    gate('q', 'the same, deep-frozen flow', q.v.frozenRatio, 1.1, q.v.frozenRatio <= 1.1);
  }
}

const lines = [];
const row = (...c) => lines.push(c.join(' | '));
row('case', 'switchboard', 'raw', 'langgraph', 'rivet');
const r = results;
if (r.a)
  row(
    '(a) µs/step, chain 100',
    fmt(r.a.switchboard.perStepUs),
    fmt(r.a.raw.perStepUs),
    fmt(r.a.langgraph.perStepUs),
    r.a.rivet.error ?? fmt(r.a.rivet.perStepUs),
  );
if (r.b)
  row(
    '(b) µs/step, chain 10 / 1k / 10k',
    `${fmt(r.b.n10.perStepUs)} / ${fmt(r.b.n1000.perStepUs)} / ${r.b.n10000.error ?? fmt(r.b.n10000.perStepUs)}`,
    '',
    '',
    `1k: ${r.b.rivet1000.error ?? fmt(r.b.rivet1000.perStepUs)}`,
  );
if (r.c)
  row(
    '(c) µs/turn; bytes retained/turn',
    `${fmt(r.c.switchboard.perTurnUs)}; ${fmt(r.c.switchboard.retainedPerTurn, 1)}`,
    `${fmt(r.c.raw.perTurnUs)}`,
    r.c.langgraph.error ?? `${fmt(r.c.langgraph.perTurnUs)}; ${fmt(r.c.langgraph.retainedPerTurn, 1)}`,
    '',
  );
if (r.d) row('(d) wall ms, fan-out 100', fmt(r.d.switchboard.wallMs, 1), fmt(r.d.raw.wallMs, 1), '', '');
if (r.e)
  row(
    '(e) wall ms; peak RSS MB, 100 runs',
    `${fmt(r.e.switchboard.wallMs, 1)}; ${fmt(r.e.switchboard.peakRssMB, 1)}`,
    `${fmt(r.e.raw.wallMs, 1)}; ${fmt(r.e.raw.peakRssMB, 1)}`,
    '',
    '',
  );
if (r.f) row('(f) import ms', fmt(r.f.switchboard.importMs, 1), '', fmt(r.f.langgraph.importMs, 1), '');
if (r.q?.a)
  row(
    '(q) CPU µs/step in one process, chain 100',
    fmt(r.q.a.switchboardUs),
    `${fmt(r.q.a.rawUs)} (bare async ${fmt(r.q.a.bareAsyncUs, 3)})`,
    '',
    '',
  );
lines.push('');
for (const g of gates)
  lines.push(`${g.pass ? 'PASS' : 'FAIL'} (${g.id}) ${g.what}: ${fmt(g.value, 3)} (limit ${g.limit})`);
process.stdout.write(`${lines.join('\n')}\n`);
writeFileSync(
  join(here, 'results.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, repeats: REPEATS, results, gates }, null, 2)}\n`,
);
