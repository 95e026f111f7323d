/**
 * Concurrent runs are capped (`--max-runs`, default 64): a start beyond the cap is refused with
 * 429 `too-many-runs` and `Retry-After`, before anything is recorded; a slot frees when a run ends.
 */
import type { Flow } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import { agent, edge, flow, node } from '../../runtime/src/engine/testing/index.js';
import { DEFAULT_MAX_RUNS } from '../../runtime/src/server/index.js';
import { testServer, until } from '../server/helpers.js';
import { cli } from '../support/cli.js';

let s: Awaited<ReturnType<typeof testServer>> | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const json = (body: unknown) => ({
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

/** A run that stays live: it waits for a human answer. */
const waiting: Flow = {
  ...flow(
    [
      node('start', 'start'),
      node('ask', 'human', { mode: 'ask', question: 'Which?' }),
      agent('w'),
      node('end', 'end'),
    ],
    [edge('start', 'ask'), edge('ask', 'w'), edge('w', 'end')],
    [{ node: 'w', text: 'done' }],
  ),
  id: 'waiting',
};

describe('the concurrent run cap', () => {
  it('refuses starts beyond the cap with 429 too-many-runs and Retry-After, even when they race', async () => {
    s = await testServer({ maxRuns: 3 });
    const srv = s;
    const rs = await Promise.all(
      Array.from({ length: 8 }, () =>
        srv.req({ method: 'POST', url: '/api/runs', ...json({ flow: waiting, input: 'go' }) }),
      ),
    );
    const codes = rs.map((r) => r.statusCode).sort();
    expect(codes).toEqual([201, 201, 201, 429, 429, 429, 429, 429]);
    const refused = rs.find((r) => r.statusCode === 429)!;
    expect(refused.json().error.code).toBe('too-many-runs');
    expect(refused.json().error.message).toContain('3');
    expect(refused.json().error.message).toContain('--max-runs');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Nothing of the refused starts was recorded.
    expect(Object.keys(srv.store.catalog.data.runs)).toHaveLength(3);
    expect(srv.runs.liveCount).toBe(3);

    // A run that ends frees its slot.
    const first = rs.find((r) => r.statusCode === 201)!.json().run.id as string;
    expect(
      (await srv.req({ method: 'POST', url: `/api/runs/${first}/commands`, ...json({ type: 'cancel' }) }))
        .statusCode,
    ).toBe(202);
    await until(() => !srv.runs.isLive(first), 'the cancelled run to end');
    const again = await srv.req({
      method: 'POST',
      url: '/api/runs',
      ...json({ flow: waiting, input: 'go' }),
    });
    expect(again.statusCode).toBe(201);
    expect(
      (await srv.req({ method: 'POST', url: '/api/runs', ...json({ flow: waiting, input: 'go' }) }))
        .statusCode,
    ).toBe(429);
  });

  it('has a sensible default, settable by SWITCHBOARD_MAX_RUNS', async () => {
    expect(DEFAULT_MAX_RUNS).toBe(64);
    s = await testServer();
    expect(s.maxRuns).toBe(DEFAULT_MAX_RUNS);
    await s.close();
    s = await testServer({ env: { SWITCHBOARD_MAX_RUNS: '5' } });
    expect(s.maxRuns).toBe(5);
  });

  it('`serve --max-runs` must be a positive integer', async () => {
    for (const bad of ['0', '-1', 'many', '1.5']) {
      const r = await cli('serve', '--port', '0', '--max-runs', bad);
      expect(r.code, bad).toBe(2);
      expect(r.err).toContain('--max-runs');
    }
  });
});
