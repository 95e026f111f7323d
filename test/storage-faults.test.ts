/**
 * Storage faults, injected in the store's file I/O (runtime/src/store/faults.ts): every write
 * path — event log, checkpoints, tool journal, catalog (flows and the run index), run specs,
 * room files — fails the way a full disk (ENOSPC), a failing disk (EIO), a read-only mount
 * (EROFS) or a vanished directory (ENOENT) makes it fail. For each: the error is named
 * (storage_full / storage_io / storage_unavailable, with the path), nothing phantom is left,
 * nothing beyond the log is reported, health is degraded while it lasts, and after a resume
 * the run ends as an undisturbed one does, with exactly its counters and each tool executed once.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { applyFlowToDoc } from '@switchboard/schemas/ydoc';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { createServer, type SwitchboardServer } from '../runtime/src/server/index.js';
import { countLog, isReplayed } from '../runtime/src/server/run-counters.js';
import type { RunCounters } from '../runtime/src/store/catalog.js';
import { scanEventLog } from '../runtime/src/store/event-log.js';
import { clearFaults, type FaultCode, type FaultRule, injectFaults } from '../runtime/src/store/faults.js';
import { batteryFlow, countingTools, FINAL_OUTPUT } from './crash/fixture.js';
import { HOST, simpleFlow, until } from './server/helpers.js';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  clearFaults();
  for (const c of cleanups.splice(0).reverse()) await c();
});

const NAME: Record<FaultCode, string> = {
  ENOSPC: 'storage_full',
  EDQUOT: 'storage_full',
  EIO: 'storage_io',
  EROFS: 'storage_unavailable',
  ENOENT: 'storage_unavailable',
};
const STATUS: Record<string, number> = { storage_full: 507, storage_unavailable: 503, storage_io: 500 };

interface Srv {
  s: SwitchboardServer;
  dir: string;
  toolsFile: string;
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  req: (method: string, url: string, body?: unknown) => Promise<{ status: number; json: () => any }>;
}

async function server(opts: { autoResume?: boolean; dir?: string } = {}): Promise<Srv> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'sb-faults-'));
  const toolsFile = join(dir, '..', `${dir.split('/').at(-1)}.tools`);
  const s = await createServer({
    dataDir: dir,
    editorDir: false,
    runs: { tools: countingTools(toolsFile, 4), autoResume: opts.autoResume ?? false },
    storage: { probeMs: 40 },
  });
  cleanups.push(async () => {
    await s.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    rmSync(toolsFile, { force: true });
  });
  const req = async (method: string, url: string, body?: unknown) => {
    const r = await s.app.inject({
      method: method as 'GET',
      url,
      headers: { host: HOST, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
    return { status: r.statusCode, json: () => r.json() };
  };
  return { s, dir, toolsFile, req };
}

const diskEvents = (dir: string, id: string): RunEvent[] =>
  scanEventLog(join(dir, 'runs', id, 'events.jsonl'), id).events;

const executions = (file: string): string[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ')[1]!)
    : [];

/** What an undisturbed run of the battery flow counts. */
let baseline: RunCounters;
beforeAll(async () => {
  const { s, req } = await server();
  const r = await req('POST', '/api/runs', { flow: batteryFlow(2), input: 'go' });
  const id = r.json().run.id as string;
  await until(() => s.store.catalog.data.runs[id]?.status === 'completed', 'baseline run');
  baseline = { ...s.store.catalog.data.runs[id]!.counters };
  expect(baseline.turns).toBeGreaterThan(5);
  expect(baseline.toolCalls).toBe(3);
  await s.close();
});

/** Starts the battery flow, with a fault installed first; waits until the disk paused it. */
async function pausedByFault(srv: Srv, rule: FaultRule): Promise<string> {
  injectFaults(rule);
  const r = await srv.req('POST', '/api/runs', { flow: batteryFlow(2), input: 'go' });
  expect(r.status).toBe(201);
  const id = r.json().run.id as string;
  await until(() => srv.s.store.catalog.data.runs[id]?.pausedBy, 'the run paused by the disk');
  return id;
}

