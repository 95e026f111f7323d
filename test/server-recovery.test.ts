import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import { agent, edge, flow, MemoryToolHost, node } from '../runtime/src/engine/testing/index.js';
import { createServer, journaledTools, journalState, MAYBE_EXECUTED } from '../runtime/src/server/index.js';
import { StoreError } from '../runtime/src/store/errors.js';
import { scanEventLog } from '../runtime/src/store/event-log.js';
import { ToolJournal } from '../runtime/src/store/tool-journal.js';
import { batteryFlow, countingTools, FINAL_OUTPUT, parallelSlowFlow, slowReply } from './crash/fixture.js';
import { slowChain, tempDir, until } from './server/helpers.js';
import { cli } from './support/cli.js';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function dataDir(): string {
  const t = tempDir('sb-recovery-');
  cleanups.push(t.cleanup);
  return t.dir;
}

async function server(dir: string) {
  const s = await createServer({ dataDir: dir, editorDir: false });
  cleanups.push(() => s.close());
  return s;
}

/** Starts a slow run and stops the server after its `n`-th checkpoint, leaving it `running`. */
async function leaveRunning(dir: string, checkpoints: number): Promise<string> {
  const s = await createServer({ dataDir: dir, editorDir: false });
  const rec = await s.runs.start({ flow: slowChain('slow', 8, 30), input: 'go', source: 'api' });
  await until(() => {
    try {
      const log = readFileSync(join(dir, 'runs', rec.id, 'events.jsonl'), 'utf8');
      return (log.match(/"turn\.completed"/g) ?? []).length >= checkpoints;
    } catch {
      return false;
    }
  }, 'checkpoints');
  await s.close();
  expect(s.store.catalog.data.runs[rec.id]!.status).toBe('running');
  return rec.id;
}

describe('start-up with damaged store files', () => {
  for (const [name, content] of [
    ['zero-length', ''],
    ['truncated', '{"format":"switchboard-catalog","version":1,"flows":{'],
    ['BOM-prefixed', '\uFEFF{"format":"switchboard-catalog","version":1,"flows":{},"runs":{},"settings":{}}'],
    ['non-JSON', 'not json at all'],
    ['wrong-schema', '{"format":"switchboard-catalog","version":1,"flows":[],"runs":{},"settings":{}}'],
  ] as const) {
    it(`refuses a ${name} catalog loudly and leaves it as it was`, async () => {
      const dir = dataDir();
      writeFileSync(join(dir, 'catalog.json'), content);
      await expect(createServer({ dataDir: dir, editorDir: false })).rejects.toBeInstanceOf(StoreError);
      const r = await cli('serve', '--port', '0', '--data', dir);
      expect(r.code).toBe(1);
      expect(r.err).toContain('the data directory is damaged');
      expect(r.err).toContain(join(dir, 'catalog.json'));
      expect(readFileSync(join(dir, 'catalog.json'), 'utf8')).toBe(content);
    });
  }
});

describe('crash recovery', () => {
  it('cuts a torn tail record and resumes the run with seq continuing', async () => {
    const dir = dataDir();
    const id = await leaveRunning(dir, 2);
    const logFile = join(dir, 'runs', id, 'events.jsonl');
    const before = scanEventLog(logFile, id).events;
    appendFileSync(logFile, `{"runId":"${id}","seq":${before.length + 1},"type":"mod`);
    const s = await server(dir);
    expect(s.recovered.resumed).toEqual([id]);
    await until(() => s.store.catalog.data.runs[id]!.status === 'completed', 'completed');
    await until(() => !s.runs.isLive(id), 'settled');
    const events = scanEventLog(logFile, id).events;
    expect(events.slice(0, before.length)).toEqual(before);
    expect(events[before.length]).toMatchObject({
      type: 'run.resumed',
      fromCheckpoint: true,
      seq: before.length + 1,
    });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(s.store.catalog.data.runs[id]).toMatchObject({ output: 'ok', resumes: 1 });
  });

  it('marks a run interrupted when its checkpoint is damaged, reporting the file and keeping it', async () => {
    const dir = dataDir();
    const id = await leaveRunning(dir, 1);
    const cpFile = join(dir, 'runs', id, 'checkpoints.jsonl');
    writeFileSync(cpFile, '{"version":1,"runId":');
    const s = await server(dir);
    expect(s.recovered.interrupted).toEqual([id]);
    const rec = s.store.catalog.data.runs[id]!;
    expect(rec.status).toBe('interrupted');
    expect(rec.error!.message).toContain(cpFile);
    expect(readFileSync(cpFile, 'utf8')).toBe('{"version":1,"runId":');
    const last = scanEventLog(join(dir, 'runs', id, 'events.jsonl'), id).events.at(-1);
    expect(last).toMatchObject({ type: 'run.interrupted' });
  });

  it('marks a run interrupted when the process stopped before its first checkpoint', async () => {
    const dir = dataDir();
    const id = await leaveRunning(dir, 1);
    const { rmSync } = await import('node:fs');
    rmSync(join(dir, 'runs', id, 'checkpoints.jsonl'));
    const s = await server(dir);
    expect(s.recovered.interrupted).toEqual([id]);
    expect(s.store.catalog.data.runs[id]!.error!.message).toMatch(/before the first checkpoint/);
  });

  it('trusts the log over the index: a run whose final event was written is not resumed', async () => {
    const dir = dataDir();
    const s1 = await createServer({ dataDir: dir, editorDir: false });
    const rec = await s1.runs.start({ flow: slowChain('quick', 2, 1), input: 'go', source: 'api' });
    await until(() => !s1.runs.isLive(rec.id), 'done');
    await s1.close();
    // The process died after the log write but before the index write.
    const catalog = JSON.parse(readFileSync(join(dir, 'catalog.json'), 'utf8'));
    catalog.runs[rec.id].status = 'running';
    writeFileSync(join(dir, 'catalog.json'), JSON.stringify(catalog));
    const s = await server(dir);
    expect(s.recovered.final).toEqual([rec.id]);
    expect(s.store.catalog.data.runs[rec.id]).toMatchObject({ status: 'completed', output: 'ok' });
  });

  it('`switchboard resume RUN` continues a run headless and prints its result', async () => {
    const dir = dataDir();
    const id = await leaveRunning(dir, 2);
    const r = await cli('resume', id, '--data', dir);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toBe(`${id}: completed: "ok"\n`);
    const again = await cli('resume', id, '--data', dir);
    expect(again.out).toContain('already completed');
    expect((await cli('resume', 'r_nope', '--data', dir)).code).toBe(1);
  });
});

