/**
 * `switchboard run FLOW --attach URL` as a real child process against a real server: the run
 * appears on the server, a human node is answered over REST (as an editor does) and the
 * process completes with that answer; a process whose server goes away finishes locally and
 * says so on stderr; a process killed mid-run is detached, then abandoned by name.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Flow } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from '../../runtime/src/server/index.js';
import { cli } from '../support/cli.js';
import { slowChain, tempDir, until } from './helpers.js';

const CLI = fileURLToPath(new URL('../crash/cli-main.ts', import.meta.url));
const RUNTIME = fileURLToPath(new URL('../../runtime/', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TOKEN = 'attach-cli-token-0123456789abcdef';
const TRIAGE = join(ROOT, 'flows', 'support-triage.json');
const EXAMPLE = (
  (JSON.parse(readFileSync(TRIAGE, 'utf8')) as Flow).metadata as { examples: Array<{ input: string }> }
).examples[0]!.input;

const cleanups: Array<() => Promise<void> | void> = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(opts: Parameters<typeof createServer>[0] = {}) {
  const { dir, cleanup } = tempDir('sb-attach-cli-');
  const s = await createServer({ dataDir: dir, editorDir: false, port: 0, token: TOKEN, ...opts });
  const { url } = await s.listen();
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await s.close();
  };
  cleanups.push(cleanup, close);
  return { s, url, close, dir };
}

function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', CLI, 'run', ...args], {
    cwd: RUNTIME,
    env: { ...process.env, SWITCHBOARD_TOKEN: '', ...env },
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
  return { child, exited, out: () => out, err: () => err };
}

const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

describe('switchboard run --attach', { timeout: 90_000 }, () => {
  it('streams the run to the server, where a person answers its human node; the process completes with that answer', async () => {
    const { s, url, dir } = await server();
    const p = run([TRIAGE, '--input', EXAMPLE, '--attach', url, '--token', TOKEN]);
    const runId = await until(
      () => Object.values(s.store.catalog.data.runs).find((r) => r.status === 'waiting')?.id,
      'the attached run waiting for its human node',
      60_000,
    );
    const rec = s.store.catalog.data.runs[runId]!;
    expect(rec).toMatchObject({
      flowId: 'support-triage',
      source: 'attach',
      attached: { state: 'connected' },
    });
    expect(p.err()).toContain(`attach: streaming to ws://127.0.0.1:`);
    expect(p.err()).toContain(`as run ${runId}`);
    const r = await fetch(`${url}/api/runs/${runId}/commands`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ type: 'answer', nodeId: 'approval', answer: 'yes' }),
    });
    expect(r.status).toBe(202);
    expect(await p.exited).toBe(0);
    expect(p.err()).toContain('attach: answer from the editor');
    expect(p.err()).toContain(`attach: the server holds the whole run (${runId})`);
    await until(() => s.store.catalog.data.runs[runId]?.status === 'completed', 'completed on the server');
    const events = s.store.readEvents(runId);
    expect(events.find((e) => e.type === 'input.received')).toMatchObject({
      nodeId: 'approval',
      answer: 'yes',
    });
    expect(p.out().trim()).toBe(String(s.store.catalog.data.runs[runId]!.output).trim());
    // Stored like any run: it replays from its log with no network, and diffs against itself.
    await until(() => !s.attached.isLive(runId), 'the connection closed');
    await s.attached.idle();
    const replay = await cli('replay', runId, '--data', dir);
    expect(replay.code, replay.err).toBe(0);
    // A headless process keeps no tool journal on the server: the log's tool results serve.
    for (const line of replay.err.trim().split('\n').filter(Boolean))
      expect(line).toMatch(/warning: tool\.result seq \d+: no journal entry for /);
    const diff = await cli('diff', runId, runId, '--data', dir);
    expect(diff.code).toBe(0);
  });

  it('a wrong token stops attaching, said on stderr; the run still ends locally', async () => {
    const { dir, cleanup } = tempDir('sb-attach-flow-');
    cleanups.push(cleanup);
    const file = join(dir, 'chain.json');
    writeFileSync(file, JSON.stringify(slowChain('cli-chain', 3, 10)));
    const { url } = await server();
    const p = run([file, '--input', 'go', '--attach', url, '--token', 'wrong-token-0123456789abcdef0000']);
    expect(await p.exited).toBe(0);
    expect(p.err()).toMatch(
      /attach: the server refused the connection \(401\).*the run goes on here, no longer attached/,
    );
  });

  it('goes on when the server goes away, and says so on stderr', async () => {
    const { dir, cleanup } = tempDir('sb-attach-flow-');
    cleanups.push(cleanup);
    const file = join(dir, 'chain.json');
    writeFileSync(file, JSON.stringify(slowChain('cli-chain', 30, 60)));
    const { s, url, close } = await server();
    const p = run([file, '--input', 'go', '--attach', url, '--token', TOKEN]);
    await until(
      () => Object.values(s.store.catalog.data.runs).find((r) => r.lastSeq > 10),
      'some events',
      60_000,
    );
    await close();
    expect(await p.exited).toBe(0);
    expect(p.err()).toMatch(
      /attach: lost the server \(.*\); the run goes on here, reconnecting and resending from seq \d+/,
    );
    expect(p.err()).toMatch(
      /attach: the run has ended here; waiting up to 15 s for the server to take its last \d+ event\(s\)/,
    );
    expect(p.err()).toMatch(/attach: the server did not acknowledge every event \(it holds up to seq \d+\)/);
    expect(p.out().trim()).toBe('ok');
  });

  it('a process killed mid-run leaves its run detached, then abandoned by name', async () => {
    const { s, url } = await server({ attach: { graceMs: 1500 } });
    const p = run([TRIAGE, '--input', EXAMPLE, '--attach', url, '--token', TOKEN]);
    const runId = await until(
      () => Object.values(s.store.catalog.data.runs).find((r) => r.status === 'waiting')?.id,
      'the attached run waiting',
      60_000,
    );
    p.child.kill('SIGKILL');
    await until(() => s.store.catalog.data.runs[runId]?.attached?.state === 'detached', 'detached');
    expect(s.store.catalog.data.runs[runId]!.status).toBe('waiting');
    await until(() => s.store.catalog.data.runs[runId]?.status === 'interrupted', 'abandoned', 20_000);
    expect(s.store.catalog.data.runs[runId]!.error?.code).toBe('attach_abandoned');
  });
});
