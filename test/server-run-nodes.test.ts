/** `GET /api/runs/:id/nodes`: per-node counters computed from the log by the shared summary. */
import type { Flow } from '@switchboard/schemas';
import { summarizeNodes } from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agent, edge, flow, node } from '../runtime/src/engine/testing/index.js';
import { testServer, until } from './server/helpers.js';

type S = Awaited<ReturnType<typeof testServer>>;
let s: S;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

const json = (body: unknown) => ({
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

/** start → writer (retried once, priced) → checker (cheap model) → end. */
function priced(): Flow {
  const f = flow(
    [
      node('start', 'start'),
      agent('writer', { retries: 1 }),
      agent('checker', { model: 'cheap' }),
      node('end', 'end'),
    ],
    [edge('start', 'writer'), edge('writer', 'checker'), edge('checker', 'end')],
    [
      { node: 'writer', error: { code: 'server_error', message: 'boom' } },
      { node: 'writer', text: 'the draft', usage: { promptTokens: 1000, completionTokens: 500 } },
    ],
  );
  f.models.default = { ...f.models.default!, pricing: { input: 2, output: 8 } };
  f.models.cheap = {
    provider: 'scripted',
    script: [{ node: 'checker', text: 'fine', usage: { promptTokens: 200, completionTokens: 10 } }],
  };
  return { ...f, id: 'priced', name: 'Priced' };
}

describe('GET /api/runs/:id/nodes', () => {
  it('gives one entry per node that ran: status, turns, tokens, cost, time, failures', async () => {
    const r = await s.req({ method: 'POST', url: '/api/runs', ...json({ flow: priced(), input: 'go' }) });
    expect(r.statusCode).toBe(201);
    const id = r.json().run.id as string;
    await until(
      async () => (await s.req({ method: 'GET', url: `/api/runs/${id}` })).json().run.status === 'completed',
      'run',
    );
    const res = await s.req({ method: 'GET', url: `/api/runs/${id}/nodes` });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.status).toBe('completed');
    const nodes = body.nodes as Array<{ nodeId: string; cost?: number }>;
    const byId = { get: (id: string) => nodes.find((n) => n.nodeId === id) };
    expect(nodes.map((n) => n.nodeId)).toEqual(['start', 'writer', 'checker', 'end']);
    expect(byId.get('writer')).toMatchObject({
      status: 'completed',
      turns: 1,
      calls: 2,
      promptTokens: 1000,
      completionTokens: 500,
      failures: 1,
    });
    // 1000 × 2 / 1M + 500 × 8 / 1M
    expect(byId.get('writer')!.cost).toBeCloseTo(0.006, 10);
    expect(byId.get('checker')).toMatchObject({
      status: 'completed',
      turns: 1,
      promptTokens: 200,
      failures: 0,
    });
    expect(byId.get('checker')).not.toHaveProperty('cost');
    for (const n of body.nodes) expect(n.elapsedMs).toBeGreaterThanOrEqual(0);

    // The same function over the log the API serves gives the same answer.
    const events = (await s.req({ method: 'GET', url: `/api/runs/${id}/events?limit=10000` })).json().events;
    expect(summarizeNodes(events, priced().models)).toEqual(body.nodes);
  });

  it('answers 404 for an unknown run and 400 for a bad id', async () => {
    expect((await s.req({ method: 'GET', url: '/api/runs/nope/nodes' })).statusCode).toBe(404);
    expect((await s.req({ method: 'GET', url: '/api/runs/..%2Fx/nodes' })).statusCode).toBe(400);
  });
});
