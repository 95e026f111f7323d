import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from './server/helpers.js';

const CLI = fileURLToPath(new URL('./crash/cli-main.ts', import.meta.url));
const RUNTIME = fileURLToPath(new URL('../runtime/', import.meta.url));
const children: ChildProcess[] = [];
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const c of cleanups.splice(0)) c();
});

function serve(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', CLI, 'serve', ...args], {
    cwd: RUNTIME,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  const listening = new Promise<string>((res, rej) => {
    child.stdout!.on('data', () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) res(m[1]!);
    });
    void exited.then((c) => rej(new Error(`exited ${c}: ${err}`)));
  });
  // Not every test waits for it; a refused start must not become an unhandled rejection.
  listening.catch(() => {});
  return { child, listening, exited, out: () => out, err: () => err };
}

describe('switchboard serve', () => {
  it('listens on 127.0.0.1, holds the data directory, and stops cleanly on SIGTERM', async () => {
    const { dir, cleanup } = tempDir('sb-cli-');
    cleanups.push(cleanup);
    const a = serve(['--port', '0', '--data', dir, '--quiet']);
    const url = await a.listening;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const r = await fetch(`${url}/api/health`);
    expect(await r.json()).toMatchObject({ ok: true, status: 'ok', storage: { status: 'ok' } });
    const b = serve(['--port', '0', '--data', dir]);
    expect(await b.exited).toBe(1);
    expect(b.err()).toContain(`locked by pid ${a.child.pid}`);
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    expect(existsSync(join(dir, 'lock'))).toBe(false);
  }, 60_000);

  it('refuses a non-loopback host without a strong token (exit 2), and a weak one', async () => {
    const { dir, cleanup } = tempDir('sb-cli-');
    cleanups.push(cleanup);
    const a = serve(['--host', '0.0.0.0', '--port', '0', '--data', dir], { SWITCHBOARD_TOKEN: '' });
    expect(await a.exited).toBe(2);
    expect(a.err()).toContain('SWITCHBOARD_TOKEN is required');
    const b = serve(['--host', '0.0.0.0', '--port', '0', '--data', dir], { SWITCHBOARD_TOKEN: 'hunter2' });
    expect(await b.exited).toBe(2);
    expect(b.err()).toContain('too weak');
  }, 60_000);
});
