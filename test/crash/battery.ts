/**
 * The kill -9 battery: real server processes, runs of a multi-agent flow with tool calls and a
 * group-chat loop on scripted models, SIGKILL at seeded random moments, restart, and checks.
 *
 * A WebSocket client follows every run of the flow across restarts (resubscribing with its
 * last seqs): what it received was acknowledged, and must be in the logs afterwards.
 *
 * A provisional client (provisional.ts) follows them too, getting events before they are
 * synced and resubscribing after the durable seq it was told: what it was told durable must
 * be in the logs unchanged, and — with kill -9, never a power loss, so written events survive —
 * its final view of each run must be the run's log exactly.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunEvent } from '@switchboard/schemas';
import { readCheckpointLog } from '../../runtime/src/store/checkpoint-log.js';
import { StoreError } from '../../runtime/src/store/errors.js';
import { scanEventLog } from '../../runtime/src/store/event-log.js';
import { checkCheckpoint } from '../../runtime/src/store/run-files.js';
import { EventsClient } from '../server/helpers.js';
import { batteryFlow, FINAL_OUTPUT } from './fixture.js';
import { ProvisionalWatcher } from './provisional.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const RUNTIME = fileURLToPath(new URL('../../runtime/', import.meta.url));

export interface BatteryOptions {
  dir: string;
  runs: number;
  kills: number;
  seed: number;
  /** At most this many runs live at once. */
  concurrency?: number;
  /** Scripted reply latency; 0 makes most turns need no I/O (they are checkpointed in slices). */
  latencyMs?: number;
  log?: (line: string) => void;
}

export interface BatteryFigures {
  seed: number;
  runsStarted: number;
  kills: number;
  /** Runs live at a kill (counted once per kill). */
  killedRuns: number;
  resumedWithin5s: number;
  interruptedWithin5s: number;
  notHandledWithin5s: number;
  /** Wall time from SIGKILL to the new process listening (includes Node and tsx start-up). */
  restartMs: number[];
  /** Time from the new process's start to listening, recovery included. */
  recoveryMs: number[];
  ackedEvents: number;
  ackedLost: number;
  unreadableFiles: number;
  leftRunning: number;
  completed: number;
  interrupted: number;
  otherFinal: number;
  wrongOutput: number;
  seqGaps: number;
  duplicateExecutions: number;
  maybeExecuted: number;
  toolExecutions: number;
  /** Events the provisional client received (re-sent ones included). */
  provisionalEvents: number;
  /** Of them, received before the durable seq told covered them. */
  provisionalAhead: number;
  /** Events it held above the durable seq told when a server was killed (summed over kills). */
  provisionalAboveAtKill: number;
  /** Events re-sent to it after a restart over one it held, and of those, with other content. */
  provisionalResent: number;
  provisionalSuperseded: number;
  /** Events it was told durable (once each), and those of them not in the final log unchanged. */
  provisionalDurableEvents: number;
  provisionalDurableLost: number;
  /** Runs checked, and those whose final provisional view is not the final log exactly. */
  provisionalRuns: number;
  provisionalViewMismatches: number;
  /** Out-of-order events, frames without `durable`, error messages. */
  provisionalProblems: number;
}

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

interface Proc {
  child: ChildProcess;
  port: number;
  readyMs: number;
  recovered: { resumed: string[]; interrupted: string[]; final: string[] };
}

function startServer(dir: string, counter: string): Promise<Proc> {
  const child = spawn(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', join(HERE, 'server-main.ts'), dir, counter],
    { cwd: RUNTIME, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_ENV: 'production' } },
  );
  let err = '';
  child.stderr!.on('data', (d) => {
    err += d;
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /READY (\d+) (\d+) (.*)\n/.exec(out);
      if (m) resolve({ child, port: Number(m[1]), readyMs: Number(m[2]), recovered: JSON.parse(m[3]!) });
    });
    child.on('exit', (code) =>
      reject(new Error(`server exited (${code}) before READY: ${err.slice(-2000)}`)),
    );
  });
}

