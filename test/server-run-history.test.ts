/**
 * What the run history lists of each run: who started it (the name the starter sent, cleaned and
 * bounded: a label, never a key), its path and its cost (the node summaries' priced calls).
 */
import type { Flow } from '@switchboard/schemas';
import { summarizeNodes } from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agent, edge, flow, node } from '../runtime/src/engine/testing/index.js';
import { MAX_PATH } from '../runtime/src/server/run-digest.js';
import { testServer } from './server/helpers.js';

type S = Awaited<ReturnType<typeof testServer>>;
let s: S;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

const json = (body: unknown, headers: Record<string, string> = {}) => ({
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json', ...headers },
});

function priced(): Flow {
  const f = flow(
    [node('start', 'start'), agent('writer'), agent('checker'), node('end', 'end')],
    [edge('start', 'writer'), edge('writer', 'checker'), edge('checker', 'end')],
    [
      { node: 'writer', text: 'the draft', usage: { promptTokens: 1000, completionTokens: 500 } },
      { node: 'checker', text: 'fine', usage: { promptTokens: 200, completionTokens: 10 } },
    ],
  );
  f.models.default = { ...f.models.default!, pricing: { input: 2, output: 8 } };
  return { ...f, id: 'priced', name: 'Priced' };
}

async function startAndSettle(headers: Record<string, string> = {}, f: Flow = priced()): Promise<string> {
  const r = await s.req({ method: 'POST', url: '/api/runs', ...json({ flow: f, input: 'go' }, headers) });
  expect(r.statusCode, r.body).toBe(201);
  const id = r.json().run.id as string;
  await s.runs.settled(id);
  return id;
}

async function listed(flowId = 'priced'): Promise<Array<Record<string, unknown>>> {
  const r = await s.req({ method: 'GET', url: `/api/runs?flowId=${flowId}` });
  expect(r.statusCode).toBe(200);
  return r.json().runs;
}

describe('the run history over REST', () => {
  it('lists who started each run, its path and its cost (equal to the node summaries)', async () => {
    const byAda = await startAndSettle({ 'x-switchboard-user': encodeURIComponent('Ada Lovelace') });
    const anon = await startAndSettle();
    const [second, first] = await listed();
    expect(first).toMatchObject({ id: byAda, startedBy: 'Ada Lovelace', source: 'api', status: 'completed' });
    // A start that names nobody says how it was started, and nothing else.
    expect(second).toMatchObject({ id: anon, source: 'api' });
    expect(second).not.toHaveProperty('startedBy');
    expect(first!.path).toEqual(['start', 'writer', 'checker', 'end']);
    expect(first).not.toHaveProperty('pathMore');
    const events = (await s.req({ method: 'GET', url: `/api/runs/${byAda}/events?limit=10000` })).json()
      .events;
    const expected = summarizeNodes(events, priced().models).reduce((n, x) => n + (x.cost ?? 0), 0);
    expect(expected).toBeGreaterThan(0);
    expect(first!.cost).toBeCloseTo(expected, 12);
    // The same on one run's entry, and on disk for the next process.
    const one = (await s.req({ method: 'GET', url: `/api/runs/${byAda}` })).json().run;
    expect(one).toMatchObject({ startedBy: 'Ada Lovelace', path: first!.path, cost: first!.cost });
    expect(s.store.catalog.data.runs[byAda]!.startedBy).toBe('Ada Lovelace');
  });

  it('keeps a hostile name as bounded text: no control characters, 40 characters at most, never a key', async () => {
    const hostile = `<img src=x onerror=alert(1)>\u0000\n${'x'.repeat(500)}`;
    const id = await startAndSettle({ 'x-switchboard-user': encodeURIComponent(hostile) });
    const proto = await startAndSettle({ 'x-switchboard-user': '__proto__' });
    const rows = await listed();
    const name = rows.find((r) => r.id === id)!.startedBy as string;
    expect([...name].length).toBeLessThanOrEqual(40);
    expect(name.startsWith('<img src=x onerror=alert(1)>')).toBe(true);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must be gone
    expect(name).not.toMatch(/[\u0000-\u001f]/);
    expect(rows.find((r) => r.id === proto)!.startedBy).toBe('__proto__');
    expect(Object.getPrototypeOf(s.store.catalog.data.runs[proto]!)).toBe(Object.prototype);
    expect(Object.hasOwn(s.store.catalog.data.runs[proto]!, 'startedBy')).toBe(true);
  });

  it('a long path lists its first nodes and counts the rest', async () => {
    const n = MAX_PATH + 5;
    const ids = Array.from({ length: n }, (_, i) => `a${i}`);
    const f = flow(
      [node('start', 'start'), ...ids.map((id) => agent(id)), node('end', 'end')],
      ['start', ...ids, 'end'].slice(1).map((id, i, all) => edge(i === 0 ? 'start' : all[i - 1]!, id)),
      ids.map((id) => ({ node: id, text: 'ok' })),
    );
    const id = await startAndSettle({}, { ...f, id: 'long', name: 'Long' });
    const [row] = await listed('long');
    expect(row!.id).toBe(id);
    expect(row!.status).toBe('completed');
    expect(row!.path).toHaveLength(MAX_PATH);
    expect((row!.path as string[]).slice(0, 3)).toEqual(['start', 'a0', 'a1']);
    // start + n agents + end, MAX_PATH of them listed.
    expect(row!.pathMore).toBe(n + 2 - MAX_PATH);
    expect(row).not.toHaveProperty('cost');
  });
});
