/**
 * Pins over REST: stored per flow in the data directory (not in the flow document), validated
 * with errors that name what and where, sent to the editors watching the flow, and used by the
 * runs the server starts (unless `"pins": false`).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { agent, edge, flow, node } from '../../runtime/src/engine/testing/index.js';
import { testServer, until } from '../server/helpers.js';

/** start → writer → d (llm decider) → a | b → end */
function routed(id: string, script: unknown[], writerPrompt = 'You write. {{task}}'): Flow {
  return {
    ...flow(
      [
        node('start', 'start'),
        agent('writer', { prompt: [{ text: writerPrompt }] }),
        node('d', 'decider', { strategy: 'llm', prompt: 'Route it.' }),
        agent('a'),
        agent('b'),
        node('end', 'end'),
      ],
      [
        edge('start', 'writer'),
        edge('writer', 'd'),
        edge('d', 'a', 'handover', { description: 'drafts' }, 'to-a'),
        edge('d', 'b', 'handover', { description: 'reviews' }, 'to-b'),
        edge('a', 'end'),
        edge('b', 'end'),
      ],
      script,
    ),
    id,
    name: id,
  };
}
const PAST = [
  { node: 'writer', text: 'draft one' },
  { node: 'd', json: { choice: 'to-b', reason: 'needs review' } },
  { node: 'b', text: 'from b' },
  { fallback: true, text: 'from a' },
];
const LIVE = [
  { node: 'writer', text: 'draft TWO' },
  { node: 'd', json: { choice: 'to-a', reason: 'fine' } },
  { node: 'b', text: 'from b' },
  { fallback: true, text: 'from a' },
];

type Server = Awaited<ReturnType<typeof testServer>>;
let s: Server;
let base: string;
let port: number;
const json = { 'content-type': 'application/json' };

async function run(body: Record<string, unknown>): Promise<{ id: string; events: RunEvent[] }> {
  const r = await s.req({
    method: 'POST',
    url: '/api/runs',
    headers: json,
    payload: JSON.stringify({ input: 'go', ...body }),
  });
  expect(r.statusCode, r.body).toBe(201);
  const id = r.json().run.id as string;
  await s.runs.settled(id);
  const events = (await s.req({ method: 'GET', url: `/api/runs/${id}/events?limit=10000` })).json().events;
  return { id, events };
}
const put = (flowId: string, nodeId: string, body: unknown) =>
  s.req({
    method: 'PUT',
    url: `/api/flows/${flowId}/pins/${nodeId}`,
    headers: json,
    payload: JSON.stringify(body),
  });
const saveFlow = (f: Flow) =>
  s.req({ method: 'PUT', url: `/api/flows/${f.id}`, headers: json, payload: JSON.stringify(f) });

let past: string;
let otherRun: string;
beforeAll(async () => {
  s = await testServer({ port: 0 });
  ({ url: base, port } = await s.listen());
  // Listening on a port of its own: requests name that host.
  const inject = s.req;
  s.req = (o) => inject({ ...o, headers: { ...(o.headers ?? {}), host: `127.0.0.1:${port}` } });
  expect((await saveFlow(routed('doc', PAST))).statusCode).toBeLessThan(300);
  expect((await saveFlow(routed('other', PAST))).statusCode).toBeLessThan(300);
  past = (await run({ flowId: 'doc' })).id;
  otherRun = (await run({ flowId: 'other' })).id;
  // From now on the flow's script says something else: only pins bring the past back.
  expect((await saveFlow(routed('doc', LIVE))).statusCode).toBeLessThan(300);
}, 60_000);
afterAll(async () => {
  await s.close();
});