/** The run stopped where its log stops, and says why. */
async function expectStoppedAtLog(srv: Srv, id: string, code: FaultCode, file: string): Promise<void> {
  const { s, dir, req } = srv;
  const name = NAME[code];
  // Its files are closed (what the OS has of them counts: the entry follows the file).
  await s.runs.settled(id);
  const run = (await req('GET', `/api/runs/${id}`)).json().run;
  expect(run.status).toBe('paused');
  expect(run.live).toBe(false);
  expect(run.pausedBy.code).toBe(name);
  expect(run.pausedBy.path).toContain(file);
  // Nothing beyond the log: its index entry and its events are what the disk holds.
  const onDisk = diskEvents(dir, id);
  expect(run.lastSeq).toBe(onDisk.at(-1)?.seq ?? 0);
  expect(run.counters).toEqual(countLog(id, onDisk));
  const served = (await req('GET', `/api/runs/${id}/events`)).json().events as RunEvent[];
  expect(served.map((e) => e.seq)).toEqual(onDisk.map((e) => e.seq));
  // It really stopped: nothing more reaches its log.
  const size = onDisk.length;
  await new Promise((r) => setTimeout(r, 120));
  expect(diskEvents(dir, id)).toHaveLength(size);
  // Health says so, with the error's name and where.
  const h = (await req('GET', '/api/health')).json();
  expect(h.status).toBe('degraded');
  expect(h.storage.lastError.code).toBe(name);
  expect(h.storage.lastError.path).toContain(file);
  expect(typeof h.storage.freeBytes).toBe('number');
}

/** After a resume the run ends as an undisturbed one does: output, counters, tools once. */
async function expectExactAfterResume(srv: Srv, id: string, replays = false): Promise<void> {
  const { s, dir, toolsFile } = srv;
  await until(() => s.store.catalog.data.runs[id]?.status === 'completed', 'completed after resume', 30_000);
  await until(() => !s.runs.isLive(id), 'settled');
  const rec = s.store.catalog.data.runs[id]!;
  expect(rec.output).toBe(FINAL_OUTPUT);
  expect(rec.pausedBy).toBeUndefined();
  expect(rec.counters).toEqual(baseline);
  const events = diskEvents(dir, id);
  expect(countLog(id, events)).toEqual(baseline);
  // The log says why it stopped, and the replayed turn is marked, not a second one.
  expect(
    events.some((e) => e.type === 'run.paused' && /^storage_/.test((e as { reason?: string }).reason ?? '')),
  ).toBe(true);
  const turns = events.filter((e) => e.type === 'turn.completed' && e.runId === id && !isReplayed(e));
  expect(turns).toHaveLength(baseline.turns);
  // A checkpoint that failed left turns in the log past the last one that counts: replayed.
  if (replays) expect(events.some((e) => e.type === 'turn.completed' && isReplayed(e))).toBe(true);
  // Each non-idempotent tool call ran once, whatever the disk did.
  expect(executions(toolsFile).sort()).toEqual(['alice', 'closer', 'planner']);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
}

describe('a run whose files cannot be written stops where its log stops', () => {
  const cases: Array<[string, string, FaultCode, Partial<FaultRule>]> = [
    ['event log', 'events.jsonl', 'ENOSPC', { ops: ['write'], after: 4, partial: true }],
    ['event log', 'events.jsonl', 'EIO', { ops: ['sync'], after: 3 }],
    ['event log', 'events.jsonl', 'EROFS', { ops: ['write'], after: 6 }],
    ['event log', 'events.jsonl', 'ENOENT', { ops: ['write'], after: 2 }],
    ['checkpoints', 'checkpoints.jsonl', 'ENOSPC', { ops: ['write'], after: 2 }],
    ['checkpoints', 'checkpoints.jsonl', 'EIO', { ops: ['sync'], after: 1 }],
    ['tool journal', 'tools.jsonl', 'ENOSPC', { ops: ['write'], after: 1 }],
    ['tool journal', 'tools.jsonl', 'EIO', { ops: ['sync'], after: 2 }],
    ['tool journal', 'tools.jsonl', 'EROFS', { ops: ['write'], after: 3 }],
  ];
  for (const [what, file, code, rule] of cases) {
    it(`${what}: ${code} → ${NAME[code]}; resumed on command with exact counters`, async () => {
      const srv = await server();
      const id = await pausedByFault(srv, { path: file, code, ...rule });
      await expectStoppedAtLog(srv, id, code, file);
      // While the disk still refuses, a resume is refused by name, or the run pauses again by name.
      const again = await srv.req('POST', `/api/runs/${id}/commands`, { type: 'resume' });
      if (again.status === 202)
        await until(
          () => srv.s.store.catalog.data.runs[id]!.pausedBy && !srv.s.runs.isLive(id),
          'paused again',
        );
      else {
        expect(again.status).toBe(STATUS[NAME[code]]);
        expect(again.json().error.code).toBe(NAME[code]);
      }
      await srv.s.runs.settled(id);
      expect(srv.s.store.catalog.data.runs[id]).toMatchObject({
        status: 'paused',
        pausedBy: { code: NAME[code] },
      });
      clearFaults();
      await until(async () => (await srv.req('GET', '/api/health')).json().status === 'ok', 'health ok');
      const r = await srv.req('POST', `/api/runs/${id}/commands`, { type: 'resume' });
      expect(r.status).toBe(202);
      await expectExactAfterResume(srv, id, what === 'checkpoints' && rule.ops?.includes('write'));
    });
  }

  it('resumes by itself once writes succeed again', async () => {
    const srv = await server({ autoResume: true });
    const id = await pausedByFault(srv, {
      path: 'events.jsonl',
      code: 'ENOSPC',
      ops: ['write'],
      after: 5,
      times: 1,
    });
    expect(srv.s.store.catalog.data.runs[id]!.pausedBy!.code).toBe('storage_full');
    await expectExactAfterResume(srv, id);
    expect((await srv.req('GET', '/api/health')).json().status).toBe('ok');
  });

  it('a restart after the fault resumes the paused run with exact counters', async () => {
    const srv = await server();
    const id = await pausedByFault(srv, { path: 'checkpoints.jsonl', code: 'EIO', ops: ['write'], after: 3 });
    clearFaults();
    await srv.s.close();
    const again = await server({ dir: srv.dir });
    again.toolsFile = srv.toolsFile;
    await expectExactAfterResume({ ...again, toolsFile: srv.toolsFile }, id);
  });
});

