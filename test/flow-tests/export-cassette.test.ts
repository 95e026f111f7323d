/**
 * A served run exported as a cassette: shipped examples run on the server through the `openai`
 * provider against the fake OpenAI-compatible server; `GET /api/runs/:id/cassette` builds the
 * cassette from the run's log; with the fake server stopped, `switchboard replay` of the export
 * (and `switchboard replay RUN_ID --data DIR`) re-executes the run from it alone and gives the
 * same events, timestamps and run ids aside.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { checkCassette } from '../../runtime/src/cassette/file.js';
import { replayCassette } from '../../runtime/src/cassette/replay-run.js';
import { startFakeOpenAIServer } from '../../runtime/src/models/testing/fake-openai-server.js';
import { cannedReplies, openaiFlow } from '../seeds/helpers.js';
import { testServer, until } from '../server/helpers.js';
import { cli } from '../support/cli.js';

const FLOWS = fileURLToPath(new URL('../../flows/', import.meta.url));
process.env.OPENAI_API_KEY ??= 'sk-fake';

function strip(events: readonly RunEvent[]): unknown[] {
  const ids = new Map<string, string>();
  const id = (v: string) => {
    if (!ids.has(v)) ids.set(v, `r${ids.size}`);
    return ids.get(v)!;
  };
  return events.map((e) => {
    const { ts: _ts, ...o } = e as RunEvent & Record<string, unknown>;
    o.runId = id(e.runId);
    if (typeof o.parentRunId === 'string') o.parentRunId = id(o.parentRunId);
    return o;
  });
}

describe('GET /api/runs/:id/cassette and switchboard replay RUN_ID', () => {
  it.each(['ironbox', 'common-ground', 'agent-ops-room'])(
    '%s: a served run replays from its export with the model server stopped',
    async (name) => {
      const flow = JSON.parse(readFileSync(join(FLOWS, `${name}.json`), 'utf8')) as Flow;
      const input = (flow.metadata as { examples: Array<{ input: string }> }).examples[0]!.input;
      const fake = await startFakeOpenAIServer(cannedReplies(flow));
      const server = await testServer({ allowOutbound: ['loopback'] });
      try {
        const start = await server.req({
          method: 'POST',
          url: '/api/runs',
          payload: JSON.stringify({ flow: openaiFlow(flow, fake.url), input }),
          headers: { 'content-type': 'application/json' },
        });
        expect(start.statusCode, start.body).toBe(201);
        const runId = start.json().run.id as string;
        const run = await until(async () => {
          const r = (await server.req({ method: 'GET', url: `/api/runs/${runId}` })).json().run;
          return r.status !== 'running' && r.status !== 'queued' && !r.live ? r : undefined;
        }, `run ${runId} to end`);
        expect(run.status, JSON.stringify(run.error)).toBe('completed');
        const calls = fake.requests.length;
        expect(calls).toBeGreaterThan(0);
        const logged = (
          await server.req({ method: 'GET', url: `/api/runs/${runId}/events?limit=10000` })
        ).json().events as RunEvent[];

        const res = await server.req({ method: 'GET', url: `/api/runs/${runId}/cassette` });
        expect(res.statusCode, res.body).toBe(200);
        const checked = checkCassette(res.json());
        if (!checked.ok) throw new Error(checked.message);
        const cassette = checked.cassette;
        expect(cassette.models.length).toBe(logged.filter((e) => e.type === 'model.completed').length);
        const toolCalls = logged.filter(
          (e) =>
            e.type === 'tool.called' && cassette.toolSets.some((s) => s.tools.some((t) => t.name === e.tool)),
        );
        expect(cassette.tools.length).toBe(toolCalls.length);
        if (name !== 'agent-ops-room') expect(cassette.tools.length).toBeGreaterThan(0);

        await fake.close();
        const replay = await replayCassette(cassette);
        expect(replay.miss, replay.miss?.message).toBeUndefined();
        expect(replay.result.status).toBe('completed');
        expect(replay.modelCalls).toBe(cassette.models.length);
        expect(strip(replay.events)).toEqual(strip(logged));
        expect(fake.requests.length).toBe(calls);

        const file = join(server.dir, `${name}.cassette.json`);
        writeFileSync(file, res.body);
        const fromFile = await cli('replay', file);
        expect(fromFile.code, fromFile.err + fromFile.out).toBe(0);
        expect(fromFile.out).toContain('replay matches the recording');

        // From the data directory, beside the running server (no lock is taken).
        const fromRun = await cli('replay', runId, '--data', server.dir);
        expect(fromRun.code, fromRun.err + fromRun.out).toBe(0);
        expect(fromRun.out).toContain('replay matches the recording');
      } finally {
        await fake.close().catch(() => {});
        await server.close();
      }
    },
  );

  it('an unknown run is a 404 over REST and a usage error on the command line', async () => {
    const server = await testServer();
    try {
      const res = await server.req({ method: 'GET', url: '/api/runs/r-nope/cassette' });
      expect(res.statusCode).toBe(404);
      const r = await cli('replay', 'r-nope', '--data', server.dir);
      expect(r.code).toBe(2);
      expect(r.err).toContain('no run r-nope');
    } finally {
      await server.close();
    }
  });
});