describe('pins over REST', () => {
  it('PUT pins a node from a run of the flow; editors watching the flow hear of it; runs use it', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/ws`, { origin: `http://127.0.0.1:${port}` });
    const heard: Array<{ type: string; flowId?: string; pins?: Array<{ nodeId: string }> }> = [];
    ws.on('message', (d) => heard.push(JSON.parse(String(d))));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'subscribe', flowId: 'doc', after: {} }));
    await until(() => heard.some((m) => m.type === 'subscribed'), 'the subscription');

    let r = await put('doc', 'writer', { fromRun: past });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().pin).toMatchObject({
      nodeId: 'writer',
      fromRun: past,
      fromTurn: 1,
      stale: false,
      outcome: { message: { content: 'draft one' } },
    });
    r = await put('doc', 'd', { fromRun: past, turn: 1 });
    expect(r.statusCode, r.body).toBe(200);
    await until(() => heard.filter((m) => m.type === 'pins').length === 2, 'two pins messages');
    expect(heard.filter((m) => m.type === 'pins').at(-1)).toMatchObject({
      flowId: 'doc',
      pins: [{ nodeId: 'writer' }, { nodeId: 'd' }],
    });
    ws.close();

    const list = (await s.req({ method: 'GET', url: '/api/flows/doc/pins' })).json().pins;
    expect(list.map((p: { nodeId: string }) => p.nodeId)).toEqual(['writer', 'd']);
    // Beside the flow, not in it.
    const doc = (await s.req({ method: 'GET', url: '/api/flows/doc' })).json();
    expect(JSON.stringify(doc)).not.toContain(past);
    expect(readdirSync(join(s.dir, 'pins'))).toHaveLength(1);

    const pinned = await run({ flowId: 'doc' });
    expect(pinned.events.filter((e) => e.type === 'model.request').map((e) => e.nodeId)).toEqual(['b']);
    expect(pinned.events.filter((e) => e.type === 'node.pinned')).toEqual([
      expect.objectContaining({ nodeId: 'writer', fromRun: past, fromTurn: 1 }),
      expect.objectContaining({ nodeId: 'd', fromRun: past, fromTurn: 1 }),
    ]);
    expect(pinned.events.at(-1)).toMatchObject({ type: 'run.completed', output: 'from b' });

    // An inline flow (as the editor sends it) with that id uses them too; "pins": false runs live.
    expect((await run({ flow: routed('doc', LIVE) })).events.at(-1)).toMatchObject({ output: 'from b' });
    const live = await run({ flowId: 'doc', pins: false });
    expect(live.events.some((e) => e.type === 'node.pinned')).toBe(false);
    expect(live.events.at(-1)).toMatchObject({ type: 'run.completed', output: 'from a' });

    // An edited node shows its pin as stale; the pin still applies.
    expect((await saveFlow(routed('doc', LIVE, 'You are a NEW writer. {{task}}'))).statusCode).toBeLessThan(
      300,
    );
    const views = (await s.req({ method: 'GET', url: '/api/flows/doc/pins' })).json().pins;
    expect(views.find((p: { nodeId: string }) => p.nodeId === 'writer').stale).toBe(true);
    const stale = await run({ flowId: 'doc' });
    expect(stale.events.find((e) => e.type === 'node.pinned' && e.nodeId === 'writer')).toMatchObject({
      stale: true,
    });

    expect((await s.req({ method: 'DELETE', url: '/api/flows/doc/pins/writer' })).statusCode).toBe(200);
    expect((await s.req({ method: 'DELETE', url: '/api/flows/doc/pins/d' })).statusCode).toBe(200);
    expect((await s.req({ method: 'GET', url: '/api/flows/doc/pins' })).json().pins).toEqual([]);
    expect((await run({ flowId: 'doc' })).events.some((e) => e.type === 'node.pinned')).toBe(false);

    // A fork of the pinned run keeps that run's pins upstream (it made no model call for them).
    const fork = await run({ flowId: 'doc', fromRun: pinned.id, at: 'b' });
    expect(fork.events.at(-1)).toMatchObject({ type: 'run.completed', output: 'from b' });
    expect(fork.events.filter((e) => e.type === 'node.pinned').map((e) => e.nodeId)).toEqual(['writer', 'd']);
  });

  it('refuses bad pins with errors that name what and where', async () => {
    const cases: Array<[string, string, unknown, number, string]> = [
      ['nope', 'writer', { fromRun: past }, 400, `is a run of flow "doc", not of "nope"`],
      ['doc', 'ghost', { fromRun: past }, 400, 'flow doc has no node "ghost"'],
      ['doc', '__proto__', { fromRun: past }, 400, '"__proto__" is not a usable node id'],
      ['doc', 'constructor', { fromRun: past }, 400, 'not a usable node id'],
      ['doc', 'writer', { fromRun: '../../etc' }, 400, 'is not a run id'],
      ['doc', 'writer', { fromRun: 'run-nope' }, 404, 'no run run-nope'],
      ['doc', 'writer', { fromRun: otherRun }, 400, `run ${otherRun} is a run of flow "other", not of "doc"`],
      ['doc', 'a', { fromRun: past }, 400, `node "a" did not run in run ${past}`],
      [
        'doc',
        'writer',
        { fromRun: past, turn: 3 },
        400,
        `node "writer" had 1 turn(s) in run ${past}; there is no turn 3 to pin`,
      ],
      ['doc', 'start', { fromRun: past }, 400, 'only the output of agent and decider'],
      ['doc', 'writer', { turn: 1 }, 400, "must have required property 'fromRun'"],
    ];
    for (const [flowId, nodeId, body, status, message] of cases) {
      const r = await put(flowId, nodeId, body);
      expect(r.statusCode, `${flowId}/${nodeId} ${JSON.stringify(body)}: ${r.body}`).toBe(status);
      expect(r.json().error.message).toContain(message);
    }
    // A pin that would make the flow's pins unreadable (over the size limit) is refused, and nothing changes.
    const big = routed('big', [{ node: 'writer', text: 'x'.repeat(2_200_000) }, ...PAST.slice(1)]);
    expect((await saveFlow(big)).statusCode).toBeLessThan(300);
    const bigRun = (await run({ flowId: 'big' })).id;
    const tooBig = await put('big', 'writer', { fromRun: bigRun });
    expect(tooBig.statusCode).toBe(400);
    expect(tooBig.json().error.message).toMatch(
      /the pins would take \d+ bytes, more than the limit of 2097152/,
    );
    expect((await s.req({ method: 'GET', url: '/api/flows/big/pins' })).json().pins).toEqual([]);
    expect((await put('big', 'd', { fromRun: bigRun })).statusCode).toBe(200);

    const del = await s.req({ method: 'DELETE', url: '/api/flows/doc/pins/writer' });
    expect(del.statusCode).toBe(404);
    expect(del.json().error.message).toContain('node "writer" of flow doc is not pinned');
    expect(existsSync(join(s.dir, 'pins'))).toBe(true);
    expect(base).toMatch(/^http/);
  });

  it('a pin whose edge is gone refuses the run by name; a pin of a deleted node is left out', async () => {
    expect((await put('doc', 'd', { fromRun: past })).statusCode).toBe(200);
    const f = routed('doc', LIVE);
    f.edges = f.edges.map((e) => (e.id === 'to-b' ? { ...e, id: 'to-b2' } : e));
    expect((await saveFlow(f)).statusCode).toBeLessThan(300);
    const r = await s.req({
      method: 'POST',
      url: '/api/runs',
      headers: json,
      payload: JSON.stringify({ flowId: 'doc', input: 'go' }),
    });
    expect(r.statusCode).toBe(400);
    expect(r.json().error).toMatchObject({ code: 'bad-pin' });
    expect(r.json().error.message).toContain('edge "to-b", which the pinned turn took, no longer leaves "d"');
    const views = (await s.req({ method: 'GET', url: '/api/flows/doc/pins' })).json().pins;
    expect(views.find((p: { nodeId: string }) => p.nodeId === 'd').problem).toContain('no longer leaves "d"');
    // The decider deleted: its pin no longer applies to anything, and the run goes on without it.
    const g = routed('doc', LIVE);
    g.nodes = g.nodes.filter((n) => n.id !== 'd');
    g.edges = [...g.edges.filter((e) => e.source !== 'd' && e.target !== 'd'), edge('writer', 'a')];
    expect((await saveFlow(g)).statusCode).toBeLessThan(300);
    const after = await run({ flowId: 'doc' });
    expect(after.events.at(-1)).toMatchObject({ type: 'run.completed' });
    expect((await s.req({ method: 'GET', url: '/api/flows/doc/pins' })).json().pins).toHaveLength(1);
    // Deleting the flow deletes its pins: the id written again starts with none.
    expect((await s.req({ method: 'DELETE', url: '/api/flows/doc' })).statusCode).toBeLessThan(300);
    // An editor still showing the deleted flow reads no pins (not an error); pinning into it is 410.
    const gone = await s.req({ method: 'GET', url: '/api/flows/doc/pins' });
    expect([gone.statusCode, gone.json().pins]).toEqual([200, []]);
    expect(
      (
        await s.req({
          method: 'PUT',
          url: '/api/flows/doc/pins/writer',
          headers: json,
          payload: JSON.stringify({ fromRun: 'r_x' }),
        })
      ).statusCode,
    ).toBe(410);
    expect((await saveFlow(routed('doc', LIVE))).statusCode).toBeLessThan(300);
    expect((await s.req({ method: 'GET', url: '/api/flows/doc/pins' })).json().pins).toEqual([]);
  });
});
