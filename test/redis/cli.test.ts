/**
 * The scale-out commands as an operator runs them: `switchboard serve --redis` and
 * `switchboard worker --redis` (real CLI processes) run a flow; SIGTERM stops the worker
 * cleanly; bad or missing Redis URLs are refused with a message naming the flag.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../runtime/src/cli/main.js';
import { batteryFlow } from '../crash/fixture.js';
import { startRedis, type TestRedis } from './redis-server.js';

const CLI = fileURLToPath(new URL('../crash/cli-main.ts', import.meta.url));
const RUNTIME = fileURLToPath(new URL('../../runtime/', import.meta.url));
const cleanup: Array<() => unknown> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

function cli(args: string[]) {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', CLI, ...args],
    {
      cwd: RUNTIME,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  cleanup.push(() => child.exitCode === null && child.kill('SIGKILL'));
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  const saw = (re: RegExp) =>
    new Promise<RegExpExecArray>((res, rej) => {
      const check = () => {
        const m = re.exec(out);
        if (m) res(m);
      };
      child.stdout!.on('data', check);
      check();
      void exited.then((c) => rej(new Error(`exited ${c}: ${err}`)));
    });
  return { child, saw, exited, out: () => out, err: () => err };
}

describe('switchboard serve --redis · worker · status (CLI)', () => {
  let redis: TestRedis;

  it('a run started on `serve --redis` is executed by `switchboard worker`, which SIGTERM stops cleanly', async () => {
    redis = await startRedis({ appendonly: true });
    cleanup.push(() => redis.stop());
    const dir = mkdtempSync(join(tmpdir(), 'sb-cli-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const serve = cli(['serve', '--port', '0', '--data', join(dir, 's'), '--redis', redis.url]);
    const url = (await serve.saw(/listening on (http:\/\/\S+)/))[1]!;
    await serve.saw(/runs are enqueued on Redis/);
    const worker = cli(['worker', '--redis', redis.url, '--concurrency', '2', '--data', join(dir, 'w')]);
    await worker.saw(/worker (\S+) takes runs from/);
    // The battery flow without its tool: a flow of scripted agents only.
    const f = batteryFlow(1);
    const flow = {
      ...f,
      nodes: f.nodes.filter((n) => n.kind !== 'tool'),
      edges: f.edges.filter((e) => e.kind !== 'tools'),
    };
    const models = flow.models.default as { script: Array<{ toolCalls?: unknown }> };
    models.script = models.script.filter((e) => !e.toolCalls);
    const res = await fetch(`${url}/api/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ flow, input: 'go' }),
    });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as { run: { id: string } }).run.id;
    let status = '';
    for (let i = 0; i < 300 && status !== 'completed' && status !== 'failed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = ((await (await fetch(`${url}/api/runs/${id}`)).json()) as { run: { status: string } }).run
        .status;
    }
    expect(status).toBe('completed');
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(worker.out()).toContain('worker stopping');
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
  }, 120_000);

  it('refuses a missing or wrong Redis URL, naming the flag or variable', async () => {
    const run = async (argv: string[], env: Record<string, string | undefined> = {}) => {
      let err = '';
      const saved = { ...process.env };
      Object.assign(process.env, env);
      try {
        const code = await main(['node', 'switchboard', ...argv], { err: (t) => (err += t), out: () => {} });
        return { code, err };
      } finally {
        for (const k of Object.keys(env)) if (saved[k] === undefined) delete process.env[k];
      }
    };
    const saved = process.env.SWITCHBOARD_REDIS_URL;
    delete process.env.SWITCHBOARD_REDIS_URL;
    try {
      expect(await run(['worker'])).toEqual({
        code: 2,
        err: 'switchboard worker: give --redis URL or set SWITCHBOARD_REDIS_URL\n',
      });
      expect(await run(['worker', '--redis', 'http://127.0.0.1:6379'])).toEqual({
        code: 2,
        err: 'switchboard worker: --redis: expected redis://host:port, got http:\n',
      });
      expect(await run(['status'], { SWITCHBOARD_REDIS_URL: 'nonsense' })).toEqual({
        code: 2,
        err: 'switchboard status: SWITCHBOARD_REDIS_URL: "nonsense" is not a URL\n',
      });
      expect(
        (await run(['worker', '--redis', 'redis://127.0.0.1:6379', '--concurrency', '0'])).err,
      ).toContain('--concurrency must be a positive integer, not 0');
      const down = await run(['status', '--redis', 'redis://127.0.0.1:1']);
      expect(down.code).toBe(1);
      expect(down.err).toMatch(/^switchboard status: redis_unavailable: cannot read 127\.0\.0\.1:1: /);
    } finally {
      if (saved !== undefined) process.env.SWITCHBOARD_REDIS_URL = saved;
    }
  });
});
