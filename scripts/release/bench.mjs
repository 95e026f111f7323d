// `pnpm bench:release`: figures of the release package, measured as a user meets them.
// Install time of the tarball with npm on a warm cache (one untimed install first warms it),
// package size (packed, unpacked, installed with its dependencies), `switchboard --version`
// cold start (a new process each time) and the first `run` of a one-node flow (new process,
// scripted model). Uses release/switchboard-<version>.tgz (run `pnpm release:pack` first) or
// the tarball given as the first argument. Prints JSON.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT } from './workspace.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const tarball =
  process.argv[2] ??
  join(
    ROOT,
    'release',
    readdirSync(join(ROOT, 'release')).find((f) => /^switchboard-.*\.tgz$/.test(f)) ??
      'switchboard-missing.tgz',
  );
statSync(tarball); // fails clearly when the package was not packed

const tmp = mkdtempSync(join(tmpdir(), 'sb-release-bench-'));
const env = {
  ...process.env,
  PATH: [join(tmp, 'p1', 'bin'), dirname(process.execPath), '/usr/bin', '/bin'].join(':'),
  SWITCHBOARD_HOME: join(tmp, 'home'),
};
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x) => Math.round(x * 10) / 10;

function install(prefix) {
  mkdirSync(prefix, { recursive: true });
  const t0 = process.hrtime.bigint();
  execFileSync('npm', ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', tarball], {
    cwd: tmp,
    env,
    stdio: 'ignore',
  });
  return ms(t0);
}

// Wall time is what a user waits; on a shared machine it mostly measures the others, so GNU
// time's CPU time (user + system) and peak RSS of the process are given too.
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

function timed(args, cwd) {
  const command = TIME ? [TIME, '-f', 'RUSAGE %U %S %M', 'switchboard', ...args] : ['switchboard', ...args];
  const t0 = process.hrtime.bigint();
  const r = spawnSync(command[0], command.slice(1), { cwd, env, encoding: 'utf8' });
  const wall = ms(t0);
  if (r.status !== 0) throw new Error(`switchboard ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  const m = /RUSAGE (\S+) (\S+) (\d+)/.exec(r.stderr);
  return {
    wall,
    cpu: m ? (Number(m[1]) + Number(m[2])) * 1000 : Number.NaN,
    rssKiB: m ? Number(m[3]) : Number.NaN,
  };
}

const summary = (xs) => ({
  wallFirst: round(xs[0].wall),
  wallMedian: round(median(xs.map((x) => x.wall))),
  cpuMedian: round(median(xs.map((x) => x.cpu))),
  maxRssMiB: round(Math.max(...xs.map((x) => x.rssKiB)) / 1024),
  runs: xs.length,
});

try {
  install(join(tmp, 'warm')); // fills npm's cache with every dependency
  const installs = [install(join(tmp, 'p1')), install(join(tmp, 'p2'))];
  const du = (p) => Number(execFileSync('du', ['-sk', p], { encoding: 'utf8' }).split('\t')[0]) * 1024;

  const version = [];
  for (let i = 0; i < RUNS; i++) version.push(timed(['--version'], tmp));

  const flow = {
    version: 1,
    id: 'one-node',
    name: 'One node',
    models: { default: { provider: 'scripted', script: [{ fallback: true, text: 'done' }] } },
    nodes: [
      { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
      {
        id: 'writer',
        kind: 'agent',
        position: { x: 200, y: 0 },
        config: { role: 'Writer', model: 'default', prompt: [{ text: 'Task: {{task}}' }] },
      },
      { id: 'end', kind: 'end', position: { x: 400, y: 0 }, config: {} },
    ],
    edges: [
      { id: 'e1', kind: 'handover', source: 'start', target: 'writer' },
      { id: 'e2', kind: 'handover', source: 'writer', target: 'end' },
    ],
  };
  writeFileSync(join(tmp, 'one-node.json'), JSON.stringify(flow));
  const run = [];
  for (let i = 0; i < RUNS; i++)
    run.push(timed(['run', 'one-node.json', '--input', 'hi', '--events', 'none'], tmp));

  console.log(
    JSON.stringify(
      {
        tarball,
        node: process.version,
        packedBytes: statSync(tarball).size,
        installedBytes: du(join(tmp, 'p1')),
        installedPackageBytes: du(join(tmp, 'p1', 'lib', 'node_modules', 'switchboard')),
        installWarmCacheMs: installs.map(round),
        loadAverage: loadavg().map(round),
        versionColdStartMs: summary(version),
        runOneNodeMs: summary(run),
      },
      null,
      2,
    ),
  );
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
