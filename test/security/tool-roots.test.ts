/**
 * Issue 13, part 5: a built-in tool's root never reaches the run's own store. Before the fix, a
 * flow giving the `filesystem` or `documents` built-in `options.root: "."` saw `runs/<id>/`
 * itself: it could rewrite its `events.jsonl`, forge `tools.jsonl`, and `GET /api/runs/<id>/events`
 * answered 500 for good. Now such a root is refused with a named error, and the log stays intact.
 * A real server (its working directory a temp folder holding the data directory), real MCP
 * built-ins, real files.
 */
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownMcpPool } from '../../runtime/src/mcp/pool.js';
import { createServer, type SwitchboardServer } from '../../runtime/src/server/index.js';
import { createMcpToolHost } from '../../runtime/src/tools/mcp-host.js';
import { never, runContext, toolFlow } from '../fixtures/mcp/helpers.js';
import { until } from '../server/helpers.js';

const FORGED = 'FORGED-BY-THE-FLOW';

/** start → a1 → end; a1 is granted `server` (tool node t_x) and makes `calls`, then says done. */
function rootFlow(id: string, server: NonNullable<Flow['mcpServers']>[string], calls: unknown[]): Flow {
  const base = toolFlow({ x: server });
  return {
    ...base,
    id,
    name: id,
    models: {
      default: { provider: 'scripted', script: [{ toolCalls: calls }, { fallback: true, text: 'done' }] },
    },
    nodes: [
      { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
      ...base.nodes,
      { id: 'end', kind: 'end', position: { x: 0, y: 0 }, config: {} },
    ],
    edges: [
      ...base.edges,
      { id: 'e1', kind: 'handover', source: 'start', target: 'a1' },
      { id: 'e2', kind: 'handover', source: 'a1', target: 'end' },
    ],
  };
}

const ATTACKS: Array<[string, Flow]> = [
  [
    'filesystem, root ".": write events.jsonl and tools.jsonl, list the run folder',
    rootFlow('fs-dot', { builtin: 'filesystem', options: { root: '.' } }, [
      { name: 't_x__write_file', args: { path: 'events.jsonl', content: `${FORGED}\n` } },
      { name: 't_x__write_file', args: { path: 'tools.jsonl', content: `${FORGED}\n`, append: true } },
      { name: 't_x__list_directory', args: { path: '.' } },
    ]),
  ],
  [
    'filesystem, root "./": the same folder spelled differently',
    rootFlow('fs-dot-slash', { builtin: 'filesystem', options: { root: './' } }, [
      { name: 't_x__write_file', args: { path: 'events.jsonl', content: `${FORGED}\n` } },
    ]),
  ],
  [
    'documents, root ".": a document context in the run folder',
    rootFlow('docs-dot', { builtin: 'documents', options: { root: '.' } }, [
      { name: 't_x__initialize_document_context', args: { document_id: 'sections', title: FORGED } },
    ]),
  ],
];

describe('built-in roots through the server', () => {
  let work: string;
  let s: SwitchboardServer;
  let port: number;
  const cwd = process.cwd();
  beforeAll(async () => {
    work = realpathSync(mkdtempSync(join(tmpdir(), 'sb-roots-')));
    process.env.SWITCHBOARD_HOME = join(work, 'home');
    process.chdir(work);
    s = await createServer({ dataDir: 'data', editorDir: false, port: 0 });
    ({ port } = await s.listen());
  });
  afterAll(async () => {
    await s.close();
    await shutdownMcpPool();
    process.chdir(cwd);
    rmSync(work, { recursive: true, force: true });
  });
  const json = async (method: string, url: string, body?: unknown) =>
    s.app.inject({
      method: method as 'GET',
      url,
      headers: {
        host: `127.0.0.1:${port}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });

  it.each(ATTACKS)('%s: refused by name, the event log intact', async (_what, flow) => {
    const start = await json('POST', '/api/runs', { flow, input: 'go' });
    expect(start.statusCode, start.body).toBe(201);
    const id: string = start.json().run.id;
    // The events endpoint keeps answering, up to the run's end, with a contiguous log.
    const events = await until(async () => {
      const ev = await json('GET', `/api/runs/${id}/events`);
      expect(ev.statusCode, ev.body).toBe(200);
      const list = ev.json().events as RunEvent[];
      return /^run\.(completed|failed|cancelled|interrupted)$/.test(list.at(-1)?.type ?? '')
        ? list
        : undefined;
    }, `run ${id} ends in its log`);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const runDir = join(work, 'data', 'runs', id);
    // Every line of the store's files is still a record the store wrote (the forged text shows
    // up only inside the recorded tool arguments).
    for (const f of ['events.jsonl', 'tools.jsonl']) {
      const lines = readFileSync(join(runDir, f), 'utf8')
        .split('\n')
        .filter((l) => l !== '');
      for (const l of lines) expect(() => JSON.parse(l), `${f}: ${l.slice(0, 80)}`).not.toThrow();
    }
    expect(readdirSync(runDir).sort()).not.toContain('sections');
    // Every tool call was refused with the named error, and none listed the store's files.
    const results = events.filter((e) => e.type === 'tool.result') as Array<RunEvent & { result?: unknown }>;
    expect(results.length).toBeGreaterThan(0);
    for (const r of results) {
      const text = JSON.stringify(r);
      expect(text).toMatch(/mcp\.root-refused|the run's own store/);
      expect(text).not.toMatch(/checkpoints\.jsonl|run\.json/);
    }
    // The server still answers, and the run can be read again.
    expect((await json('GET', `/api/runs/${id}/events`)).statusCode).toBe(200);
  });
});

describe('built-in roots through the tool host', () => {
  it('an operator root that contains the run folder is refused too', async () => {
    const work = realpathSync(mkdtempSync(join(tmpdir(), 'sb-roots-host-')));
    try {
      const flow = toolFlow({ fs: { builtin: 'filesystem', options: { root: work } } });
      const host = createMcpToolHost(flow, { allowedRoots: [work] });
      const rc = runContext('run1', join(work, 'data', 'runs', 'run1'));
      const tools = await host.toolsFor('a1', rc.ctx);
      const list = tools.find((t) => t.name === 't_fs__list_directory')!;
      const r = await list.call({ path: '.' }, { signal: never });
      expect(r.isError).toBe(true);
      expect(JSON.stringify(r)).toMatch(/root-refused|the run's own store/);
      // A root beside the run folder, as the operator allowed, still works.
      const ok = toolFlow({ fs: { builtin: 'filesystem', options: { root: join(work, 'shared') } } });
      const host2 = createMcpToolHost(ok, { allowedRoots: [join(work, 'shared')] });
      const tools2 = await host2.toolsFor('a1', runContext('run2', join(work, 'data', 'runs', 'run2')).ctx);
      const r2 = await tools2
        .find((t) => t.name === 't_fs__write_file')!
        .call({ path: 'a.txt', content: 'x' }, { signal: never });
      expect(r2.isError, JSON.stringify(r2)).toBe(false);
    } finally {
      await shutdownMcpPool();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
