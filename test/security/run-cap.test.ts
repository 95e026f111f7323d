/**
 * Concurrent runs are capped (`--max-runs`, default 64): a start beyond the cap is refused with
 * 429 `too-many-runs` and `Retry-After`, before anything is recorded; a slot frees when a run ends.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Flow } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import { agent, edge, flow, node } from '../../runtime/src/engine/testing/index.js';
import { DEFAULT_MAX_RUNS, defaultMaxRuns } from '../../runtime/src/server/index.js';
import { tempDir, testServer, until } from '../server/helpers.js';
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

  it('has a sensible default that fits the open-files limit, settable by SWITCHBOARD_MAX_RUNS', async () => {
    expect(DEFAULT_MAX_RUNS).toBe(64);
    const limits = (soft: string) =>
      `Limit                     Soft Limit           Hard Limit           Units\nMax open files            ${soft}                 524288               files\n`;
    expect(defaultMaxRuns(limits('1048576'))).toBe(64);
    expect(defaultMaxRuns(limits('unlimited'))).toBe(64);
    expect(defaultMaxRuns(limits('256'))).toBe(32);
    expect(defaultMaxRuns(limits('100'))).toBe(1);
    expect(defaultMaxRuns('')).toBe(64);
    s = await testServer();
    expect(s.maxRuns).toBe(defaultMaxRuns());
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

describe('under a 256-descriptor limit', { timeout: 180_000 }, () => {
  it('the cap, not EMFILE, is what clients meet: every accepted run lives and writes still work', async () => {
    const { dir, cleanup } = tempDir('sb-runcap-');
    const entry = fileURLToPath(new URL('../fixtures/mcp/cli-entry.ts', import.meta.url));
    const repo = fileURLToPath(new URL('../../', import.meta.url));
    const child = spawn(
      'sh',
      [
        '-c',
        `ulimit -n 256 && exec "${process.execPath}" --conditions=source --import tsx "${entry}" serve --port 0 --data "${dir}/data" --quiet`,
      ],
      { cwd: repo, env: { PATH: process.env.PATH ?? '', HOME: dir }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      let log = '';
      child.stderr!.on('data', (c: Buffer) => {
        log += c.toString();
      });
      const base = await new Promise<string>((resolve, reject) => {
        let out = '';
        const t = setTimeout(() => reject(new Error(`no address: ${out} ${log}`)), 120_000);
        child.stdout!.on('data', (c: Buffer) => {
          out += c.toString();
          const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
          if (m) {
            clearTimeout(t);
            resolve(m[1]!);
          }
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${out} ${log}`)));
      });
      const post = (path: string, body: unknown) =>
        fetch(`${base}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const codes = new Map<number, number>();
      const ids: string[] = [];
      for (let i = 0; i < 120; i++) {
        const r = await post('/api/runs', { flow: waiting, input: `go ${i}` });
        codes.set(r.status, (codes.get(r.status) ?? 0) + 1);
        const body = (await r.json()) as { run?: { id: string } };
        if (r.status === 201) ids.push(body.run!.id);
      }
      expect([...codes.keys()].sort()).toEqual([201, 429]);
      expect(ids.length).toBe(defaultMaxRuns('Max open files 256 256 files'));
      // Every accepted run got as far as its question; none failed for lack of descriptors.
      const statuses = async () =>
        Promise.all(
          ids.map(
            async (id) =>
              ((await (await fetch(`${base}/api/runs/${id}`)).json()) as { run: { status: string } }).run
                .status,
          ),
        );
      await until(
        async () => (await statuses()).every((st) => st === 'waiting'),
        'every run waiting',
        60_000,
      );
      // The server still writes: a flow, and an answer that lets a run finish.
      expect((await post('/api/flows', { ...waiting, id: 'stored' })).status).toBe(201);
      expect(
        (await post(`/api/runs/${ids[0]}/commands`, { type: 'answer', nodeId: 'ask', answer: 'blue' }))
          .status,
      ).toBe(202);
      await until(async () => (await statuses())[0] === 'completed', 'the answered run to complete', 60_000);
      expect(log).not.toContain('EMFILE');
    } finally {
      child.kill('SIGKILL');
      cleanup();
    }
  });
});