describe('a run that could not be started is not in the run list', () => {
  const cases: Array<[string, FaultRule]> = [
    ['the catalog (ENOSPC)', { path: 'catalog.json', code: 'ENOSPC', ops: ['write'] }],
    ['the catalog (EROFS)', { path: 'catalog.json', code: 'EROFS', ops: ['open'] }],
    ['the run folder (ENOENT)', { path: '/runs/', code: 'ENOENT', ops: ['mkdir'] }],
    ['the run spec (EIO)', { path: 'run.json', code: 'EIO', ops: ['sync'] }],
    ['the event log (EDQUOT)', { path: 'events.jsonl', code: 'EDQUOT', ops: ['open'] }],
  ];
  for (const [what, rule] of cases) {
    it(`${what}: refused by name, nothing left in the catalog or runs/`, async () => {
      const srv = await server();
      injectFaults(rule);
      const r = await srv.req('POST', '/api/runs', { flow: batteryFlow(2), input: 'go' });
      const name = NAME[rule.code!];
      expect(r.status).toBe(STATUS[name]);
      expect(r.json().error.code).toBe(name);
      expect(r.json().error.path).toBeTruthy();
      expect((await srv.req('GET', '/api/runs')).json().runs).toEqual([]);
      expect(readdirSync(join(srv.dir, 'runs'))).toEqual([]);
      expect((await srv.req('GET', '/api/health')).json().status).toBe('degraded');
      clearFaults();
      // Nothing of it on disk either, after writes succeed again and a restart.
      const ok = await srv.req('POST', '/api/runs', { flow: batteryFlow(2), input: 'go' });
      expect(ok.status).toBe(201);
      await srv.s.close();
      const again = await server({ dir: srv.dir });
      expect(Object.keys(again.s.store.catalog.data.runs)).toEqual([ok.json().run.id]);
      expect(readdirSync(join(srv.dir, 'runs'))).toEqual([ok.json().run.id]);
    });
  }
});

describe('what a start left half-made is removed at the next start', () => {
  it('an entry without run.json or events, and a folder the catalog does not know with an empty log', async () => {
    const srv = await server();
    // A process that died between writing the entry and the folder, and one that died between
    // making the folder and writing the entry.
    srv.s.store.catalog.data.runs.r_ghost = {
      id: 'r_ghost',
      flowId: 'battery',
      flowName: 'x',
      status: 'pending',
      createdAt: 't',
      updatedAt: 't',
      lastSeq: 0,
      counters: { turns: 0, promptTokens: 0, completionTokens: 0, toolCalls: 0 },
      resumes: 0,
      source: 'api',
    };
    await srv.s.store.catalog.save();
    mkdirSync(join(srv.dir, 'runs', 'r_orphan'));
    writeFileSync(join(srv.dir, 'runs', 'r_orphan', 'events.jsonl'), '');
    await srv.s.close();
    const again = await server({ dir: srv.dir });
    expect(again.s.store.catalog.data.runs.r_ghost).toBeUndefined();
    expect(readdirSync(join(srv.dir, 'runs'))).toEqual([]);
    expect(again.s.recovered.interrupted).toEqual([]);
  });
});

