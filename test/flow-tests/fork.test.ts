/**
 * Fork and re-run from a node: a scripted run of the rawko flow (real built-in MCP servers, the
 * shell approved) forked at the reviewer with a different reply. The fork replays the recorded
 * run up to the reviewer's first model call — no model is called and no tool runs upstream —
 * then goes live: the reviewer asks for changes, the arbiter sends the work back to the
 * developer (an edge the recorded run never took), and the run ends on a second review.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { normalizeEvents } from '../../runtime/src/cassette/compare.js';
import { ForkError, forkRunOptions, parseForkAt, planFork } from '../../runtime/src/cassette/fork.js';
import { recordingModels } from '../../runtime/src/engine/testing/index.js';
import type { RunOptions } from '../../runtime/src/index.js';
import { runFlow } from '../../runtime/src/index.js';
import { approveFlow } from '../../runtime/src/mcp/consent.js';
import { TrustStore } from '../../runtime/src/mcp/trust.js';
import { createMcpToolHost } from '../../runtime/src/tools/mcp-host.js';
import { FLOWS_DIR, handovers, ofType, runSeed, seedSuite } from '../seeds/helpers.js';
import { editedRawko, GUIDANCE, INPUT } from './rawko-fork.js';

const { flow, root } = seedSuite('rawko', 'fork');

function trusted(dir: string, f: Flow): TrustStore {
  const trust = new TrustStore(join(dir, 'trust.json'));
  approveFlow(trust, f);
  return trust;
}

/** Events up to (not including) the first of `type` by `nodeId`, normalised, without the fork's own field. */
function before(events: readonly RunEvent[], type: string, nodeId: string): unknown[] {
  const i = events.findIndex((e) => e.type === type && e.nodeId === nodeId);
  return normalizeEvents(events.slice(0, i)).map((e) => {
    const { forkedFrom: _f, ...rest } = e;
    return rest;
  });
}

describe('fork and re-run from a node', () => {
  it('rawko forked at the reviewer with a different reply takes another path; nothing upstream calls a model', async () => {
    const parentDir = root.sub('parent');
    const parent = await runSeed(flow, INPUT, {
      dataDir: parentDir,
      trust: trusted(parentDir, flow),
      answers: { 'ask-user': GUIDANCE },
    });
    expect(parent.result.status).toBe('completed');
    expect(handovers(parent.events)).not.toContain('review-fixes');
    const parentRunId = parent.events[0]!.runId;

    const plan = planFork(
      parentRunId,
      { flow, input: INPUT, events: parent.events },
      parseForkAt('reviewer'),
    );
    expect(plan.answers['ask-user']).toEqual([GUIDANCE]);

    const forked = editedRawko(flow);
    const forkDir = root.sub('fork');
    const live = recordingModels();
    const events: RunEvent[] = [];
    const options: RunOptions = {
      models: live.factory,
      tools: createMcpToolHost(forked, { trust: trusted(forkDir, forked), baseDir: FLOWS_DIR }),
      dataDir: forkDir,
      humanInput: 'fail',
      onEvent: (e) => events.push(e),
    };
    const forker = forkRunOptions(plan, options, forked);
    options.signal = forker.signal;
    const result = await runFlow(forked, plan.input, options).result;
    expect(forker.miss).toBeUndefined();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.output).toBe('LGTM after the accent fix.');

    // Another path: the reviewer's changes send the work back to the developer.
    const path = handovers(events);
    expect(path).toEqual([
      ...handovers(parent.events).slice(0, -1),
      'review-fixes',
      'dev-to-review',
      'finished',
    ]);
    expect(path).not.toEqual(handovers(parent.events));

    // Nothing upstream called a model: the first live call is the reviewer's, and the only
    // live calls are those of the reviewer, the arbiter and the developer after it.
    expect(live.requests[0]!.nodeId).toBe('reviewer');
    expect(live.requests.map((r) => r.nodeId)).toEqual([
      'reviewer',
      'arbiter',
      'developer',
      'arbiter',
      'reviewer',
      'arbiter',
    ]);
    expect(forker.liveCalls).toBe(live.requests.length);
    const parentCalls = ofType(parent.events, 'model.completed').length;
    const reviewerAt = parent.events.findIndex((e) => e.type === 'model.request' && e.nodeId === 'reviewer');
    expect(forker.replayedCalls).toBe(ofType(parent.events.slice(0, reviewerAt), 'model.completed').length);
    expect(forker.replayedCalls).toBeLessThan(parentCalls);
    // …and no tool ran upstream: the developer's recorded writes did not happen again.
    expect(existsSync(join(forkDir, 'repo', 'slug.mjs'))).toBe(false);
    expect(existsSync(join(parentDir, 'repo', 'slug.mjs'))).toBe(true);

    // The state up to the fork point is the recorded one, event for event.
    expect(before(events, 'model.request', 'reviewer')).toEqual(
      before(parent.events, 'model.request', 'reviewer'),
    );
    expect(events[0]).toMatchObject({
      type: 'run.started',
      forkedFrom: { runId: parentRunId, nodeId: 'reviewer', turn: 1 },
    });
  });

  it('a flow edited above the fork point stops the fork with the cassette_miss, before any live call', async () => {
    const parentDir = root.sub('parent-2');
    const parent = await runSeed(flow, INPUT, {
      dataDir: parentDir,
      trust: trusted(parentDir, flow),
      answers: { 'ask-user': GUIDANCE },
    });
    const plan = planFork('p2', { flow, input: INPUT, events: parent.events }, parseForkAt('reviewer'));
    const forked = editedRawko(flow);
    const planner = forked.nodes.find((n) => n.id === 'planner')!;
    (planner.config.prompt as Array<{ text: string }>)[0]!.text += ' Plan in French.';
    const live = recordingModels();
    const options: RunOptions = { models: live.factory, humanInput: 'fail', dataDir: root.sub('fork-2') };
    const forker = forkRunOptions(plan, options, forked);
    options.signal = forker.signal;
    const result = await runFlow(forked, plan.input, options).result;
    expect(result.status).toBe('cancelled');
    expect(forker.miss).toMatchObject({ code: 'cassette_miss', kind: 'model', nodeId: 'planner' });
    expect(forker.miss!.message).toContain('Plan in French.');
    expect(live.requests).toEqual([]);
  });

  it('a fork point the run never reached, or an unknown node, is a named error', () => {
    const events: RunEvent[] = [];
    expect(() => parseForkAt('reviewer:0')).toThrow(ForkError);
    expect(() => parseForkAt(':2')).toThrow('expected NODE or NODE:TURN');
    expect(parseForkAt('a:b:3')).toEqual({ nodeId: 'a:b', turn: 3 });
    expect(() => planFork('r1', { flow, input: INPUT, events }, { nodeId: 'reviewer', turn: 1 })).toThrow(
      'node "reviewer" made no model call in run r1',
    );
    expect(() => planFork('r1', { flow, input: INPUT, events }, { nodeId: 'nobody', turn: 1 })).toThrow(
      'run r1 has no node "nobody"',
    );
  });
});