async function api(
  port: number,
  method: string,
  path: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
): Promise<{ status: number; json: any }> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  return { status: r.status, json: await r.json() };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runBattery(o: BatteryOptions): Promise<BatteryFigures> {
  const log = o.log ?? (() => {});
  const rand = rng(o.seed);
  const counter = join(o.dir, '..', `${o.dir.split('/').pop()}-counter.txt`);
  const dataDir = o.dir;
  const flow = batteryFlow(o.latencyMs);
  const started = new Set<string>();
  const f: BatteryFigures = {
    seed: o.seed,
    runsStarted: 0,
    kills: 0,
    killedRuns: 0,
    resumedWithin5s: 0,
    interruptedWithin5s: 0,
    notHandledWithin5s: 0,
    restartMs: [],
    recoveryMs: [],
    ackedEvents: 0,
    ackedLost: 0,
    unreadableFiles: 0,
    leftRunning: 0,
    completed: 0,
    interrupted: 0,
    otherFinal: 0,
    wrongOutput: 0,
    seqGaps: 0,
    duplicateExecutions: 0,
    maybeExecuted: 0,
    toolExecutions: 0,
    provisionalEvents: 0,
    provisionalAhead: 0,
    provisionalAboveAtKill: 0,
    provisionalResent: 0,
    provisionalSuperseded: 0,
    provisionalDurableEvents: 0,
    provisionalDurableLost: 0,
    provisionalRuns: 0,
    provisionalViewMismatches: 0,
    provisionalProblems: 0,
  };
  let proc = await startServer(dataDir, counter);
  let client = new EventsClient(`ws://127.0.0.1:${proc.port}/api/ws`, `http://127.0.0.1:${proc.port}`);
  await client.open();
  client.subscribeFlow(flow.id);
  const prov = new ProvisionalWatcher();
  await prov.open(proc.port);
  prov.subscribeFlow(flow.id);
  const concurrency = o.concurrency ?? 6;
  // Kills are spread over the run starts: one after every `killEvery` starts, each at a random
  // moment while runs are live (a kill of an idle server proves little).
  const killEvery = o.runs / o.kills;
  const liveRuns = async () =>
    (await api(proc.port, 'GET', '/api/runs?status=pending,running,paused,waiting&limit=1000')).json
      .runs as Array<{
      id: string;
    }>;

  while (started.size < o.runs || f.kills < o.kills) {
    const killDue = f.kills < o.kills && started.size >= Math.ceil(killEvery * (f.kills + 1)) - 1;
    if (!killDue && started.size < o.runs) {
      const live = (await liveRuns()).length;
      for (let i = live; i < concurrency && started.size < o.runs; i++) {
        try {
          const r = await api(proc.port, 'POST', '/api/runs', { flow, input: `job ${started.size}` });
          if (r.status === 201) started.add(r.json.run.id);
        } catch {}
        await sleep(rand() * 40);
        if (f.kills < o.kills && started.size >= Math.ceil(killEvery * (f.kills + 1)) - 1) break;
      }
    }
    if (killDue || (started.size >= o.runs && f.kills < o.kills)) {
      await sleep(30 + rand() * 600);
      let liveIds = await liveRuns();
      while (liveIds.length === 0) {
        // Nothing live: start one more job of the same kind to kill into.
        const r = await api(proc.port, 'POST', '/api/runs', { flow, input: `extra ${started.size}` });
        if (r.status === 201) started.add(r.json.run.id);
        await sleep(30 + rand() * 500);
        liveIds = await liveRuns();
      }
      proc.child.kill('SIGKILL');
      await new Promise((r) => proc.child.once('exit', r));
      f.kills++;
      await prov.close();
      f.provisionalAboveAtKill += prov.heldAboveDurable();
      log(`kill ${f.kills}: ${liveIds.length} runs live`);
      const t0 = Date.now();
      proc = await startServer(dataDir, counter);
      f.restartMs.push(Date.now() - t0);
      f.recoveryMs.push(proc.readyMs);
      const after = (await api(proc.port, 'GET', '/api/runs?limit=1000')).json.runs as Array<{
        id: string;
        status: string;
      }>;
      for (const { id } of liveIds) {
        f.killedRuns++;
        const r = after.find((x) => x.id === id);
        // Recovery runs before the server listens: READY within 5 s of the process start means
        // every killed run was handled within 5 s.
        const inTime = proc.readyMs <= 5000;
        if (proc.recovered.resumed.includes(id) && inTime) f.resumedWithin5s++;
        else if (r && r.status !== 'running' && r.status !== 'pending' && inTime) f.interruptedWithin5s++;
        else f.notHandledWithin5s++;
      }
      await client.close();
      const next = new EventsClient(`ws://127.0.0.1:${proc.port}/api/ws`, `http://127.0.0.1:${proc.port}`);
      for (const [k, v] of client.events) next.events.set(k, v);
      next.problems.push(...client.problems);
      client = next;
      await client.open();
      client.subscribeFlow(flow.id);
      await prov.open(proc.port);
      prov.subscribeFlow(flow.id);
    }
    await sleep(20);
  }
  f.runsStarted = started.size;
  // Let everything finish.
  const end = Date.now() + 120_000;
  for (;;) {
    const live = (await api(proc.port, 'GET', '/api/runs?status=pending,running,paused,waiting&limit=1000'))
      .json.runs;
    if (live.length === 0 || Date.now() > end) break;
    await sleep(100);
  }
  // The provisional client settles: runs it never heard of (killed before it got an event, then
  // ended at recovery) it asks for by id; then each view ends with the run's final event and
  // all of it was told durable.
  for (const id of started) if (!prov.runs.has(id)) prov.subscribeRun(id);
  const settled = () => [...started, ...prov.runs.keys()].every((id) => prov.settled(id));
  const settleEnd = Date.now() + 10_000;
  while (!settled() && Date.now() < settleEnd) await sleep(20);
  await sleep(300);
  await client.close();
  await prov.close();
  const runs = (await api(proc.port, 'GET', '/api/runs?limit=1000')).json.runs as Array<{
    id: string;
    status: string;
    output?: unknown;
  }>;
  proc.child.kill('SIGTERM');
  await new Promise((r) => proc.child.once('exit', r));

  // Every store file is readable; every log is a contiguous prefix from seq 1.
  const logs = new Map<string, RunEvent[]>();
  for (const id of readdirSync(join(dataDir, 'runs'))) {
    try {
      const scan = scanEventLog(join(dataDir, 'runs', id, 'events.jsonl'), id);
      if (scan.torn) f.unreadableFiles++;
      logs.set(id, scan.events);
      if (existsSync(join(dataDir, 'runs', id, 'run.json')))
        JSON.parse(readFileSync(join(dataDir, 'runs', id, 'run.json'), 'utf8'));
      // A torn checkpoint tail is legal after a kill (the previous one counts); a damaged one throws.
      readCheckpointLog(join(dataDir, 'runs', id, 'checkpoints.jsonl'), checkCheckpoint(id));
    } catch (e) {
      f.unreadableFiles++;
      if (e instanceof StoreError && e.code === 'corrupt-log') f.seqGaps++;
      log(`unreadable: ${id}: ${(e as Error).message}`);
    }
  }
  JSON.parse(readFileSync(join(dataDir, 'catalog.json'), 'utf8'));
  for (const r of runs) {
    if (!started.has(r.id)) continue;
    if (r.status === 'running' || r.status === 'pending' || r.status === 'paused' || r.status === 'waiting')
      f.leftRunning++;
    else if (r.status === 'completed') {
      f.completed++;
      if (r.output !== FINAL_OUTPUT) f.wrongOutput++;
    } else if (r.status === 'interrupted') f.interrupted++;
    else {
      f.otherFinal++;
      log(`run ${r.id} ended ${r.status}`);
    }
    const events = logs.get(r.id) ?? [];
    events.forEach((e, i) => {
      if (e.seq !== i + 1) f.seqGaps++;
    });
    const maybe = events.filter(
      (e) => e.type === 'log' && String((e as { text?: string }).text).startsWith('maybe-executed'),
    );
    f.maybeExecuted += maybe.length;
  }
  // Acknowledged (received by the client) events are all in the logs, unchanged.
  for (const [runId, events] of client.events) {
    const disk = logs.get(runId) ?? [];
    for (const e of events) {
      f.ackedEvents++;
      const d = disk[e.seq - 1];
      if (!d || JSON.stringify(d) !== JSON.stringify(e)) f.ackedLost++;
    }
  }
  f.seqGaps += client.problems.filter((p) => p.includes('got seq')).length;
  // The provisional client: what it was told durable is in the logs as it was received, and
  // (only kill -9 here: written events survive) its final view of each run is the log exactly.
  f.provisionalEvents = prov.received;
  f.provisionalAhead = prov.ahead;
  f.provisionalResent = prov.resent;
  f.provisionalSuperseded = prov.superseded;
  f.provisionalProblems = prov.problems.length;
  for (const p of prov.problems.slice(0, 10)) log(`provisional: ${p}`);
  for (const id of new Set([...started, ...prov.runs.keys()])) {
    f.provisionalRuns++;
    const disk = logs.get(id) ?? [];
    const view = prov.runs.get(id);
    (view?.confirmed ?? []).forEach((json, i) => {
      f.provisionalDurableEvents++;
      const d = disk[i];
      if (!d || JSON.stringify(d) !== json) {
        f.provisionalDurableLost++;
        log(`provisional: ${id} seq ${i + 1} was told durable and is not in the log as received`);
      }
    });
    if (JSON.stringify(view?.events ?? []) !== JSON.stringify(disk)) {
      f.provisionalViewMismatches++;
      log(
        `provisional: ${id}: final view (${view?.events.length ?? 0} events, durable ${view?.durable ?? 0}) ` +
          `is not the log (${disk.length} events)`,
      );
    }
  }
  // No tool execution twice.
  const lines = existsSync(counter) ? readFileSync(counter, 'utf8').trim().split('\n').filter(Boolean) : [];
  f.toolExecutions = lines.length;
  const seen = new Set<string>();
  for (const l of lines) {
    if (seen.has(l)) f.duplicateExecutions++;
    seen.add(l);
  }
  return f;
}
