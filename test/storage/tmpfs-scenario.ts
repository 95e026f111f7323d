/**
 * The real-filesystem scenario of storage-tmpfs.test.ts, run in its own mount namespace
 * (`unshare -m`, or `unshare -Urm` for a user that is not root) so the small tmpfs it mounts
 * is never seen outside and disappears with it: `tmpfs-scenario.ts MOUNT_POINT`.
 *
 * A server whose data directory sits on a 4 MiB tmpfs, most of it taken by a ballast file,
 * is given runs until the disk is full; then the ballast is removed and the server restarted.
 * Prints one JSON line: what was seen at each step, for the test to judge.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { createServer, type SwitchboardServer } from '../../runtime/src/server/index.js';
import { countLog } from '../../runtime/src/server/run-counters.js';
import { scanEventLog } from '../../runtime/src/store/event-log.js';
import { HOST, slowChain, until } from '../server/helpers.js';

const mnt = process.argv[2]!;
mkdirSync(mnt, { recursive: true });
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0700', 'tmpfs', mnt], { stdio: 'pipe' });
} catch (e) {
  process.stdout.write(
    `${JSON.stringify({ mountFailed: `mount -t tmpfs -o size=4m tmpfs ${mnt}: ${(e as { stderr?: Buffer }).stderr?.toString().trim() ?? (e as Error).message}` })}\n`,
  );
  process.exit(0);
}
const dir = join(mnt, 'data');
const free = () => {
  const s = statfsSync(mnt);
  return s.bavail * s.bsize;
};

const flow = slowChain('fill', 8, 40, 'y'.repeat(1500));

async function open(autoResume: boolean): Promise<SwitchboardServer> {
  return createServer({
    dataDir: dir,
    editorDir: false,
    durability: 'fsync',
    runs: { autoResume },
    storage: { probeMs: 50, lowSpaceBytes: 1024 * 1024 },
  });
}

const inject = async (s: SwitchboardServer, method: string, url: string, body?: unknown) => {
  const r = await s.app.inject({
    method: method as 'GET',
    url,
    headers: { host: HOST, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  return { status: r.statusCode, body: r.json() as Record<string, any> };
};

const out: Record<string, unknown> = {};

// 1. One undisturbed run: what a run counts.
let s = await open(false);
const first = await inject(s, 'POST', '/api/runs', { flow, input: 'go' });
const firstId = first.body.run.id as string;
await until(() => s.store.catalog.data.runs[firstId]?.status === 'completed', 'baseline run');
await s.runs.settled(firstId);
out.baseline = { ...s.store.catalog.data.runs[firstId]!.counters };

// 2. A ballast leaves about 600 KiB; runs go on until the disk refuses them.
const ballast = join(mnt, 'ballast');
writeFileSync(ballast, Buffer.alloc(Math.max(0, free() - 600 * 1024), 1));
out.freeBeforeFill = free();
out.healthLow = (await inject(s, 'GET', '/api/health')).body;
const accepted: string[] = [];
const refusals: Array<{ status: number; code: string; path?: string }> = [];
for (let i = 0; i < 400 && refusals.length < 15; i++) {
  const r = await inject(s, 'POST', '/api/runs', { flow, input: `go ${i}` });
  if (r.status === 201) accepted.push(r.body.run.id);
  else refusals.push({ status: r.status, code: r.body.error?.code, path: r.body.error?.path });
  await new Promise((res) => setTimeout(res, 4));
}
// Let what runs reach the full disk or its end.
await until(
  () => accepted.every((id) => !s.runs.isLive(id)) || Date.now() < 0,
  'every run paused by the disk or ended',
  60_000,
).catch(() => {});
for (const id of accepted) await s.runs.settled(id);
out.accepted = accepted.length;
out.refusals = refusals;
out.healthFull = (await inject(s, 'GET', '/api/health')).body;
// biome-ignore lint/suspicious/noExplicitAny: test convenience
const listed = (await inject(s, 'GET', '/api/runs?limit=1000')).body.runs as Array<Record<string, any>>;
out.listed = listed.map((r) => r.id).sort();
out.expectedListed = [firstId, ...accepted].sort();
out.folders = readdirSync(join(dir, 'runs')).sort();
// Each run's entry is what its log holds, no more.
out.whileFull = listed.map((r) => {
  const events: RunEvent[] = scanEventLog(join(dir, 'runs', r.id, 'events.jsonl'), r.id).events;
  return {
    id: r.id,
    status: r.status,
    pausedBy: r.pausedBy?.code,
    live: r.live,
    lastSeq: r.lastSeq,
    logSeq: events.at(-1)?.seq ?? 0,
    counters: r.counters,
    logCounters: countLog(r.id, events),
  };
});

// 3. Space comes back; the server restarts (its own close may fail to save: it is named).
rmSync(ballast);
try {
  await s.close();
  out.closeError = null;
} catch (e) {
  out.closeError = (e as { code?: string }).code ?? String(e);
}
s = await open(true);
out.recovered = s.recovered;
for (const id of accepted)
  await until(
    () => ['completed', 'failed'].includes(s.store.catalog.data.runs[id]?.status ?? ''),
    `run ${id} ends after the restart`,
    60_000,
  );
for (const id of accepted) await s.runs.settled(id);
out.healthAfter = (await inject(s, 'GET', '/api/health')).body;
out.after = accepted.map((id) => {
  const r = s.store.catalog.data.runs[id]!;
  const events = scanEventLog(join(dir, 'runs', id, 'events.jsonl'), id).events;
  return {
    id,
    status: r.status,
    error: r.error?.code,
    output: typeof r.output === 'string' ? r.output.length : r.output,
    counters: r.counters,
    logCounters: countLog(id, events),
    seqsContiguous: events.every((e, i) => e.seq === i + 1),
    lastEvent: events.at(-1)?.type,
  };
});
await s.close();
process.stdout.write(`${JSON.stringify(out)}\n`);
execFileSync('umount', [mnt]);
