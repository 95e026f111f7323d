/**
 * The server scenarios of the official MCP conformance suite that apply to a flow server (the
 * list conformance.test.ts runs against `switchboard mcp FLOW --http`), here against `/mcp` of a
 * real `switchboard serve` process: its stored flows are the tools. Expected failures are the
 * `serve` section of expected-failures.yml (the suite reads only `client` and `server`, so the
 * section is handed to it as its `server` list); the suite exits non-zero for an unlisted failure
 * and for a listed scenario that passes. Beyond the suite's verdict, every check that did not
 * pass is compared with NOT_PASSING below, so a listed scenario cannot start failing for
 * another reason unnoticed.
 *
 * The token: the suite's server mode takes only `--url` and connects with a bare
 * StreamableHTTPClientTransport (no header option, no environment variable; checked in 0.1.16),
 * and the server reads a token only from `Authorization: Bearer` for HTTP requests (`?token=` is
 * for WebSocket upgrades). So serve runs as an operator runs it by default: on 127.0.0.1 with no
 * SWITCHBOARD_TOKEN, where the guard (runtime/src/server/guard.ts) checks Host and Origin but asks
 * no token. That `/mcp` refuses a missing or wrong token when one is set is tested with a stock
 * SDK client in test/mcp/serve-mcp.test.ts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectedFailures,
  HERE,
  listedScenarios,
  pool,
  REPO,
  report,
  runSuite,
  SERVER_SCENARIOS,
  SPEC,
  TS,
} from './suite.js';

/**
 * The stored flows. `test_reconnection` and `test_error_handling` carry the names of the test
 * tools the suite calls (server-sse-polling, tools-call-error): with them those scenarios run a
 * real flow (one that answers, one whose model has no reply) instead of meeting "unknown tool".
 */
const FLOWS = [
  join(REPO, 'test/mcp/fixtures/ask-flow.json'),
  join(HERE, 'fixtures/test_reconnection.json'),
  join(HERE, 'fixtures/test_error_handling.json'),
];

/**
 * Every check (by the suite's check id) that may end other than SUCCESS or INFO, per scenario;
 * the reasons are in expected-failures.yml under `serve`.
 */
const NOT_PASSING: Record<string, string[]> = {
  'server-sse-polling': ['server-sse-priming-event', 'server-sse-retry-field'],
};

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

/** The checks.json the suite wrote under `dir` (one run per directory). */
function checksIn(dir: string): Check[] {
  const runs = readdirSync(dir);
  if (runs.length !== 1) throw new Error(`expected one result directory in ${dir}, found ${runs.join(', ')}`);
  return JSON.parse(readFileSync(join(dir, runs[0]!, 'checks.json'), 'utf8')) as Check[];
}

describe('MCP conformance suite against `switchboard serve` /mcp', () => {
  let server: ChildProcess | undefined;
  let home: string;
  let url: string;
  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'sb-conformance-serve-'));
    server = spawn(
      process.execPath,
      [
        ...TS,
        join(REPO, 'test/fixtures/mcp/cli-entry.ts'),
        'serve',
        '--port',
        '0',
        '--data',
        join(home, 'data'),
      ],
      {
        cwd: home,
        // No SWITCHBOARD_TOKEN: see the top of this file.
        env: { PATH: process.env.PATH ?? '', HOME: home, SWITCHBOARD_HOME: join(home, 'sb') },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const t = setTimeout(() => reject(new Error(`no /mcp address from switchboard serve: ${out}`)), 60_000);
      const read = (c: Buffer) => {
        out += c.toString();
        const m = /MCP tools at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(out);
        if (m) {
          clearTimeout(t);
          resolve(m[1]!);
        }
      };
      server!.stdout!.on('data', read);
      server!.stderr!.on('data', read);
    });
    // Stored through the REST API, as the editor stores them.
    for (const f of FLOWS) {
      const r = await fetch(new URL('/api/flows', url), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: readFileSync(f, 'utf8'),
      });
      expect(r.status, `${f}: ${await r.clone().text()}`).toBe(201);
    }
  }, 90_000);
  afterAll(() => {
    server?.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  });

  it('passes the server scenarios that apply to a flow server (or fails only as the `serve` section says)', async () => {
    const listed = await runSuite(['list', '--server', '--spec-version', SPEC]);
    const known = new Set(listedScenarios(listed.output));
    // A scenario renamed or dropped by a newer suite must not pass here by not running.
    expect(SERVER_SCENARIOS.filter((s) => !known.has(s))).toEqual([]);
    const expected = expectedFailures('serve');
    expect(expected.filter((s) => !SERVER_SCENARIOS.includes(s))).toEqual([]);
    const baseline = join(home, 'expected-failures.yml');
    writeFileSync(baseline, `server:\n${expected.map((s) => `  - ${s}\n`).join('')}`);
    const outcomes = await pool(
      SERVER_SCENARIOS.map(
        (s) => () =>
          runSuite([
            'server',
            '--url',
            url,
            '--scenario',
            s,
            '--expected-failures',
            baseline,
            '--output-dir',
            join(home, 'results', s),
          ]),
      ),
      3,
    );
    expect(report(outcomes)).toBe('');
    const notPassing = new Map<string, string[]>();
    for (const s of SERVER_SCENARIOS) {
      const bad = checksIn(join(home, 'results', s)).filter(
        (c) => c.status !== 'SUCCESS' && c.status !== 'INFO',
      );
      if (bad.length > 0) notPassing.set(s, [...new Set(bad.map((c) => c.id))].sort());
    }
    expect(Object.fromEntries(notPassing)).toEqual(NOT_PASSING);
  }, 180_000);
});
