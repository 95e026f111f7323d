/**
 * Issue 13, hole 1: consent belonged to a command line, not to a flow. After the documented
 * `switchboard trust flows/rawko.json`, any other flow repeating rawko's shell options was
 * approved too, and `node -e` ran whatever the flow's author wrote — through an inline flow in
 * `POST /api/runs`, through `POST /api/flows` then a run, and through an approved flow edited by
 * PUT. Each form below tries to leave a marker file; none may, and each run fails naming the
 * approval it lacks. Control: a flow the operator approved with the CLI does leave its marker.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownMcpPool } from '../../runtime/src/mcp/pool.js';
import { tempDir } from '../fixtures/mcp/helpers.js';
import { testServer } from '../server/helpers.js';
import { finished, json, REPO, runCli, shellCallFlow, shippedFlow } from './helpers.js';

let tmp: ReturnType<typeof tempDir>;
let s: Awaited<ReturnType<typeof testServer>>;
let cliEnv: Record<string, string>;
const savedHome = process.env.SWITCHBOARD_HOME;

const rawko = shippedFlow('rawko');
const rawkoShell = rawko.mcpServers!['sandbox-shell']!;
const marker = (name: string) => join(tmp.dir, 'markers', name);
const writeMarker = (name: string) => [
  '-e',
  `require('fs').writeFileSync(${JSON.stringify(marker(name))}, 'x')`,
];

beforeAll(async () => {
  tmp = tempDir('sb-sec-consent-');
  mkdirSync(join(tmp.dir, 'markers'));
  const home = join(tmp.dir, 'home');
  process.env.SWITCHBOARD_HOME = home;
  cliEnv = { PATH: process.env.PATH ?? '', HOME: tmp.dir, SWITCHBOARD_HOME: home };
  // The operator approves the shipped example, as the README says.
  const trusted = await runCli(['trust', join(REPO, 'flows/rawko.json'), '--yes'], cliEnv);
  expect(trusted.code, trusted.err).toBe(0);
  s = await testServer();
}, 120_000);
afterAll(async () => {
  await s?.close();
  await shutdownMcpPool();
  if (savedHome === undefined) delete process.env.SWITCHBOARD_HOME;
  else process.env.SWITCHBOARD_HOME = savedHome;
  tmp?.cleanup();
});

async function expectRefused(runId: string, flowId: string, name: string): Promise<void> {
  const run = await finished(s.req, runId);
  expect(run.status, name).toBe('failed');
  const msg = run.error?.message ?? '';
  expect(msg, name).toContain('not approved');
  expect(msg, name).toContain(`switchboard trust`);
  expect(msg, name).toContain(flowId);
  expect(existsSync(marker(name)), `${name} ran`).toBe(false);
}

describe('consent belongs to a flow', { timeout: 120_000 }, () => {
  it('a different flow with rawko’s shell options is refused (inline flow in POST /api/runs)', async () => {
    const evil = shellCallFlow('not-rawko', rawkoShell, 'node', writeMarker('inline'));
    const r = await s.req({ method: 'POST', url: '/api/runs', ...json({ flow: evil, input: 'go' }) });
    expect(r.statusCode).toBe(201);
    await expectRefused(r.json().run.id, 'not-rawko', 'inline');
  });

  it('a different flow stored with POST /api/flows and then run is refused', async () => {
    const evil = shellCallFlow('stored-evil', rawkoShell, 'node', writeMarker('stored'));
    expect((await s.req({ method: 'POST', url: '/api/flows', ...json(evil) })).statusCode).toBe(201);
    const r = await s.req({
      method: 'POST',
      url: '/api/runs',
      ...json({ flowId: 'stored-evil', input: 'go' }),
    });
    expect(r.statusCode).toBe(201);
    await expectRefused(r.json().run.id, 'stored-evil', 'stored');
  });

  it('the approved flow whose server definition changed (PUT) is refused until re-approved', async () => {
    const edited = {
      ...rawkoShell,
      options: { ...(rawkoShell as { options: Record<string, unknown> }).options, allow: ['node', 'sh'] },
    };
    const evil = shellCallFlow('rawko', edited, 'node', writeMarker('edited'));
    expect((await s.req({ method: 'PUT', url: '/api/flows/rawko', ...json(evil) })).statusCode).toBeLessThan(
      300,
    );
    const r = await s.req({ method: 'POST', url: '/api/runs', ...json({ flowId: 'rawko', input: 'go' }) });
    await expectRefused(r.json().run.id, 'rawko', 'edited');
    // The same edit inline is refused the same way.
    const inline = shellCallFlow('rawko', edited, 'node', writeMarker('edited-inline'));
    const r2 = await s.req({ method: 'POST', url: '/api/runs', ...json({ flow: inline, input: 'go' }) });
    await expectRefused(r2.json().run.id, 'rawko', 'edited-inline');
  });

  it('rawko approves only `node --test`: its own approval cannot run `node -e`', async () => {
    expect((rawkoShell as { options?: { allow?: unknown } }).options?.allow).toEqual(['node --test']);
    const same = shellCallFlow('rawko', rawkoShell, 'node', writeMarker('narrow'));
    const r = await s.req({ method: 'POST', url: '/api/runs', ...json({ flow: same, input: 'go' }) });
    const id = r.json().run.id as string;
    await finished(s.req, id);
    const events = (await s.req({ method: 'GET', url: `/api/runs/${id}/events` })).json().events as Array<{
      type: string;
      result?: { content: string };
    }>;
    const result = events.find((e) => e.type === 'tool.result');
    expect(JSON.stringify(result)).toContain('is not in the allow-list (node --test …)');
    expect(existsSync(marker('narrow'))).toBe(false);
  });

  it('control: a flow the operator approved with the CLI runs its command', async () => {
    const ok = shellCallFlow(
      'operator-ok',
      { builtin: 'shell', options: { enabled: true, allow: ['node'] } },
      'node',
      writeMarker('control'),
    );
    const file = join(tmp.dir, 'operator-ok.json');
    writeFileSync(file, JSON.stringify(ok));
    const trusted = await runCli(['trust', file, '--yes'], cliEnv);
    expect(trusted.code, trusted.err).toBe(0);
    const r = await s.req({ method: 'POST', url: '/api/runs', ...json({ flow: ok, input: 'go' }) });
    const run = await finished(s.req, r.json().run.id);
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(existsSync(marker('control'))).toBe(true);
  });
});
