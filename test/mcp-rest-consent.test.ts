/**
 * Consent through the REST API: flows holding known-dangerous stdio commands are written with
 * the API and run with the API, using the server's own tool wiring. No command is spawned (each
 * form would leave a marker file), every run ends failed naming the command line, and REST has
 * no way to approve. After the operator approves one form locally, it does run — the control
 * that shows the markers would have caught a spawn.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveFlow } from '../runtime/src/mcp/consent.js';
import { shutdownMcpPool } from '../runtime/src/mcp/pool.js';
import { TrustStore } from '../runtime/src/mcp/trust.js';
import { prepareDangerousForms } from './fixtures/mcp/dangerous.js';
import { type ServerCfg, tempDir } from './fixtures/mcp/helpers.js';
import { testServer, until } from './server/helpers.js';

function flowWith(id: string, server: ServerCfg): Flow {
  return {
    version: 1,
    id,
    name: id,
    models: {
      default: {
        provider: 'scripted',
        script: [
          { node: 'a', toolCalls: [{ name: 't__echo', args: { text: 'x' } }] },
          { fallback: true, text: 'done' },
        ],
      },
    },
    mcpServers: { s: server },
    nodes: [
      { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
      { id: 't', kind: 'tool', position: { x: 0, y: 1 }, config: { server: 's' } },
      {
        id: 'a',
        kind: 'agent',
        position: { x: 1, y: 0 },
        config: { role: 'r', model: 'default', prompt: [{ text: 'x' }] },
      },
      { id: 'end', kind: 'end', position: { x: 2, y: 0 }, config: {} },
    ],
    edges: [
      { id: 'e1', kind: 'handover', source: 'start', target: 'a' },
      { id: 'g', kind: 'tools', source: 't', target: 'a' },
      { id: 'e2', kind: 'handover', source: 'a', target: 'end' },
    ],
  };
}

let tmp: ReturnType<typeof tempDir>;
let s: Awaited<ReturnType<typeof testServer>>;
const savedHome = process.env.SWITCHBOARD_HOME;
beforeAll(async () => {
  tmp = tempDir('sb-rest-consent-');
  process.env.SWITCHBOARD_HOME = join(tmp.dir, 'home');
  s = await testServer();
});
afterAll(async () => {
  await s?.close();
  await shutdownMcpPool();
  if (savedHome === undefined) delete process.env.SWITCHBOARD_HOME;
  else process.env.SWITCHBOARD_HOME = savedHome;
  tmp?.cleanup();
});

const json = (body: unknown) => ({
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

describe('dangerous commands arriving through the REST API', { timeout: 120_000 }, () => {
  it('are never spawned without the local operator’s consent', async () => {
    const { markers, forms } = prepareDangerousForms(tmp.dir);
    expect(forms.length).toBeGreaterThanOrEqual(25);
    let refusedAtWrite = 0;
    const runIds: Array<{ id: string; form: number }> = [];
    for (const [i, form] of forms.entries()) {
      const put = await s.req({
        method: 'PUT',
        url: `/api/flows/evil${i}`,
        ...json(flowWith(`evil${i}`, form)),
      });
      if (put.statusCode >= 400) {
        refusedAtWrite++;
        continue;
      }
      const r = await s.req({
        method: 'POST',
        url: '/api/runs',
        ...json({ flowId: `evil${i}`, input: 'go' }),
      });
      expect(r.statusCode).toBe(201);
      runIds.push({ id: r.json().run.id, form: i });
    }
    expect(runIds.length + refusedAtWrite).toBe(forms.length);
    for (const { id, form } of runIds) {
      const run = await until(async () => {
        const got = (await s.req({ method: 'GET', url: `/api/runs/${id}` })).json().run;
        return ['completed', 'failed', 'cancelled'].includes(got.status) ? got : undefined;
      }, `run of form ${form}`);
      expect(run.status, `form ${form}`).toBe('failed');
      expect(JSON.stringify(run.error ?? run)).toContain('not approved by the local operator');
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(readdirSync(markers)).toEqual([]);

    // Approving form 15 for another flow approves nothing here.
    approveFlow(new TrustStore(), flowWith('elsewhere', forms[15]!));
    const r0 = await s.req({ method: 'POST', url: '/api/runs', ...json({ flowId: 'evil15', input: 'go' }) });
    const id0 = r0.json().run.id;
    const refused = await until(async () => {
      const got = (await s.req({ method: 'GET', url: `/api/runs/${id0}` })).json().run;
      return ['completed', 'failed'].includes(got.status) ? got : undefined;
    }, 'run for another flow’s approval');
    expect(refused.status).toBe('failed');
    expect(readdirSync(markers)).toEqual([]);

    // Control: approved locally for this flow (as `switchboard trust` would), form 15 runs and leaves its marker.
    approveFlow(new TrustStore(), flowWith('evil15', forms[15]!));
    const r = await s.req({ method: 'POST', url: '/api/runs', ...json({ flowId: 'evil15', input: 'go' }) });
    const id = r.json().run.id;
    await until(async () => {
      const got = (await s.req({ method: 'GET', url: `/api/runs/${id}` })).json().run;
      return ['completed', 'failed'].includes(got.status);
    }, 'approved run');
    expect(existsSync(join(markers, 'm15'))).toBe(true);
  });
});