describe('tool calls across a crash', () => {
  it('replays a finished call from the journal and answers maybe-executed for one in flight, never calling again', async () => {
    const dir = dataDir();
    const file = join(dir, 'tools.jsonl');
    const journal = ToolJournal.open(file);
    // The previous process: after checkpoint seq 7 it completed `count {k:a}` and was killed in `count {k:b}`.
    const { argsHash } = await import('../runtime/src/server/journaled-tools.js');
    const a = await journal.intent('count', argsHash({ k: 'a' }), 7);
    await journal.done(a.n, { content: 'counted a', isError: false });
    await journal.intent('count', argsHash({ k: 'b' }), 7);
    journal.close();

    const flow = batteryFlow();
    const executed: string[] = [];
    const inner = new MemoryToolHost(flow, {
      fixture: {
        count: {
          run: (args) => {
            executed.push(String(args.k));
            return `counted ${String(args.k)}`;
          },
        },
      },
    });
    const reopened = ToolJournal.open(file);
    cleanups.push(() => reopened.close());
    const host = journaledTools(inner, journalState(reopened, 7));
    const logs: string[] = [];
    const ctx = {
      runId: 'r',
      state: { get: () => undefined, set: () => {}, snapshot: () => ({}) },
      signal: new AbortController().signal,
      emit: (e: { type: string; text?: string }) => void logs.push(e.text ?? ''),
    };
    const [tool] = await host.toolsFor('planner', ctx);
    const opts = { signal: ctx.signal };
    expect(await tool!.call({ k: 'a' }, opts)).toEqual({ content: 'counted a', isError: false });
    const maybe = await tool!.call({ k: 'b' }, opts);
    expect(maybe.isError).toBe(true);
    expect(maybe.content).toMatch(new RegExp(`^${MAYBE_EXECUTED}`));
    expect(logs[0]).toMatch(/maybe-executed: tool count/);
    expect(executed).toEqual([]);
    // A new call (not a replay) runs and is journaled.
    expect(await tool!.call({ k: 'c' }, opts)).toEqual({ content: 'counted c', isError: false });
    expect(executed).toEqual(['c']);
    expect(ToolJournal.open(file).calls.map((c) => [c.intent.n, !!c.done])).toEqual([
      [1, true],
      [2, false],
      [3, true],
    ]);
  });

  it('a call is journaled only once the checkpoint it names is durable', async () => {
    const dir = dataDir();
    const file = join(dir, 'tools.jsonl');
    const journal = ToolJournal.open(file);
    cleanups.push(() => journal.close());
    const executed: string[] = [];
    const inner = new MemoryToolHost(batteryFlow(), {
      fixture: {
        count: {
          run: (args) => {
            executed.push(String(args.k));
            return 'counted';
          },
        },
      },
    });
    const st = journalState(journal, undefined);
    st.checkpointSeq = 5;
    let release!: () => void;
    st.durable = () =>
      new Promise<void>((r) => {
        release = r;
      });
    const ctx = {
      runId: 'r',
      state: { get: () => undefined, set: () => {}, snapshot: () => ({}) },
      signal: new AbortController().signal,
    };
    const [tool] = await journaledTools(inner, st).toolsFor('planner', ctx);
    const call = tool!.call({ k: 'x' }, { signal: ctx.signal });
    await new Promise((r) => setTimeout(r, 30));
    expect(executed).toEqual([]);
    expect(readFileSync(file, 'utf8')).toBe('');
    release();
    await call;
    expect(executed).toEqual(['x']);
    expect(ToolJournal.open(file).calls.map((c) => c.intent.cp)).toEqual([5]);
  });

  it('a call in flight after turns that needed no I/O is replayed from the journal after a restart, not repeated', async () => {
    const dir = dataDir();
    // start → q1 … q20 (scripted, no latency: no turn waits for anything) → caller (calls
    // `count`, which hangs in the first process) → end. The quick turns are not checkpointed
    // one by one, so the resumed run replays them before it reaches the call again.
    const nodes = [node('start', 'start')];
    const edges = [];
    let prev = 'start';
    for (let i = 1; i <= 20; i++) {
      nodes.push(agent(`q${i}`));
      edges.push(edge(prev, `q${i}`));
      prev = `q${i}`;
    }
    nodes.push(agent('caller'), node('t', 'tool', { server: 'fixture' }), node('end', 'end'));
    edges.push(edge(prev, 'caller'), edge('caller', 'end'), edge('t', 'caller', 'tools'));
    const f: Flow = {
      ...flow(
        nodes,
        edges,
        [
          { node: 'caller', toolCalls: [{ name: 'count', args: { k: 'once' } }] },
          { node: 'caller', text: 'done' },
          { fallback: true, text: 'ok' },
        ],
        { mcpServers: { fixture: { builtin: 'state' } } },
      ),
      id: 'quick-then-tool',
      name: 'quick then tool',
    };
    const executed: string[] = [];
    let hang = true;
    const tools = ({ flow: fl }: { flow: Flow }) =>
      new MemoryToolHost(fl, {
        fixture: {
          count: {
            run: async (args) => {
              executed.push(String(args.k));
              if (hang) await new Promise(() => {});
              return 'counted';
            },
          },
        },
      });
    // A long slice: however slow this machine, the quick turns all run in one go.
    const s1 = await createServer({
      dataDir: dir,
      editorDir: false,
      runs: { tools, slice: { ms: 60_000, events: Number.POSITIVE_INFINITY } },
    });
    const rec = await s1.runs.start({ flow: f, input: 'go', source: 'api' });
    const runDir = join(dir, 'runs', rec.id);
    await until(() => executed.length === 1, 'the call to start');
    await s1.close();
    // One checkpoint (the process's first): the call names it, 20 turns before the call.
    expect(readFileSync(join(runDir, 'checkpoints.jsonl'), 'utf8').trim().split('\n')).toHaveLength(1);
    hang = false;
    const s2 = await createServer({ dataDir: dir, editorDir: false, runs: { tools } });
    cleanups.push(() => s2.close());
    expect(s2.recovered.resumed).toEqual([rec.id]);
    await until(() => !s2.runs.isLive(rec.id), 'the resumed run to end');
    expect(s2.store.catalog.data.runs[rec.id]).toMatchObject({ status: 'completed', output: 'done' });
    expect(executed).toEqual(['once']);
    const events = scanEventLog(join(runDir, 'events.jsonl'), rec.id).events;
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const maybe = events.filter(
      (e) => e.type === 'log' && String((e as { text?: string }).text).startsWith(MAYBE_EXECUTED),
    );
    expect(maybe).toHaveLength(1);
  });
});