describe('flows and rooms', () => {
  it('a flow write the disk refuses is named and changes nothing', async () => {
    const srv = await server();
    expect((await srv.req('PUT', '/api/flows/f', simpleFlow('f', 'one'))).status).toBe(201);
    injectFaults({ path: 'flows/', code: 'ENOSPC', ops: ['write'] });
    const r = await srv.req('PUT', '/api/flows/f', simpleFlow('f', 'two'));
    expect(r.status).toBe(507);
    expect(r.json().error).toMatchObject({ code: 'storage_full' });
    expect(r.json().error.path).toContain('flows');
    expect(JSON.stringify((await srv.req('GET', '/api/flows/f')).json())).toContain('one');
    expect(srv.s.store.catalog.data.flows.f!.rev).toBe(1);
    clearFaults();
    await srv.s.close();
    const again = await server({ dir: srv.dir });
    expect(again.s.store.catalog.data.flows.f!.rev).toBe(1);
    expect(readdirSync(join(srv.dir, 'flows'))).toHaveLength(1);
  });

  it('a room file the disk refuses degrades health and loses nothing of the flow', async () => {
    const srv = await server();
    expect((await srv.req('PUT', '/api/flows/f', simpleFlow('f', 'one'))).status).toBe(201);
    const doc = new Y.Doc();
    await srv.s.roomStore.load('f', doc);
    injectFaults({ path: 'rooms', code: 'EIO', ops: ['write', 'mkdir', 'open'] });
    applyFlowToDoc(doc, { ...simpleFlow('f', 'two'), name: 'Renamed' });
    await srv.s.roomStore.save('f', doc);
    expect(srv.s.store.catalog.data.flows.f!.flow.name).toBe('Renamed');
    const h = (await srv.req('GET', '/api/health')).json();
    expect(h.storage).toMatchObject({ status: 'degraded', lastError: { code: 'storage_io' } });
    expect(h.storage.lastError.path).toMatch(/^rooms\//);
    // A room save whose catalog write fails is named too, and the flow stays as it was.
    clearFaults();
    injectFaults({ path: 'catalog.json', code: 'ENOSPC', ops: ['write'] });
    applyFlowToDoc(doc, { ...simpleFlow('f', 'three'), name: 'Again' });
    const err = await srv.s.roomStore.save('f', doc).catch((e: unknown) => e);
    expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
    expect(srv.s.store.catalog.data.flows.f!.flow.name).toBe('Renamed');
    clearFaults();
    await until(async () => (await srv.req('GET', '/api/health')).json().status === 'ok', 'health ok');
  });
});

describe('the data directory removed under a running server', () => {
  it('refuses writes as storage_unavailable, leaves nothing, and takes them again once it is back', async () => {
    const srv = await server();
    // Unmounted, as it were: the directory goes away (its content kept aside).
    renameSync(srv.dir, `${srv.dir}.away`);
    cleanups.push(() => rmSync(`${srv.dir}.away`, { recursive: true, force: true }));
    const r = await srv.req('POST', '/api/runs', { flow: batteryFlow(2), input: 'go' });
    expect(r.status).toBe(503);
    expect(r.json().error.code).toBe('storage_unavailable');
    expect((await srv.req('GET', '/api/runs')).json().runs).toEqual([]);
    const p = await srv.req('PUT', '/api/flows/f', simpleFlow('f'));
    expect(p.status).toBe(503);
    expect((await srv.req('GET', '/api/flows/f')).status).toBe(404);
    expect((await srv.req('GET', '/api/health')).json()).toMatchObject({
      status: 'degraded',
      storage: { lastError: { code: 'storage_unavailable' } },
    });
    // Nothing was made in its place (on the disk under the mount point).
    expect(existsSync(srv.dir)).toBe(false);
    // Mounted back: health is ok by itself and writes go through.
    renameSync(`${srv.dir}.away`, srv.dir);
    await until(async () => (await srv.req('GET', '/api/health')).json().status === 'ok', 'health ok');
    expect((await srv.req('PUT', '/api/flows/f', simpleFlow('f'))).status).toBe(201);
    const ok = await srv.req('POST', '/api/runs', { flow: batteryFlow(2), input: 'go' });
    expect(ok.status).toBe(201);
    await until(() => srv.s.store.catalog.data.runs[ok.json().run.id]?.status === 'completed', 'completed');
  });
});

describe('health', () => {
  it('warns below the low-space threshold', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-faults-'));
    const s = await createServer({
      dataDir: dir,
      editorDir: false,
      storage: { lowSpaceBytes: Number.MAX_SAFE_INTEGER },
    });
    cleanups.push(async () => {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const h = (await s.app.inject({ method: 'GET', url: '/api/health', headers: { host: HOST } })).json();
    expect(h.storage.lowSpace).toBe(true);
    expect(h.warnings[0]).toMatch(/^storage_low: \d+ bytes free/);
  });
});
