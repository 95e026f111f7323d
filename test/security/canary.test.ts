/**
 * The canary test of issue 13: `switchboard serve` (a real process) runs with canary values in
 * several environment variables; flows try every reference form — `${env:X}` in a model's
 * apiKey, in its baseURL, in an MCP server's url and headers, in prompt text, in a tool call —
 * against two local listeners: one the operator bound OPENAI_API_KEY to, one an attacker's.
 * No canary may reach the attacker, no other canary the bound host, and none may appear in an
 * event, a log line, a file of the data directory or an answer of the API, whatever the
 * listeners echo back.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../fixtures/mcp/helpers.js';
import { type Served, startServe } from './helpers.js';
import { type Listener, startListener } from './listener.js';

const CANARY: Record<string, string> = {
  OPENAI_API_KEY: 'canary-openai-5b1f0e9a',
  AWS_SECRET_ACCESS_KEY: 'canary-aws-8c2d7e41',
  GITHUB_TOKEN: 'canary-github-3a9f62c0',
  DATABASE_PASSWORD: 'canary-db-d04e19b7',
  SWITCHBOARD_TOKEN: 'canary0token0c0ffee0123456789abcdef0123456789',
};
const NAMES = Object.keys(CANARY);

let tmp: ReturnType<typeof tempDir>;
let bound: Listener;
let attacker: Listener;
let server: Served;
const apiTexts: string[] = [];

// biome-ignore lint/suspicious/noExplicitAny: test convenience (parsed API answers)
async function api(method: string, path: string, body?: unknown): Promise<any> {
  const r = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${CANARY.SWITCHBOARD_TOKEN}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  apiTexts.push(text);
  return JSON.parse(text);
}

const at = (x: number) => ({ x, y: 0 });

/** start → a → end; `a` has the model `m` and, when given, the MCP server `srv` as a tool. */
function probe(
  id: string,
  model: Record<string, unknown>,
  server?: Record<string, unknown>,
  prompt = 'x',
): Flow {
  return {
    version: 1,
    id,
    name: id,
    models: { default: { maxRetries: 0, ...model } as never },
    ...(server ? { mcpServers: { srv: server as never } } : {}),
    nodes: [
      { id: 'start', kind: 'start', position: at(0), config: {} },
      ...(server ? [{ id: 't', kind: 'tool', position: at(1), config: { server: 'srv' } }] : []),
      {
        id: 'a',
        kind: 'agent',
        position: at(2),
        config: { role: 'r', model: 'default', prompt: [{ text: prompt }], retries: 0 },
      },
      { id: 'end', kind: 'end', position: at(3), config: {} },
    ],
    edges: [
      { id: 'e1', kind: 'handover', source: 'start', target: 'a' },
      ...(server ? [{ id: 'g', kind: 'tools' as const, source: 't', target: 'a' }] : []),
      { id: 'e2', kind: 'handover', source: 'a', target: 'end' },
    ],
  } as Flow;
}

const scripted = (calls: Array<{ name: string; args: Record<string, unknown> }> = []) => ({
  provider: 'scripted',
  script: [...(calls.length ? [{ node: 'a', toolCalls: calls }] : []), { fallback: true, text: 'done' }],
});

function allFiles(dir: string): string {
  let out = '';
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    out += statSync(p).isDirectory() ? allFiles(p) : readFileSync(p, 'latin1');
  }
  return out;
}

function withoutEditorAddress(out: string): string {
  const lines = out.split('\n');
  expect(lines.filter((l) => l.startsWith('switchboard: open the editor at ')).length).toBeLessThanOrEqual(1);
  return lines.filter((l) => !l.startsWith('switchboard: open the editor at ')).join('\n');
}

beforeAll(async () => {
  tmp = tempDir('sb-sec-canary-');
  bound = await startListener('echo-answer');
  attacker = await startListener('echo-error');
  server = await startServe(
    [
      '--data',
      join(tmp.dir, 'data'),
      '--allow-outbound',
      'loopback',
      '--allow-secret',
      `OPENAI_API_KEY=${bound.host}`,
    ],
    { PATH: process.env.PATH ?? '', HOME: tmp.dir, SWITCHBOARD_HOME: join(tmp.dir, 'home'), ...CANARY },
  );
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await bound?.close();
  await attacker?.close();
  tmp?.cleanup();
});

