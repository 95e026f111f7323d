import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunEvent } from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from './atomic.js';
import { Catalog, emptyCatalog } from './catalog.js';
import { CheckpointLog, readCheckpointLog } from './checkpoint-log.js';
import { StoreError, StoreLockedError } from './errors.js';
import { EventLog, scanEventLog } from './event-log.js';
import { fdatasyncAsync } from './fd-io.js';
import { GroupCommit } from './group-commit.js';
import { checkCheckpoint } from './run-files.js';
import { Store } from './store.js';
import { ToolJournal } from './tool-journal.js';

const FIX = fileURLToPath(new URL('./__fixtures__/', import.meta.url));
const RUNTIME = fileURLToPath(new URL('../../', import.meta.url));

function child(script: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, ['--conditions=source', '--import', 'tsx', join(FIX, script), ...args], {
    cwd: RUNTIME,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

function exited(
  p: ChildProcess,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> {
  let out = '';
  p.stdout!.on('data', (d) => {
    out += d;
  });
  return new Promise((res) => p.on('close', (code, signal) => res({ code, signal, out })));
}

function firstLine(p: ChildProcess): Promise<string> {
  return new Promise((res, rej) => {
    let buf = '';
    p.stdout!.on('data', (d) => {
      buf += d;
      const i = buf.indexOf('\n');
      if (i !== -1) res(buf.slice(0, i));
    });
    p.on('error', rej);
  });
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sb-store-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const ev = (runId: string, seq: number, type = 'log'): RunEvent =>
  ({ runId, seq, ts: 1, type, level: 'info', text: `e${seq}` }) as RunEvent;

describe('atomic writes', () => {
  it('a crash after write, after fsync or after rename leaves the old or the new file, never a partial one', async () => {
    const file = join(dir, 'catalog.json');
    const oldText = JSON.stringify({ v: 'old', pad: 'x'.repeat(50_000) });
    const newText = JSON.stringify({ v: 'new', pad: 'y'.repeat(80_000) });
    for (const stage of ['written', 'synced', 'renamed']) {
      writeFileSync(file, oldText);
      const r = await exited(
        child('atomic-child.ts', [file, newText], { SWITCHBOARD_CRASH_AT: `atomic:${stage}` }),
      );
      expect(r.signal).toBe('SIGKILL');
      const text = readFileSync(file, 'utf8');
      expect([oldText, newText]).toContain(text);
      expect(JSON.parse(text).v).toBe(stage === 'renamed' ? 'new' : 'old');
    }
    // The temp files a crash leaves are cleaned when the catalog opens.
    expect(readdirSync(dir).some((n) => n.endsWith('.tmp'))).toBe(true);
    writeFileSync(file, JSON.stringify(emptyCatalog()));
    await Catalog.open(file);
    expect(readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('replaces the file in place when nothing crashes', async () => {
    const file = join(dir, 'a.json');
    await writeFileAtomic(file, '1');
    await writeFileAtomic(file, '2');
    expect(readFileSync(file, 'utf8')).toBe('2');
    expect(readdirSync(dir)).toEqual(['a.json']);
  });
});

describe('the data directory lock', () => {
  it('refuses a second process with "locked by pid N" and lets it in once the first has gone', async () => {
    const first = child('lock-child.ts', [dir]);
    expect(await firstLine(first)).toBe('opened ');
    const second = await exited(child('lock-child.ts', [dir]));
    expect(second.code).toBe(1);
    expect(second.out).toContain(`locked by pid ${first.pid}`);
    // In-process too.
    await expect(Store.open(dir)).rejects.toBeInstanceOf(StoreLockedError);
    first.stdin!.end();
    expect((await exited(first)).code).toBe(0);
    const store = await Store.open(dir);
    await store.close();
  });

  it('takes over the stale lock of a killed process', async () => {
    const first = child('lock-child.ts', [dir]);
    expect(await firstLine(first)).toBe('opened ');
    const pid = first.pid!;
    first.kill('SIGKILL');
    await exited(first);
    expect(readFileSync(join(dir, 'lock'), 'utf8').trim()).toBe(String(pid));
    const store = await Store.open(dir);
    expect(store.tookOverFrom).toBe(pid);
    expect(readFileSync(join(dir, 'lock'), 'utf8').trim()).toBe(String(process.pid));
    await store.close();
    expect(() => statSync(join(dir, 'lock'))).toThrow();
  });
});

describe('damaged store files are reported, never replaced', () => {
  const good = JSON.stringify({
    ...emptyCatalog(),
    flows: { f: { flow: { id: 'f' }, rev: 1, createdAt: '', updatedAt: '' } },
  });
  const cases: Array<[string, string | Buffer, string]> = [
    ['zero-length', '', 'empty-file'],
    ['BOM-prefixed', `\uFEFF${good}`, 'bom'],
    ['non-JSON', 'hello, world', 'not-json'],
    ['truncated', good.slice(0, good.length - 7), 'not-json'],
    ['torn (zeros)', Buffer.concat([Buffer.from(good.slice(0, 40)), Buffer.alloc(64)]), 'not-json'],
    ['wrong schema (array)', '[1,2,3]', 'wrong-schema'],
    ['wrong schema (other format)', JSON.stringify({ format: 'x', version: 1 }), 'wrong-schema'],
    [
      'wrong schema (run record)',
      JSON.stringify({ ...emptyCatalog(), runs: { r: { id: 'r' } } }),
      'wrong-schema',
    ],
  ];
  for (const [name, content, code] of cases) {
    it(`a ${name} catalog stops the store with ${code} and stays byte-identical`, async () => {
      const file = join(dir, 'catalog.json');
      writeFileSync(file, content);
      const before = readFileSync(file);
      const err = await Store.open(dir).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).code).toBe(code);
      expect((err as StoreError).message).toContain(file);
      expect(readFileSync(file).equals(before)).toBe(true);
      // The lock was released so the operator can retry after repairing.
      expect(() => statSync(join(dir, 'lock'))).toThrow();
    });
  }

  it('a damaged checkpoint log or run spec is reported with its path', async () => {
    const store = await Store.open(dir);
    const runDir = store.runDir('r1');
    store.openLog('r1');
    const cpFile = join(runDir, 'checkpoints.jsonl');
    // Empty is not damage: the file is created when the run starts, before its first checkpoint.
    writeFileSync(cpFile, '');
    expect(await store.readCheckpoint('r1')).toBeUndefined();
    for (const [content, code] of [
      ['{"version":1,"runId":"r1","flowId":"f","se', 'not-json'],
      ['{"version":1,"runId":"other","flowId":"f","seq":1,"data":{}}\n', 'wrong-schema'],
      ['not json\n', 'not-json'],
      ['\uFEFF{}\n', 'bom'],
    ] as const) {
      writeFileSync(cpFile, content);
      const err = await store.readCheckpoint('r1').catch((e: unknown) => e);
      expect((err as StoreError).code, content).toBe(code);
      expect((err as StoreError).message).toContain(cpFile);
      writeFileSync(join(runDir, 'run.json'), content);
      expect(((await store.readSpec('r1').catch((e: unknown) => e)) as StoreError).code).toBeDefined();
    }
    await store.close();
  });

  it('checkpoints append; the last complete one counts and a torn tail is skipped', async () => {
    const store = await Store.open(dir);
    store.openLog('r1');
    for (let seq = 1; seq <= 3; seq++)
      await store.writeCheckpoint({ version: 1, runId: 'r1', flowId: 'f', seq, data: { seq } });
    expect((await store.readCheckpoint('r1'))?.seq).toBe(3);
    const cpFile = join(store.runDir('r1'), 'checkpoints.jsonl');
    writeFileSync(
      cpFile,
      `${readFileSync(cpFile, 'utf8')}{"version":1,"runId":"r1","flowId":"f","seq":4,"da`,
    );
    expect((await store.readCheckpoint('r1'))?.seq).toBe(3);
    await store.close();
  });
});

describe('event logs', () => {
  it('appends in seq order, reopens, and cuts a torn tail record', async () => {
    const file = join(dir, 'events.jsonl');
    const { log } = EventLog.open(file, 'r');
    for (let i = 1; i <= 5; i++) log.append(ev('r', i));
    await log.close();
    writeFileSync(file, `${readFileSync(file, 'utf8')}{"runId":"r","seq":6,"ty`);
    const reopened = EventLog.open(file, 'r');
    expect(reopened.torn?.reason).toMatch(/torn/);
    expect(reopened.log.lastSeq).toBe(5);
    reopened.log.append(ev('r', 6));
    await reopened.log.close();
    expect(scanEventLog(file, 'r').events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(scanEventLog(file, 'r').torn).toBeUndefined();
  });

  it('treats a non-JSON last line as torn but a bad record before the tail as corruption', () => {
    const file = join(dir, 'events.jsonl');
    const lines = [1, 2, 3].map((s) => JSON.stringify(ev('r', s)));
    writeFileSync(file, `${lines.join('\n')}\n\0\0\0\0\n`);
    expect(scanEventLog(file, 'r').torn).toBeDefined();
    writeFileSync(file, `${lines[0]}\ngarbage\n${lines[2]}\n`);
    expect(() => scanEventLog(file, 'r')).toThrow(/line 2/);
    writeFileSync(file, `${lines[0]}\n${lines[2]}\n`);
    expect(() => scanEventLog(file, 'r')).toThrow(/seq 3 where 2 was expected/);
    writeFileSync(file, `\uFEFF${lines[0]}\n`);
    expect(() => scanEventLog(file, 'r')).toThrow(StoreError);
    writeFileSync(file, `${JSON.stringify(ev('other', 1))}\n${lines[1]}\n`);
    expect(() => scanEventLog(file, 'r')).toThrow(/belongs to run other/);
  });

  it('reads a batch per line and, from older logs, an event per line; a torn batch is cut whole, a damaged one is corruption', () => {
    const file = join(dir, 'events.jsonl');
    const [e1, e2, e3, e4, e5] = [1, 2, 3, 4, 5].map((n) => ev('r', n));
    // An older log (an event per line) continued with batches reads as one sequence.
    writeFileSync(file, `${JSON.stringify(e1)}\n${JSON.stringify([e2, e3])}\n${JSON.stringify([e4])}\n`);
    expect(scanEventLog(file, 'r').events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    // The last batch written halfway is cut whole: none of its events counts.
    const good = `${JSON.stringify([e1, e2])}\n`;
    writeFileSync(file, `${good}${JSON.stringify([e3, e4, e5]).slice(0, 40)}`);
    const torn = scanEventLog(file, 'r');
    expect(torn.events.map((e) => e.seq)).toEqual([1, 2]);
    expect(torn.goodBytes).toBe(Buffer.byteLength(good));
    expect(torn.torn?.reason).toMatch(/torn/);
    // A whole batch that is wrong is damage, reported with its line, never skipped.
    writeFileSync(file, `${JSON.stringify([e1, e3])}\n${JSON.stringify([e4])}\n`);
    expect(() => scanEventLog(file, 'r')).toThrow(/line 1: seq 3 where 2 was expected/);
    writeFileSync(file, `${JSON.stringify([e1, { seq: 2 }])}\n${JSON.stringify([e3])}\n`);
    expect(() => scanEventLog(file, 'r')).toThrow(/line 1: the record is not an event/);
    writeFileSync(file, `${JSON.stringify([e1])}\n[]\n${JSON.stringify([e2])}\n`);
    expect(() => scanEventLog(file, 'r')).toThrow(/line 2: the record is an empty batch/);
    writeFileSync(file, `${JSON.stringify([e1])}\n${JSON.stringify([e2, ev('other', 3)])}\n`);
    expect(() => scanEventLog(file, 'r')).toThrow(/belongs to run other/);
  });

  it('writes never wait for a sync; the log and checkpoint syncs run apart; events count once the log is synced', async () => {
    // Each fdatasync waits for its own release, in call order.
    const calls: Array<{ release: () => void }> = [];
    const syncData = (fd: number) =>
      new Promise<void>((resolve) => calls.push({ release: resolve })).then(() => fdatasyncAsync(fd));
    const store = await Store.open(join(dir, 'held'), { durability: 'fsync', syncData });
    const { log, commit } = store.openLog('r');
    const written: number[][] = [];
    const durable: number[][] = [];
    commit.onWritten = (events) => written.push(events.map((e) => e.seq));
    commit.onDurable = (events) => durable.push(events.map((e) => e.seq));
    const file = join(store.runDir('r'), 'events.jsonl');
    // A released sync still runs the real fdatasync (in the thread pool): wait for what it does.
    const soon = async (ok: () => boolean) => {
      for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 2));
    };

    for (let i = 1; i <= 3; i++) commit.append(ev('r', i));
    commit.checkpoint({ version: 1, runId: 'r', flowId: 'f', seq: 3, data: {} });
    commit.flush();
    expect(scanEventLog(file, 'r').events).toHaveLength(3);
    expect(written).toEqual([[1, 2, 3]]);
    // Nobody waits: the syncs wait a little for more writes to join them.
    expect(calls).toHaveLength(0);
    // What was handed over so far: the first turn's events and checkpoint. Someone waits for
    // it now: both syncs start at once (the log's, then the checkpoint file's).
    let firstDurable = false;
    void commit.durable().then(() => {
      firstDurable = true;
    });
    expect(calls).toHaveLength(2);

    // A second turn is written while both syncs run; no second sync of either starts meanwhile.
    for (let i = 4; i <= 5; i++) commit.append(ev('r', i));
    commit.flush();
    expect(scanEventLog(file, 'r').events).toHaveLength(5);
    expect(written).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
    expect(calls).toHaveLength(2);
    expect(log.after(0)).toEqual([]);
    let secondDurable = false;
    void commit.durable().then(() => {
      secondDurable = true;
    });

    // The log's sync ends: its events count (the checkpoint file's sync does not hold them back),
    // and the next log sync starts for what was written meanwhile.
    calls[0]!.release();
    await soon(() => calls.length === 3);
    expect(durable).toEqual([[1, 2, 3]]);
    expect(log.after(0).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(calls).toHaveLength(3);
    expect(firstDurable).toBe(false);

    // durable() waits for the checkpoint file's sync too, and then for the log's second one.
    calls[1]!.release();
    await soon(() => firstDurable);
    expect(firstDurable).toBe(true);
    expect(secondDurable).toBe(false);
    calls[2]!.release();
    await soon(() => secondDurable);
    expect(durable).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
    expect(secondDurable).toBe(true);
    await store.close();
  });

  it('syncs nobody waits for start within a short delay (log) or a longer one (checkpoint), at close at the latest', async () => {
    const synced: number[] = [];
    const syncData = (fd: number) => {
      synced.push(Date.now());
      return fdatasyncAsync(fd);
    };
    const store = await Store.open(join(dir, 'lazy'), { durability: 'fsync', syncData });
    const { log, commit } = store.openLog('r');
    commit.append(ev('r', 1));
    commit.checkpoint({ version: 1, runId: 'r', flowId: 'f', seq: 1, data: {} });
    const t0 = Date.now();
    commit.flush();
    expect(synced).toHaveLength(0);
    for (let i = 0; i < 100 && synced.length < 2; i++) await new Promise((r) => setTimeout(r, 5));
    expect(synced).toHaveLength(2);
    expect(synced[1]! - t0).toBeLessThan(500);
    expect(log.after(0).map((e) => e.seq)).toEqual([1]);
    // Written and not synced when the run closes: close syncs both, and its events count.
    commit.append(ev('r', 2));
    commit.checkpoint({ version: 1, runId: 'r', flowId: 'f', seq: 2, data: {} });
    commit.flush();
    await store.closeLog('r');
    expect(synced).toHaveLength(4);
    expect(log.after(0).map((e) => e.seq)).toEqual([1, 2]);
    await store.close();
  });

  it('one write per event-loop turn, log before checkpoint; nothing readable or published before it is durable', async () => {
    for (const durability of ['fsync', 'os'] as const) {
      const store = await Store.open(join(dir, durability), { durability });
      const { log, commit } = store.openLog('r');
      const batches: number[] = [];
      commit.onDurable = (events, lines) => {
        batches.push(events.length);
        // The lines as written: one JSON array per write, reused for the WebSocket frames.
        expect(Buffer.concat(lines.map((l) => l.bytes)).toString()).toBe(`${JSON.stringify(events)}\n`);
        expect(lines.map((l) => l.count)).toEqual([events.length]);
      };
      const file = join(store.runDir('r'), 'events.jsonl');
      const cpFile = join(store.runDir('r'), 'checkpoints.jsonl');
      for (let i = 1; i <= 10; i++) {
        commit.append(ev('r', i));
        if (i % 5 === 0) commit.checkpoint({ version: 1, runId: 'r', flowId: 'f', seq: i, data: {} });
      }
      expect(readFileSync(file, 'utf8')).toBe('');
      // Nothing is readable (and so nothing acknowledged) before it is durable.
      expect(log.after(0)).toEqual([]);
      const durable = commit.durable();
      await new Promise((r) => setImmediate(r));
      // Written at the end of the turn (with fsync, from the thread pool: by the time it is
      // durable): ten events, and only the last checkpoint of the turn.
      if (durability === 'fsync') await durable;
      // One line: a batch of ten.
      expect(readFileSync(file, 'utf8').split('\n').length).toBe(2);
      expect(scanEventLog(file, 'r').events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(
        readFileSync(cpFile, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l).seq),
      ).toEqual([10]);
      await durable;
      expect(batches).toEqual([10]);
      expect(log.after(7).map((e) => e.seq)).toEqual([8, 9, 10]);
      expect(log.after(0, 2).map((e) => e.seq)).toEqual([1, 2]);
      await store.close();
    }
  });

  it('one sync covers every turn written while the previous one ran', async () => {
    const store = await Store.open(dir);
    const { commit } = store.openLog('r');
    const batches: number[] = [];
    commit.onDurable = (events) => batches.push(events.length);
    let seq = 0;
    for (let turn = 0; turn < 20; turn++) {
      for (let i = 0; i < 3; i++) commit.append(ev('r', ++seq));
      commit.checkpoint({ version: 1, runId: 'r', flowId: 'f', seq, data: {} });
      commit.flush();
    }
    await commit.durable();
    // Far fewer syncs than turns, every event published once and in order.
    expect(batches.length).toBeLessThan(20);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(60);
    expect((await store.readCheckpoint('r'))?.seq).toBe(60);
    await store.close();
    expect(scanEventLog(join(dir, 'runs', 'r', 'events.jsonl'), 'r').events.length).toBe(60);
  });
});

describe('checkpoints after a power loss', () => {
  const cp = (seq: number) => ({ version: 1 as const, runId: 'r1', flowId: 'f', seq, data: { seq } });

  it('resume uses the last checkpoint the surviving log covers, not one written past it', async () => {
    // The checkpoint of seq 9 reached the disk but the log lines under it did not (they are
    // synced together, in the background): the reader steps back to the one of seq 6.
    const store = await Store.open(dir);
    const cpFile = join(store.runDir('r1'), 'checkpoints.jsonl');
    store.openLog('r1');
    writeFileSync(cpFile, [3, 6, 9].map((q) => `${JSON.stringify(cp(q))}\n`).join(''));
    expect((await store.readCheckpoint('r1'))?.seq).toBe(9);
    expect((await store.readCheckpoint('r1', 8))?.seq).toBe(6);
    expect((await store.readCheckpoint('r1', 6))?.seq).toBe(6);
    expect(await store.readCheckpoint('r1', 2)).toBeUndefined();
    // A torn tail is still skipped, and a damaged line that has to be read still throws.
    writeFileSync(cpFile, `${JSON.stringify(cp(3))}\nnot json\n${JSON.stringify(cp(9))}\n{"ver`);
    expect((await store.readCheckpoint('r1', 9))?.seq).toBe(9);
    await expect(store.readCheckpoint('r1', 8)).rejects.toMatchObject({ code: 'not-json' });
    await store.close();
  });

  it('a compaction keeps the last checkpoint synced with its log in front of the new one', async () => {
    const runDir = join(dir, 'r1');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(runDir);
    const cpFile = join(runDir, 'checkpoints.jsonl');
    const { log } = EventLog.open(join(runDir, 'events.jsonl'), 'r1');
    const commit = new GroupCommit(log, () => new CheckpointLog(cpFile, true, 600), true);
    const pad = 'x'.repeat(100);
    let seq = 0;
    for (let turn = 1; turn <= 12; turn++) {
      commit.append(ev('r1', ++seq));
      commit.checkpoint({ ...cp(seq), data: { pad } });
      commit.flush();
      // Every other turn waits for its sync, so some checkpoints are known durable.
      if (turn % 2 === 0) await commit.durable();
    }
    await commit.close();
    const seqs = readFileSync(cpFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).seq as number);
    // Compacted (far fewer than 12 lines), the newest last, a durable older one kept before it.
    expect(seqs.length).toBeLessThan(12);
    expect(seqs.at(-1)).toBe(12);
    expect(seqs.length).toBeGreaterThan(1);
    expect(readCheckpointLog(cpFile, checkCheckpoint('r1'), 11).checkpoint?.seq).toBeLessThan(12);
  });
});

describe('catalog', () => {
  it('coalesces concurrent saves and keeps the last data', async () => {
    const c = await Catalog.open(join(dir, 'catalog.json'));
    const saves: Promise<void>[] = [];
    for (let i = 0; i < 20; i++) {
      c.data.settings.n = i;
      saves.push(c.save());
    }
    await Promise.all(saves);
    expect(JSON.parse(readFileSync(join(dir, 'catalog.json'), 'utf8')).settings.n).toBe(19);
  });
});

describe('tool journal', () => {
  it('records intents and results and survives a torn tail', async () => {
    const file = join(dir, 'tools.jsonl');
    const j = ToolJournal.open(file);
    const a = await j.intent('count', 'h1', 0);
    await j.done(a.n, { content: 'ok', isError: false });
    await j.intent('count', 'h2', 3);
    j.close();
    writeFileSync(file, `${readFileSync(file, 'utf8')}{"k":"done","n":2,"res`);
    const j2 = ToolJournal.open(file);
    expect(j2.calls.map((c) => [c.intent.n, c.done?.result.content])).toEqual([
      [1, 'ok'],
      [2, undefined],
    ]);
    const b = await j2.intent('count', 'h3', 3);
    expect(b.n).toBe(3);
    j2.close();
    expect(ToolJournal.open(file).calls.length).toBe(3);
  });
});
