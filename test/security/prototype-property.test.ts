/**
 * Issue 13, part 2, the property: every entry point that takes an id or a name, driven with
 * `__proto__`, `constructor`, `prototype`, `toString` and `hasOwnProperty` in any order — REST
 * paths and bodies, a co-editing room (a real y-websocket client), the CLI (`validate`, `run`),
 * scripted and OpenAI-compatible model replies (the model name in the answer), MCP tool names (a
 * streamable-HTTP MCP server exposing a tool of that name), human node answers and run state keys.
 * After each step: `Object.prototype` (and the functions on it) is untouched, the reserved three
 * were refused with a named error or kept as ordinary keys, `toString` and `hasOwnProperty` work
 * as the ordinary names they are, and a known-good flow still validates and runs, in the engine
 * and through the server.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validate } from '@switchboard/nodes';
import type { Flow } from '@switchboard/schemas';
import { nodeToYMap, parts } from '@switchboard/schemas/ydoc';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebsocketProvider } from 'y-websocket';
import type * as Y from 'yjs';
import { agent, collectRun, edge, flow, node } from '../../runtime/src/engine/testing/index.js';
import { McpPool } from '../../runtime/src/mcp/pool.js';
import { TrustStore } from '../../runtime/src/mcp/trust.js';
import { makeOpenAIProvider } from '../../runtime/src/models/openai.js';
import {
  type FakeOpenAIServer,
  startFakeOpenAIServer,
} from '../../runtime/src/models/testing/fake-openai-server.js';
import { createServer, type SwitchboardServer } from '../../runtime/src/server/index.js';
import { createMcpToolHost } from '../../runtime/src/tools/mcp-host.js';
import { simpleFlow, until } from '../server/helpers.js';
import { cli } from '../support/cli.js';
import { enterRoom } from './helpers.js';
import { type NamedToolsServer, startNamedToolsServer } from './named-tools-mcp.js';
import { HOSTILE_NAMES, pollution, RESERVED_NAMES } from './pollution.js';

const reserved = (n: string) => (RESERVED_NAMES as readonly string[]).includes(n);
const work = mkdtempSync(join(tmpdir(), 'sb-proto-prop-'));
let s: SwitchboardServer;
let port: number;
let fake: FakeOpenAIServer;
let tools: NamedToolsServer;
let pool: McpPool;
const providers: WebsocketProvider[] = [];
let step = 0;

beforeAll(async () => {
  s = await createServer({
    dataDir: join(work, 'data'),
    editorDir: false,
    port: 0,
    rooms: { saveDelayMs: 60_000, saveMaxDelayMs: 60_000 },
  });
  ({ port } = await s.listen());
  fake = await startFakeOpenAIServer({ fallback: { text: 'from the endpoint' } });
  tools = await startNamedToolsServer(HOSTILE_NAMES);
  pool = new McpPool();
});
afterAll(async () => {
  for (const p of providers) p.destroy();
  await pool.close();
  await s.close();
  await fake.close();
  await tools.close();
  rmSync(work, { recursive: true, force: true });
});

const json = (method: string, url: string, body?: unknown) =>
  s.app.inject({
    method: method as 'GET',
    url,
    headers: {
      host: `127.0.0.1:${port}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });

/** start → <id> → end, the agent answering from the script. */
function withAgent(id: string, flowId = `f${++step}`): Flow {
  return {
    ...flow(
      [node('start', 'start'), agent(id), node('end', 'end')],
      [edge('start', id, 'handover', undefined, 'e1'), edge(id, 'end', 'handover', undefined, 'e2')],
      [{ fallback: true, text: 'ok' }],
    ),
    id: flowId,
    name: flowId,
  };
}

async function endOf(id: string) {
  return until(async () => {
    const r = (await json('GET', `/api/runs/${id}`)).json().run;
    return /completed|failed|cancelled|interrupted/.test(r.status) ? r : undefined;
  }, `run ${id} ends`);
}

function enter(room: string): Promise<Y.Doc> {
  return enterRoom(port, room, providers);
}

interface EntryPoint {
  what: string;
  drive(name: string): Promise<void>;
}

