/**
 * Fork over REST and from the command line: a rawko run on the server through the `openai`
 * provider against a fake OpenAI-compatible server (its shell approved in a temporary
 * SWITCHBOARD_HOME, the person's answer sent as a command) is forked at the reviewer with a
 * different reply, by `POST /api/runs {flow, fromRun, at}` and by `switchboard run FLOW --from
 * RUN_ID --at reviewer --data DIR`. The first model server is stopped before the forks; each
 * fork's own server sees only the calls from the reviewer on.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { afterAll, describe, expect, it } from 'vitest';
import { approveFlow } from '../../runtime/src/mcp/consent.js';
import { TrustStore } from '../../runtime/src/mcp/trust.js';
import { startFakeOpenAIServer } from '../../runtime/src/models/testing/fake-openai-server.js';
import { cannedReplies, handovers, loadFlow, openaiFlow, systemMarker } from '../seeds/helpers.js';
import { testServer, until } from '../server/helpers.js';
import { cli } from '../support/cli.js';
import { editedRawko, GUIDANCE, INPUT } from './rawko-fork.js';

const flow = loadFlow('rawko');
const home = mkdtempSync(join(tmpdir(), 'sb-fork-home-'));
const priorHome = process.env.SWITCHBOARD_HOME;
process.env.SWITCHBOARD_HOME = home;
process.env.OPENAI_API_KEY ??= 'sk-fake';
approveFlow(new TrustStore(join(home, 'trust.json')), flow);
afterAll(() => {
  if (priorHome === undefined) delete process.env.SWITCHBOARD_HOME;
  else process.env.SWITCHBOARD_HOME = priorHome;
  rmSync(home, { recursive: true, force: true });
});

type Server = Awaited<ReturnType<typeof testServer>>;
const json = { 'content-type': 'application/json' };

async function events(server: Server, runId: string): Promise<RunEvent[]> {
  return (await server.req({ method: 'GET', url: `/api/runs/${runId}/events?limit=10000` })).json().events;
}

async function ended(server: Server, runId: string) {
  return until(async () => {
    const r = (await server.req({ method: 'GET', url: `/api/runs/${runId}` })).json().run;
    return ['completed', 'failed', 'cancelled'].includes(r.status) && !r.live ? r : undefined;
  }, `run ${runId} to end`);
}

/** The fake server's requests, as the nodes whose system prompts they carry. */
function nodesOf(requests: ReadonlyArray<{ body: unknown }>): string[] {
  const ids = ['planner', 'developer', 'reviewer', 'debugger', 'arbiter'];
  return requests.map((r) => {
    const text = JSON.stringify((r.body as { messages?: unknown }).messages ?? []);
    return ids.find((id) => text.includes(JSON.stringify(systemMarker(flow, id)).slice(1, -1))) ?? '?';
  });
}