describe('a pause inside a turn, then a restart', () => {
  // Call 1: the planner's call that asks for its tool; 4: alice's reply after her tool ran. The
  // pause holds the run inside the turn; a checkpoint taken there once held the script served
  // past the turn the restarted server replays (planner's tool skipped, model_script_exhausted).
  for (const k of [1, 4])
    it(`paused during model call ${k}, the server restarted: paused again, then it completes with each reply and tool call once`, async () => {
      const dir = dataDir();
      const counter = join(dir, 'count.txt');
      const tools = countingTools(counter, 4);
      const s1 = await createServer({ dataDir: dir, editorDir: false, runs: { tools } });
      const rec = await s1.runs.start({ flow: slowReply(20, k, 3000), input: 'go', source: 'api' });
      const requests = () => s1.store.readEvents(rec.id).filter((e) => e.type === 'model.request').length;
      await until(() => requests() >= k, `model call ${k}`);
      expect(requests()).toBe(k);
      s1.runs.command(rec.id, { type: 'pause' });
      await until(() => s1.store.catalog.data.runs[rec.id]?.status === 'paused', 'the pause');
      expect(requests()).toBe(k);
      await s1.close();

      const s2 = await createServer({ dataDir: dir, editorDir: false, runs: { tools } });
      cleanups.push(() => s2.close());
      expect(s2.recovered.resumed).toEqual([rec.id]);
      await new Promise((r) => setTimeout(r, 300));
      expect(s2.store.catalog.data.runs[rec.id]?.status).toBe('paused');
      s2.runs.command(rec.id, { type: 'resume' });
      const done = await s2.runs.settled(rec.id);
      expect(done, JSON.stringify(done?.error)).toMatchObject({ status: 'completed', output: FINAL_OUTPUT });
      const events = s2.store.readEvents(rec.id);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.type === 'model.request' && !e.replayed)).toHaveLength(9);
      const lines = readFileSync(counter, 'utf8').trim().split('\n');
      expect(lines.sort()).toEqual([`${rec.id} alice`, `${rec.id} closer`, `${rec.id} planner`]);
    });

  it('restarted again while the resumed run replays that turn: the journal still answers its tool call', async () => {
    const dir = dataDir();
    const counter = join(dir, 'count.txt');
    const tools = countingTools(counter, 4);
    const requests = (s: { store: { readEvents(id: string): Array<{ type: string }> } }, id: string) =>
      s.store.readEvents(id).filter((e) => e.type === 'model.request').length;
    const s1 = await createServer({ dataDir: dir, editorDir: false, runs: { tools } });
    // Call 4 (alice's reply after her tool ran) takes 3 s each time it is asked for.
    const rec = await s1.runs.start({ flow: slowReply(20, 4, 3000), input: 'go', source: 'api' });
    await until(() => requests(s1, rec.id) >= 4, 'model call 4');
    s1.runs.command(rec.id, { type: 'pause' });
    await until(() => s1.store.catalog.data.runs[rec.id]?.status === 'paused', 'the pause');
    await s1.close();

    // Paused again at the step before alice's turn, then resumed: her turn replays, her tool
    // call is answered from the journal, and the process stops during her (slow) reply.
    const s2 = await createServer({ dataDir: dir, editorDir: false, runs: { tools } });
    await until(() => s2.store.catalog.data.runs[rec.id]?.status === 'paused', 'paused again');
    s2.runs.command(rec.id, { type: 'resume' });
    await until(() => requests(s2, rec.id) >= 6, 'the replayed call 4');
    await s2.close();

    const s3 = await createServer({ dataDir: dir, editorDir: false, runs: { tools } });
    cleanups.push(() => s3.close());
    const done = await s3.runs.settled(rec.id);
    expect(done, JSON.stringify(done?.error)).toMatchObject({ status: 'completed', output: FINAL_OUTPUT });
    const events = s3.store.readEvents(rec.id);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === 'model.request' && !e.replayed)).toHaveLength(9);
    const lines = readFileSync(counter, 'utf8').trim().split('\n');
    expect(lines.sort()).toEqual([`${rec.id} alice`, `${rec.id} closer`, `${rec.id} planner`]);
  });
});

