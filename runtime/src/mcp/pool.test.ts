import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerSpec } from './connection.js';
import { minimalEnv } from './env.js';
import { McpPool } from './pool.js';

const ECHO = fileURLToPath(new URL('./testing/echo-server.mjs', import.meta.url));
const spec = (key = 'echo'): Extract<ServerSpec, { kind: 'stdio' }> => ({
  kind: 'stdio',
  key,
  label: 'echo',
  command: process.execPath,
  args: [ECHO],
  env: minimalEnv(),
});
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const waitFor = async (cond: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};

let pool: McpPool | undefined;
afterEach(async () => {
  await pool?.close();
});

describe('McpPool', () => {
  it('shares one server between runs, keeps it for the idle delay, then stops it', async () => {
    pool = new McpPool({ idleMs: 300 });
    const logs: string[] = [];
    const c1 = pool.acquire(spec(), 'r1', { log: (_l, t) => logs.push(t) });
    const c2 = pool.acquire(spec(), 'r2');
    expect(c1).toBe(c2);
    await c1.ready();
    const pid = c1.pid!;
    const r = await c1.callTool(
      'echo',
      { text: 'hi' },
      { signal: new AbortController().signal, timeoutMs: 5000 },
    );
    expect(r.content).toEqual([{ type: 'text', text: `${pid}:hi` }]);
    await waitFor(() => logs.includes('[echo] echo server ready'));
    await pool.release('r1');
    expect(alive(pid)).toBe(true);
    await pool.release('r2');
    // Re-acquired within the idle delay: the same process serves the new run.
    const c3 = pool.acquire(spec(), 'r3');
    expect(c3).toBe(c1);
    await pool.release('r3');
    expect(alive(pid)).toBe(true);
    await waitFor(() => !alive(pid));
    expect(pool.connections()).toEqual([]);
  });

  it('stops every server on close and refuses new work afterwards', async () => {
    pool = new McpPool({ idleMs: 60_000 });
    const a = pool.acquire(spec('a'), 'r1');
    const b = pool.acquire(spec('b'), 'r1');
    await Promise.all([a.ready(), b.ready()]);
    const pids = [a.pid!, b.pid!];
    expect(pids[0]).not.toBe(pids[1]);
    await pool.close();
    expect(pids.filter(alive)).toEqual([]);
    expect(() => pool!.acquire(spec(), 'r2')).toThrow('shut down');
  });

  it('a command that cannot be started is a clear failure after one retry', async () => {
    pool = new McpPool();
    const c = pool.acquire({ ...spec('bad'), command: '/nonexistent/program' }, 'r1');
    await expect(c.ready()).rejects.toMatchObject({ code: 'mcp.server-failed' });
    await expect(c.ready()).rejects.toThrow(/could not start/);
  });
});
