/**
 * A person asked through MCP elicitation during a tool call is asked inside the agent's step:
 * the wait for the answer is no boundary, so no checkpoint is cut there (a resumed run replays
 * the open step whole, against the model's script from before it). A run that crashes during
 * the wait resumes from the checkpoint before the step: it asks again, and the tool runs and
 * each scripted reply is served once in the resumed run.
 */
import { fileURLToPath } from 'node:url';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runFlow } from '../../runtime/src/engine/index.js';
import type { RunCheckpoint } from '../../runtime/src/engine/types.js';
import { approveFlow } from '../../runtime/src/mcp/consent.js';
import { createMcpToolHost } from '../../runtime/src/tools/mcp-host.js';
import { type McpTestEnv, mcpTestEnv } from '../fixtures/mcp/helpers.js';

const SERVER = fileURLToPath(new URL('./fixtures/eliciting-server.mjs', import.meta.url));

let env: McpTestEnv;
beforeEach(() => {
  env = mcpTestEnv('sb-elicit-cp-');
});
afterEach(async () => {
  await env.close();
});

const flow: Flow = {
  version: 1,
  id: 'elicit-cp',
  name: 'Elicit checkpoint',
  models: {
    default: {
      provider: 'scripted',
      script: [
        { node: 'a1', toolCalls: [{ name: 't_e__confirm', args: {} }] },
        { node: 'a1', text: 'done' },
      ],
    },
  },
  mcpServers: { e: { command: process.execPath, args: [SERVER] } },
  nodes: [
    { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
    { id: 't_e', kind: 'tool', position: { x: 0, y: 0 }, config: { server: 'e' } },
    {
      id: 'a1',
      kind: 'agent',
      position: { x: 0, y: 0 },
      config: { role: 'worker', model: 'default', prompt: [{ text: 'x' }] },
    },
    { id: 'end', kind: 'end', position: { x: 0, y: 0 }, config: {} },
  ],
  edges: [
    { id: 'e1', kind: 'handover', source: 'start', target: 'a1' },
    { id: 'g1', kind: 'tools', source: 't_e', target: 'a1' },
    { id: 'e2', kind: 'handover', source: 'a1', target: 'end' },
  ],
};

const seqOf = (events: readonly RunEvent[], type: string, nodeId: string) =>
  events.find((e) => e.type === type && e.nodeId === nodeId)!.seq;

describe('a checkpointed run whose tool asks a person (MCP elicitation)', { timeout: 60_000 }, () => {
  it('cuts no checkpoint while the step waits for the answer; resumed from a crash in the wait, it runs the step once', async () => {
    approveFlow(env.trust, flow);
    const events: RunEvent[] = [];
    const cuts: { cp: RunCheckpoint; asked: boolean; answered: boolean }[] = [];
    const h = runFlow(flow, 'x', {
      runId: 'r1',
      tools: createMcpToolHost(flow, { pool: env.pool, trust: env.trust }),
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'input.requested')
          setTimeout(() => h.send({ type: 'answer', nodeId: 'a1', answer: '{"name":"Bob"}' }), 150);
      },
      checkpoint: (cp) => {
        cuts.push({
          cp: structuredClone(cp),
          asked: events.some((e) => e.type === 'input.requested'),
          answered: events.some((e) => e.type === 'input.received'),
        });
        return undefined;
      },
    });
    const r = await h.result;
    expect(r, JSON.stringify(r.error)).toMatchObject({ status: 'completed', output: 'done' });
    const opened = seqOf(events, 'turn.started', 'a1');
    const closed = seqOf(events, 'turn.completed', 'a1');
    const inside = cuts.filter((c) => c.cp.seq >= opened && c.cp.seq < closed);
    expect(
      inside.map((c) => c.cp.seq),
      'checkpoints cut inside a1’s step',
    ).toEqual([]);

    // The process dies while the person is being asked: the run resumes from the last
    // checkpoint written by then.
    const last = cuts.filter((c) => !c.answered).at(-1)!;
    expect(last).toBeDefined();
    const resumed: RunEvent[] = [];
    const r2 = await runFlow(flow, 'x', {
      resume: last.cp,
      tools: createMcpToolHost(flow, { pool: env.pool, trust: env.trust }),
      answers: { a1: '{"name":"Bob"}' },
      onEvent: (e) => resumed.push(e),
    }).result;
    expect(r2, JSON.stringify(r2.error)).toMatchObject({ status: 'completed', output: 'done' });
    const results = resumed.filter((e) => e.type === 'tool.result') as unknown as { result: string }[];
    expect(results.map((e) => JSON.parse(e.result))).toEqual([
      { action: 'accept', content: { name: 'Bob' } },
    ]);
    expect(resumed.filter((e) => e.type === 'input.requested')).toHaveLength(1);
  });

  it('the other parallel branches go on while the person is asked, and are checkpointed once the step closes', async () => {
    const f: Flow = structuredClone(flow);
    f.models = {
      default: {
        provider: 'scripted',
        script: [
          { node: 'a1', toolCalls: [{ name: 't_e__confirm', args: {} }] },
          { node: 'a1', text: 'done' },
          { node: 'b', text: 'B' },
          { node: 'c', text: 'C' },
          { node: 'j', text: 'joined' },
        ],
      },
    };
    for (const id of ['b', 'c', 'j'])
      f.nodes.push({
        id,
        kind: 'agent',
        position: { x: 0, y: 0 },
        config: { role: 'worker', model: 'default', prompt: [{ text: 'x' }] },
      });
    f.edges = [
      { id: 'e1', kind: 'handover', source: 'start', target: 'a1' },
      { id: 'e3', kind: 'handover', source: 'start', target: 'b' },
      { id: 'e4', kind: 'handover', source: 'b', target: 'c' },
      { id: 'g1', kind: 'tools', source: 't_e', target: 'a1' },
      { id: 'e2', kind: 'handover', source: 'a1', target: 'j' },
      { id: 'e5', kind: 'handover', source: 'c', target: 'j' },
      { id: 'e6', kind: 'handover', source: 'j', target: 'end' },
    ];
    approveFlow(env.trust, f);
    const events: RunEvent[] = [];
    const cuts: number[] = [];
    let asked = false;
    const h = runFlow(f, 'x', {
      runId: 'r1',
      tools: createMcpToolHost(f, { pool: env.pool, trust: env.trust }),
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'input.requested') asked = true;
        // The person answers once the other branch's two turns are over (or after 3 s, when
        // they are held behind the open step).
        if (asked && e.type === 'turn.completed' && e.nodeId === 'c') answer();
      },
      checkpoint: (cp) => {
        cuts.push(cp.seq);
        return undefined;
      },
    });
    let answered = false;
    const answer = () => {
      if (answered) return;
      answered = true;
      h.send({ type: 'answer', nodeId: 'a1', answer: '{"name":"Bob"}' });
    };
    const fallback = setTimeout(answer, 3000);
    const r = await h.result;
    clearTimeout(fallback);
    expect(r, JSON.stringify(r.error)).toMatchObject({ status: 'completed', output: 'joined' });
    const received = seqOf(events, 'input.received', 'a1');
    expect(seqOf(events, 'turn.completed', 'c'), 'c’s turn ended before the answer').toBeLessThan(received);
    const opened = seqOf(events, 'turn.started', 'a1');
    const closed = seqOf(events, 'turn.completed', 'a1');
    expect(cuts.filter((s) => s >= opened && s < closed)).toEqual([]);
    // b's and c's turns are checkpointed once a1's step closes.
    expect(cuts.some((s) => s >= closed)).toBe(true);
  });
});