describe('parallel branches, then a restart', () => {
  it("one branch's turn ends inside another's model call, the server restarts: each reply and tool call once", async () => {
    const dir = dataDir();
    const counter = join(dir, 'count.txt');
    const tools = countingTools(counter, 4);
    // p1 calls its tool, then its reply takes 3 s; p2 calls its tool and replies meanwhile.
    const f = parallelSlowFlow(3000);
    const s1 = await createServer({ dataDir: dir, editorDir: false, runs: { tools } });
    const rec = await s1.runs.start({ flow: f, input: 'go', source: 'api' });
    const ended = (id: string) =>
      s1.store.readEvents(rec.id).some((e) => e.type === 'turn.completed' && e.nodeId === id);
    await until(() => ended('p2'), "p2's turn");
    // Long enough for a checkpoint cut after p2's turn to reach the disk; p1's reply is still out.
    await new Promise((r) => setTimeout(r, 200));
    expect(ended('p1')).toBe(false);
    await s1.close();
    expect(s1.store.catalog.data.runs[rec.id]!.status).toBe('running');

    const s2 = await createServer({ dataDir: dir, editorDir: false, runs: { tools } });
    cleanups.push(() => s2.close());
    expect(s2.recovered.resumed).toEqual([rec.id]);
    const done = await s2.runs.settled(rec.id);
    expect(done, JSON.stringify(done?.error)).toMatchObject({ status: 'completed', output: 'joined' });
    const events = s2.store.readEvents(rec.id);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === 'model.request' && !e.replayed)).toHaveLength(5);
    const lines = readFileSync(counter, 'utf8').trim().split('\n');
    expect(lines.sort()).toEqual([`${rec.id} p1`, `${rec.id} p2`]);
  });
});
