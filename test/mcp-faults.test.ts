/**
 * Stdio servers that misbehave: a tool that never answers (timeouts + cancellation, no leaks),
 * a server that exits mid-call (restarted once, then a clear failure), one that writes non-JSON
 * to stdout, floods stderr, or sends a 10 MiB message. Every case ends in a typed error result
 * and the process keeps running.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { approveFlow } from '../runtime/src/mcp/consent.js';
import { createMcpToolHost } from '../runtime/src/tools/mcp-host.js';
import type { ToolHandle } from '../runtime/src/tools/types.js';
import {
  FAULTY,
  type McpTestEnv,
  mcpTestEnv,
  never,
  runContext,
  type ServerCfg,
  toolFlow,
} from './fixtures/mcp/helpers.js';

let mcp: McpTestEnv;
beforeEach(() => {
  mcp = mcpTestEnv('sb-faults-');
});
afterEach(() => mcp.close());

async function faultyTools(runId: string, env: Record<string, string> = {}, timeoutMs?: number) {
  const cfg: ServerCfg = {
    command: process.execPath,
    args: [FAULTY],
    env: { FAULTY_LOG: mcp.logFile, ...env },
  };
  const flow = toolFlow({ f: cfg }, { a1: ['f'] }, timeoutMs ? { f: { timeoutMs } } : {});
  approveFlow(mcp.trust, flow);
  const host = createMcpToolHost(flow, { pool: mcp.pool, trust: mcp.trust });
  const rc = runContext(runId);
  const tools = await host.toolsFor('a1', rc.ctx);
  const tool = (n: string) => tools.find((t) => t.remoteName === n) as ToolHandle;
  return { host, rc, tools, tool };
}

const logLines = () => {
  try {
    return readFileSync(mcp.logFile, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
};

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

const fdCount = () => readdirSync('/proc/self/fd').length;
/** Live child processes of this process whose command line mentions the fixture. */
function fixtureChildren(): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').includes('faulty-server')) out.push(Number(d));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

describe('a tool that never answers', { timeout: 120_000 }, () => {
  it('100 calls each end within timeout + 1 s with a typed error; every one is cancelled at the server; nothing leaks', async () => {
    const fdsBefore = fdCount();
    const TIMEOUT = 300;
    const { host, tool } = await faultyTools('hang', {}, TIMEOUT);
    const hang = tool('hang');
    const durations: number[] = [];
    const results = [];
    for (let batch = 0; batch < 10; batch++) {
      results.push(
        ...(await Promise.all(
          Array.from({ length: 10 }, async () => {
            const t0 = Date.now();
            const r = await hang.call({}, { signal: never });
            durations.push(Date.now() - t0);
            return r;
          }),
        )),
      );
    }
    expect(results).toHaveLength(100);
    for (const r of results) {
      expect(r.isError).toBe(true);
      expect(r.content).toMatch(/^mcp\.timeout: hang: no answer within 300 ms/);
    }
    expect(Math.max(...durations)).toBeLessThan(TIMEOUT + 1000);
    // The server saw a notifications/cancelled for every call.
    await until(() => logLines().filter((l) => l.startsWith('cancelled')).length === 100);
    expect(logLines().filter((l) => l.startsWith('called hang'))).toHaveLength(100);

    // Cancellation by the caller's signal is sent too.
    const ac = new AbortController();
    const p = hang.call({}, { signal: ac.signal, timeoutMs: 60_000 });
    await until(() => logLines().filter((l) => l.startsWith('called hang')).length === 101);
    ac.abort();
    expect((await p).content).toMatch(/^mcp\.cancelled/);
    await until(() => logLines().filter((l) => l.startsWith('cancelled')).length === 101);

    const pid = mcp.pool.connections()[0]!.pid!;
    expect(fixtureChildren()).toEqual([pid]);
    await host.release('hang');
    await mcp.pool.close();
    expect(fixtureChildren()).toEqual([]);
    await until(() => fdCount() <= fdsBefore + 2);
  });
});

describe('a server that exits mid-call', { timeout: 120_000 }, () => {
  it('gives a typed error, is restarted once, and then fails clearly', async () => {
    const { rc, tool } = await faultyTools('exit');
    const firstPid = mcp.pool.connections()[0]!.pid;
    const r1 = await tool('exit').call({}, { signal: never });
    expect(r1.isError).toBe(true);
    expect(r1.content).toMatch(/^mcp\.server-failed: exit: the server closed the connection during the call/);
    // Restarted once: the next call works on a new process.
    const echo = await tool('echo').call({ text: 'again' }, { signal: never });
    expect(echo).toMatchObject({ isError: false, content: 'again' });
    expect(mcp.pool.connections()[0]!.pid).not.toBe(firstPid);
    // The second death is final.
    expect((await tool('exit').call({}, { signal: never })).isError).toBe(true);
    const after = await tool('echo').call({ text: 'x' }, { signal: never });
    expect(after.isError).toBe(true);
    expect(after.content).toMatch(/^mcp\.server-failed: f: the server stopped again after a restart/);
    expect(
      rc.events.some((e) => e.type === 'log' && e.level === 'error' && e.text.includes('stopped again')),
    ).toBe(true);
    expect(fixtureChildren()).toEqual([]);
  });
});

describe('a server that writes non-JSON to stdout', { timeout: 120_000 }, () => {
  it('ends the call with a typed error and closes the broken connection', async () => {
    const { rc, tool } = await faultyTools('garbage', {}, 5000);
    const r = await tool('garbage').call({}, { signal: never });
    expect(r.isError).toBe(true);
    expect(r.content).toMatch(
      /^mcp\.server-failed: garbage: the server closed the connection during the call: .*JSON/,
    );
    expect(rc.events.some((e) => e.type === 'log' && e.text.includes('protocol error'))).toBe(true);
    // Reported a bounded number of times, not once per line.
    expect(
      rc.events.filter((e) => e.type === 'log' && e.text.includes('protocol error:')).length,
    ).toBeLessThanOrEqual(5);
  });
});

describe('a server that floods stderr', { timeout: 120_000 }, () => {
  it('answers, while the log events it causes stay bounded', async () => {
    const heapBefore = process.memoryUsage().heapUsed;
    const { rc, tool } = await faultyTools('flood', { FLOOD_MB: '20' }, 60_000);
    const r = await tool('flood').call({}, { signal: never });
    expect(r).toMatchObject({ isError: false, content: 'flooded' });
    const logs = rc.events.filter((e) => e.type === 'log' && e.level === 'stderr');
    // 20 MiB were written as 20 480 lines; a token bucket lets a burst and a trickle through.
    expect(logs.length).toBeLessThan(2000);
    expect(logs.reduce((n, e) => n + (e.type === 'log' ? e.text.length : 0), 0)).toBeLessThan(
      4 * 1024 * 1024,
    );
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(200 * 1024 * 1024);
  });
});

describe('a server that sends 10 MiB in one message', { timeout: 120_000 }, () => {
  it('is cut off at the message limit with a typed error; the next call restarts it', async () => {
    const { tool } = await faultyTools('huge', {}, 30_000);
    const r = await tool('huge').call({}, { signal: never });
    expect(r.isError).toBe(true);
    expect(r.content).toMatch(/^mcp\.server-failed: huge: .*exceeded maximum size/);
    expect((await tool('echo').call({ text: 'ok' }, { signal: never })).content).toBe('ok');
  });
});