const ENTRY_POINTS: EntryPoint[] = [
  {
    what: 'REST paths: runs, events, commands, flows',
    async drive(name) {
      expect((await json('GET', `/api/runs/${name}`)).statusCode).toBe(404);
      expect((await json('GET', `/api/runs/${name}/events`)).statusCode).toBe(404);
      expect((await json('POST', `/api/runs/${name}/commands`, { type: 'pause' })).statusCode).toBe(404);
      // Never there (404), or deleted by an earlier step (410: a deleted id is remembered).
      expect([404, 410]).toContain((await json('GET', `/api/flows/${name}`)).statusCode);
      expect([404, 410]).toContain((await json('DELETE', `/api/flows/${name}`)).statusCode);
      if (reserved(name)) expect((await json('GET', `/api/flows/${name}`)).statusCode).toBe(404);
    },
  },
  {
    what: 'REST body: POST /api/runs {flowId}',
    async drive(name) {
      expect((await json('POST', '/api/runs', { flowId: name, input: 'x' })).statusCode).toBe(404);
    },
  },
  {
    what: 'REST: PUT /api/flows/<name> (the flow id)',
    async drive(name) {
      const r = await json('PUT', `/api/flows/${name}`, withAgent('writer', name));
      if (reserved(name)) {
        expect(r.statusCode).toBe(400);
        expect(r.body).toContain('reserved-id');
        return;
      }
      expect(r.statusCode, r.body).toBe(201);
      const run = await json('POST', '/api/runs', { flowId: name, input: 'x' });
      expect(run.statusCode).toBe(201);
      expect((await endOf(run.json().run.id)).status).toBe('completed');
      expect((await json('DELETE', `/api/flows/${name}`)).statusCode).toBe(204);
    },
  },
  {
    what: 'REST: an inline run whose agent has the id',
    async drive(name) {
      const r = await json('POST', '/api/runs', { flow: withAgent(name), input: 'x' });
      if (reserved(name)) {
        expect(r.statusCode).toBe(400);
        expect(r.body).toContain('reserved-id');
        return;
      }
      expect(r.statusCode, r.body).toBe(201);
      const run = await endOf(r.json().run.id);
      expect(run).toMatchObject({ status: 'completed', output: 'ok' });
    },
  },
  {
    what: 'a room: a co-editor adds a node with the id',
    async drive(name) {
      const id = `room${++step}`;
      expect((await json('PUT', `/api/flows/${id}`, withAgent('writer', id))).statusCode).toBe(201);
      const doc = await enter(id);
      doc.transact(() => {
        const p = parts(doc);
        p.nodes.set(name, nodeToYMap(agent(name)));
        p.nodeOrder.push([name]);
      });
      await until(() => parts(s.rooms.docOf(id)!).nodes.has(name), 'the node in the room');
      await s.rooms.flush(id);
      const rec = s.store.catalog.data.flows[id]!;
      if (reserved(name)) {
        expect(s.roomStore.statusOf(id)?.state).toBe('invalid');
        expect(rec.rev).toBe(1);
      } else {
        expect(s.roomStore.statusOf(id)?.state).toBe('saved');
        expect(rec.flow.nodes.map((n) => n.id)).toContain(name);
      }
    },
  },
  {
    what: 'the CLI: validate and run a flow file whose agent has the id',
    async drive(name) {
      const file = join(work, `cli-${++step}.json`);
      writeFileSync(file, JSON.stringify(withAgent(name)));
      const v = await cli('validate', file);
      const r = await cli('run', file, '--input', 'go', '--events', 'none');
      if (reserved(name)) {
        expect(v.code).not.toBe(0);
        expect(v.err).toContain('[reserved-id]');
        expect(r.code).not.toBe(0);
        expect(r.err).toContain('[reserved-id]');
      } else {
        expect(v.code, v.err).toBe(0);
        expect(r.code, r.err).toBe(0);
        expect(r.out).toContain('ok');
      }
    },
  },
  {
    what: 'a scripted model whose model name is the name (validation off for the reserved ones)',
    async drive(name) {
      const f = withAgent('writer');
      f.models = { default: { provider: 'scripted', model: name, script: [{ fallback: true, text: 'ok' }] } };
      expect(validate(f).errors.some((e) => e.code === 'reserved-id')).toBe(reserved(name));
      const { result } = await collectRun(f, 'go', { validate: !reserved(name) });
      expect(result).toMatchObject({ status: 'completed', output: 'ok' });
    },
  },
  {
    what: 'an OpenAI-compatible endpoint answering with the model name',
    async drive(name) {
      const f = withAgent('writer');
      f.models = { default: { provider: 'openai', model: 'm', baseURL: fake.url } };
      const p = makeOpenAIProvider(
        'default',
        { provider: 'openai', model: name, baseURL: fake.url, maxRetries: 0 },
        { resolveEnv: (v) => v },
        { allowLocalEndpoints: true },
      );
      let byModel: Record<string, unknown> = {};
      const { result } = await collectRun(f, 'go', {
        models: { default: p },
        checkpoint: (cp) => {
          byModel = (cp.data as { data: { counters: { byModel: Record<string, unknown> } } }).data.counters
            .byModel;
          return undefined;
        },
      });
      expect(result).toMatchObject({ status: 'completed', output: 'from the endpoint' });
      expect(fake.requests.at(-1)?.body?.model).toBe(name);
      expect(Object.hasOwn(byModel, name)).toBe(true);
    },
  },
  {
    what: 'an MCP server exposing a tool of that name',
    async drive(name) {
      const base = withAgent('writer');
      const f: Flow = {
        ...base,
        mcpServers: { x: { url: tools.url } },
        nodes: [...base.nodes, { id: 't', kind: 'tool', position: { x: 0, y: 0 }, config: { server: 'x' } }],
        edges: [...base.edges, { id: 'grant', kind: 'tools', source: 't', target: 'writer' }],
        models: {
          default: {
            provider: 'scripted',
            script: [
              { toolCalls: [{ name: `t__${name}`, args: { text: 'hi' } }] },
              { fallback: true, text: 'ok' },
            ],
          },
        },
      };
      const trust = new TrustStore(join(work, `trust-${++step}.json`));
      const host = createMcpToolHost(f, { pool, trust, outboundPolicy: { allowLoopback: true } });
      const { events, result } = await collectRun(f, 'go', { tools: host });
      expect(result).toMatchObject({ status: 'completed', output: 'ok' });
      expect(events.find((e) => e.type === 'tool.result')).toMatchObject({
        isError: false,
        result: `called ${name}`,
      });
      expect(tools.calls.at(-1)).toBe(name);
    },
  },
  {
    what: 'a human node with the id, answered by a host (validation off for the reserved ones)',
    async drive(name) {
      const f = flow(
        [node('start', 'start'), node(name, 'human', { mode: 'ask', question: 'ok?' }), node('end', 'end')],
        [edge('start', name, 'handover', undefined, 'e1'), edge(name, 'end', 'handover', undefined, 'e2')],
      );
      // Parsed, as an answers file is: a literal `__proto__` key would set the prototype instead.
      const answers = JSON.parse(`{${JSON.stringify(name)}: "yes"}`) as Record<string, string>;
      const { result } = await collectRun(f, 'go', {
        validate: !reserved(name),
        answers,
        humanInput: 'fail',
      });
      expect(result).toMatchObject({ status: 'completed', output: 'yes' });
    },
  },
  {
    what: 'run state: the state built-in setting the key',
    async drive(name) {
      const base = withAgent('writer');
      const f: Flow = {
        ...base,
        mcpServers: { st: { builtin: 'state' } },
        nodes: [...base.nodes, { id: 't', kind: 'tool', position: { x: 0, y: 0 }, config: { server: 'st' } }],
        edges: [...base.edges, { id: 'grant', kind: 'tools', source: 't', target: 'writer' }],
        models: {
          default: {
            provider: 'scripted',
            script: [
              { toolCalls: [{ name: 't__state_set', args: { key: name, value: { turns: 1 } } }] },
              { fallback: true, text: 'ok' },
            ],
          },
        },
      };
      const trust = new TrustStore(join(work, `trust-${++step}.json`));
      const host = createMcpToolHost(f, { pool, trust });
      const { events, result } = await collectRun(f, 'go', { tools: host });
      expect(result.status).toBe('completed');
      const r = events.find((e) => e.type === 'tool.result') as { isError?: boolean } | undefined;
      expect(r?.isError).toBe(reserved(name));
    },
  },
];

