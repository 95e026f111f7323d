/**
 * Shutdown is bounded: after SIGTERM `switchboard serve` finishes or abandons its writes within
 * SWITCHBOARD_SHUTDOWN_MS and exits — non-zero, naming the storage error, when it could not
 * save — even with its data directory removed under it or a write that never returns.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { FaultRule } from '../runtime/src/store/faults.js';
import { slowChain, tempDir, until } from './server/helpers.js';
import { cli } from './support/cli.js';

const CLI = fileURLToPath(new URL('./crash/cli-main.ts', import.meta.url));
const RUNTIME = fileURLToPath(new URL('../runtime/', import.meta.url));
const BOUND_MS = 1500;
const children: ChildProcess[] = [];
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const c of cleanups.splice(0)) c();
});

function serve(dir: string, faults?: FaultRule[]) {
  const child = spawn(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', CLI, 'serve', '--port', '0', '--data', dir, '--quiet'],
    {
      cwd: RUNTIME,
      env: {
        ...process.env,
        SWITCHBOARD_SHUTDOWN_MS: String(BOUND_MS),
        ...(faults ? { SWITCHBOARD_FAULTS: JSON.stringify(faults) } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<{ code: number | null; at: number }>((r) =>
    child.on('exit', (code) => r({ code, at: Date.now() })),
  );
  const listening = until(() => /listening on (http:\/\/\S+)/.exec(out)?.[1], 'listening', 30_000);
  return { child, listening, exited, err: () => err };
}

async function startRun(url: string): Promise<string> {
  const r = await fetch(`${url}/api/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ flow: slowChain('slow', 200, 20), input: 'go' }),
  });
  expect(r.status).toBe(201);
  return ((await r.json()) as { run: { id: string } }).run.id;
}

describe('bounded shutdown', () => {
  it('with the data directory removed: exits within the bound, non-zero, naming storage_unavailable', async () => {
    const { dir, cleanup } = tempDir('sb-shutdown-');
    cleanups.push(cleanup);
    const s = serve(dir);
    const url = await s.listening;
    await startRun(url);
    await new Promise((r) => setTimeout(r, 150));
    rmSync(dir, { recursive: true, force: true });
    const t = Date.now();
    s.child.kill('SIGTERM');
    const { code, at } = await s.exited;
    expect(at - t).toBeLessThan(BOUND_MS + 1000);
    expect(code).toBe(1);
    expect(s.err()).toMatch(/switchboard serve: storage_unavailable: could not save everything at shutdown/);
    expect(s.err()).toContain(dir);
  });

  it('with a write that never returns: abandons it at the bound and exits non-zero, naming it', async () => {
    const { dir, cleanup } = tempDir('sb-shutdown-');
    cleanups.push(cleanup);
    // Every fdatasync of a run log hangs, as on a disk that stopped answering.
    const s = serve(dir, [{ path: 'events.jsonl', ops: ['sync'], hang: true }]);
    const url = await s.listening;
    await startRun(url);
    await new Promise((r) => setTimeout(r, 150));
    const t = Date.now();
    s.child.kill('SIGTERM');
    const { code, at } = await s.exited;
    expect(at - t).toBeGreaterThanOrEqual(BOUND_MS - 100);
    expect(at - t).toBeLessThan(BOUND_MS + 1000);
    expect(code).toBe(1);
    expect(s.err()).toMatch(/storage_io: writes did not finish within 1500 ms of the shutdown; abandoned/);
  });

  it('with a healthy disk: exits 0 well within the bound', async () => {
    const { dir, cleanup } = tempDir('sb-shutdown-');
    cleanups.push(cleanup);
    const s = serve(dir);
    const url = await s.listening;
    await startRun(url);
    await new Promise((r) => setTimeout(r, 150));
    const t = Date.now();
    s.child.kill('SIGTERM');
    const { code, at } = await s.exited;
    expect(code).toBe(0);
    expect(at - t).toBeLessThan(BOUND_MS);
  });
});

describe('start-up on storage that cannot be used', () => {
  it('names the storage error and the path, and exits 1', async () => {
    const { dir, cleanup } = tempDir('sb-shutdown-');
    cleanups.push(cleanup);
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a directory');
    const r = await cli('serve', '--port', '0', '--data', join(file, 'data'));
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^switchboard serve: storage_unavailable: ENOTDIR at .*a-file\/data/);
  });
});