describe('fork over REST and the command line', () => {
  it('a served rawko run forked at the reviewer takes another path; upstream calls no model', async () => {
    const server = await testServer({ allowOutbound: ['loopback'] });
    const first = await startFakeOpenAIServer(cannedReplies(flow));
    try {
      const start = await server.req({
        method: 'POST',
        url: '/api/runs',
        headers: json,
        payload: JSON.stringify({ flow: openaiFlow(flow, first.url), input: INPUT }),
      });
      expect(start.statusCode, start.body).toBe(201);
      const parentId = start.json().run.id as string;
      await until(
        async () => (await events(server, parentId)).some((e) => e.type === 'input.requested'),
        'the question to the person',
      );
      const answer = await server.req({
        method: 'POST',
        url: `/api/runs/${parentId}/commands`,
        headers: json,
        payload: JSON.stringify({ type: 'answer', nodeId: 'ask-user', answer: GUIDANCE }),
      });
      expect(answer.statusCode, answer.body).toBeLessThan(300);
      const parent = await ended(server, parentId);
      expect(parent.status, JSON.stringify(parent.error)).toBe('completed');
      const parentEvents = await events(server, parentId);
      await first.close();

      // Over REST, with the edited flow pointing at a second model server.
      const second = await startFakeOpenAIServer(cannedReplies(editedRawko(flow)));
      try {
        const bad = await server.req({
          method: 'POST',
          url: '/api/runs',
          headers: json,
          payload: JSON.stringify({
            flow: openaiFlow(flow, second.url),
            fromRun: parentId,
            at: 'reviewer:2',
          }),
        });
        expect(bad.statusCode).toBe(400);
        expect(bad.json().error).toMatchObject({ code: 'bad-fork' });
        expect(bad.json().error.message).toContain('node "reviewer" had 1 turn(s)');

        const res = await server.req({
          method: 'POST',
          url: '/api/runs',
          headers: json,
          payload: JSON.stringify({
            flow: openaiFlow(editedRawko(flow), second.url),
            fromRun: parentId,
            at: 'reviewer',
          }),
        });
        expect(res.statusCode, res.body).toBe(201);
        const fork = res.json().run;
        expect(fork).toMatchObject({ parentRunId: parentId, forkedAt: { nodeId: 'reviewer', turn: 1 } });
        const done = await ended(server, fork.id);
        expect(done.status, JSON.stringify(done.error)).toBe('completed');
        expect(done.output).toBe('LGTM after the accent fix.');
        const forkEvents = await events(server, fork.id);
        expect(forkEvents[0]).toMatchObject({
          type: 'run.started',
          input: INPUT,
          forkedFrom: { runId: parentId, nodeId: 'reviewer', turn: 1 },
        });
        expect(handovers(forkEvents)).toEqual([
          ...handovers(parentEvents).slice(0, -1),
          'review-fixes',
          'dev-to-review',
          'finished',
        ]);
        // No checkpoint before the fork point: a restart never resumes it halfway through the replay.
        const liveFrom = forkEvents.find((e) => e.type === 'model.request' && e.nodeId === 'reviewer')!.seq;
        const cps = readFileSync(join(server.dir, 'runs', fork.id, 'checkpoints.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { seq: number });
        const parentCps = readFileSync(join(server.dir, 'runs', parentId, 'checkpoints.jsonl'), 'utf8');
        expect(parentCps.trim().split('\n').length).toBeGreaterThan(1);
        expect(cps.length).toBeGreaterThan(0);
        for (const c of cps) expect(c.seq).toBeGreaterThan(liveFrom);
        expect(nodesOf(second.requests)).toEqual([
          'reviewer',
          'arbiter',
          'developer',
          'arbiter',
          'reviewer',
          'arbiter',
        ]);
        const listed = (await server.req({ method: 'GET', url: '/api/runs' })).json().runs;
        expect(listed.find((r: { id: string }) => r.id === fork.id)).toMatchObject({ parentRunId: parentId });
      } finally {
        await second.close();
      }

      // From the command line, beside the running server.
      const third = await startFakeOpenAIServer(cannedReplies(editedRawko(flow)));
      try {
        const file = join(server.dir, 'rawko-edited.json');
        writeFileSync(file, JSON.stringify(editedRawko(flow)));
        const r = await cli(
          'run',
          file,
          '--from',
          parentId,
          '--at',
          'reviewer',
          '--data',
          server.dir,
          '--model',
          `default=${third.url}`,
          '--model',
          `arbiter=${third.url}`,
          '--events',
          'jsonl',
        );
        expect(r.code, r.err).toBe(0);
        const cliEvents = r.out
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as RunEvent);
        expect(cliEvents[0]).toMatchObject({ forkedFrom: { runId: parentId, nodeId: 'reviewer', turn: 1 } });
        expect(handovers(cliEvents)).toContain('review-fixes');
        expect(nodesOf(third.requests)[0]).toBe('reviewer');
        expect(nodesOf(third.requests)).not.toContain('planner');
        expect(third.requests.length).toBe(6);

        const usage = await cli('run', file, '--from', parentId, '--data', server.dir);
        expect(usage.code).toBe(2);
        expect(usage.err).toContain('--from RUN_ID and --at NODE[:TURN] go together');
        const nowhere = await cli('run', file, '--from', parentId, '--at', 'nobody', '--data', server.dir);
        expect(nowhere.code).toBe(2);
        expect(nowhere.err).toContain(`run ${parentId} has no node "nobody"`);
      } finally {
        await third.close();
      }
    } finally {
      await first.close().catch(() => {});
      await server.close();
    }
  });
});