/** A known-good flow validates and runs, in the engine and through the server. */
async function goodFlowStillWorks(): Promise<void> {
  expect(validate(simpleFlow()).errors).toEqual([]);
  const { result } = await collectRun(simpleFlow(), 'go');
  expect(result).toMatchObject({ status: 'completed', output: 'the draft' });
}

describe('every entry point taking an id or a name, driven with prototype names', () => {
  it('keeps Object.prototype clean, refuses the reserved names, and a good flow still runs', {
    timeout: 600_000,
  }, async () => {
    // Every pair at least once (as examples), then random sequences of further steps.
    const examples = ENTRY_POINTS.flatMap((e) =>
      HOSTILE_NAMES.map((n) => [[{ e, n }]] as [Array<{ e: EntryPoint; n: string }>]),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ e: fc.constantFrom(...ENTRY_POINTS), n: fc.constantFrom(...HOSTILE_NAMES) }), {
          minLength: 1,
          maxLength: 3,
        }),
        async (steps) => {
          for (const { e, n } of steps) {
            try {
              await e.drive(n);
            } catch (err) {
              throw new Error(`${e.what} with ${JSON.stringify(n)}: ${(err as Error).message}`);
            }
            expect(pollution(), `${e.what} with ${JSON.stringify(n)}`).toEqual([]);
          }
          await goodFlowStillWorks();
        },
      ),
      { examples, numRuns: examples.length + 10, endOnFailure: true },
    );
    // And through the server, after all of it.
    expect((await json('PUT', '/api/flows/simple', simpleFlow())).statusCode).toBe(201);
    const run = await json('POST', '/api/runs', { flowId: 'simple', input: 'x' });
    expect(await endOf(run.json().run.id)).toMatchObject({ status: 'completed', output: 'the draft' });
    expect((await json('GET', '/api/health')).statusCode).toBe(200);
    expect(pollution()).toEqual([]);
  });
});