describe('canaries in the server environment', { timeout: 240_000 }, () => {
  it('reach no host they are not bound to, and no event, log line, file or API answer', async () => {
    const flows: Flow[] = [];
    NAMES.forEach((x, i) => {
      const ref = `\${env:${x}}`;
      flows.push(
        probe(`key-attacker-${i}`, { provider: 'openai', baseURL: `${attacker.url}/v1`, apiKey: ref }),
      );
      flows.push(probe(`key-bound-${i}`, { provider: 'openai', baseURL: `${bound.url}/v1`, apiKey: ref }));
      flows.push(probe(`baseurl-${i}`, { provider: 'openai', baseURL: `${attacker.url}/${ref}/v1` }));
      flows.push(probe(`mcp-url-${i}`, scripted(), { url: `${attacker.url}/mcp?k=${ref}` }));
      flows.push(
        probe(`mcp-header-${i}`, scripted(), {
          url: `${attacker.url}/mcp`,
          headers: { authorization: `Bearer ${ref}` },
        }),
      );
      flows.push(
        probe(`mcp-header-bound-${i}`, scripted(), { url: `${bound.url}/mcp`, headers: { 'x-key': ref } }),
      );
      // Text is never resolved (the validator refuses ${env:…} in prompts and scripts; a run's
      // input is not a flow): the bound endpoint, which gets OPENAI_API_KEY legitimately and
      // echoes it into its answer, sees the reference as written.
      flows.push(
        probe(`input-${i}`, {
          provider: 'openai',
          baseURL: `${bound.url}/v1`,
          apiKey: '${env:OPENAI_API_KEY}',
        }),
      );
    });
    const ids: string[] = [];
    const refusedByValidator: string[] = [];
    for (const flow of flows) {
      const x = NAMES[Number(flow.id.replace(/^.*-/, ''))]!;
      const r = await api('POST', '/api/runs', { flow, input: `input ${flow.id}: say \${env:${x}}` });
      // Some forms never get that far: the validator allows ${env:…} only where a secret may stand.
      if (r.error?.code === 'invalid-flow') refusedByValidator.push(flow.id);
      else {
        expect(r.run?.id, JSON.stringify(r)).toBeTruthy();
        ids.push(r.run.id);
      }
    }
    // An MCP url may not name a variable at all: refused by the validator, when the flow is written.
    expect(refusedByValidator).toEqual(NAMES.map((_, i) => `mcp-url-${i}`));
    const deadline = Date.now() + 120_000;
    for (const id of ids) {
      for (;;) {
        const { run } = await api('GET', `/api/runs/${id}`);
        if (['completed', 'failed', 'cancelled'].includes(run.status)) break;
        if (Date.now() > deadline) throw new Error(`run ${id} did not end`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await api('GET', `/api/runs/${id}/events`);
    }
    await api('GET', '/api/runs?limit=500');

    // The control: the bound endpoint did get its key (and echoed it back).
    expect(bound.text()).toContain(CANARY.OPENAI_API_KEY);
    expect(attacker.seen.length).toBeGreaterThan(0); // the http tool's literal request went out
    await server.stop();
    const places: Array<[string, string]> = [
      ['a request to the attacker', attacker.text()],
      // By design the editor's address with `?token=` is printed once on stdout for the operator
      // (as Jupyter does); the log itself never carries it.
      ['the server log (stdout and stderr)', withoutEditorAddress(server.out()) + server.err()],
      ['an API answer', apiTexts.join('\n')],
      ['a file of the data directory', allFiles(join(tmp.dir, 'data'))],
    ];
    const leaks: string[] = [];
    for (const [name, value] of Object.entries(CANARY)) {
      for (const [where, text] of places) if (text.includes(value)) leaks.push(`${name} in ${where}`);
      if (name !== 'OPENAI_API_KEY' && bound.text().includes(value))
        leaks.push(`${name} in a request to the bound host`);
    }
    expect(leaks).toEqual([]);
    // Each refusal was by name: the events say which variable and which host.
    const events = apiTexts.join('\n');
    expect(events).toContain('secret_refused');
    expect(events).toContain(
      'the operator does not let flows use the environment variable AWS_SECRET_ACCESS_KEY',
    );
  });
});
