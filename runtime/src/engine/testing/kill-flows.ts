/**
 * The flows of the kill battery and of the takeover tests, shared by the engine's own tests and
 * the cross-package ones (test/crash/fixture.ts re-exports them). The battery: a planner that
 * calls the tool `count`, a group chat (alice calling it too, bob), a closer that calls it again.
 */
import type { Flow } from '@switchboard/schemas';
import { agent, edge, flow, node } from './flows.js';

export const FINAL_OUTPUT = 'closed';

export function batteryFlow(latencyMs = 15): Flow {
  const f = flow(
    [
      node('start', 'start'),
      agent('planner'),
      node('room', 'team', { mode: 'groupChat', termination: { maxTurns: 4 } }),
      agent('alice', {}, { parent: 'room' }),
      agent('bob', {}, { parent: 'room' }),
      agent('closer'),
      node('t', 'tool', { server: 'fixture' }),
      node('end', 'end'),
    ],
    [
      edge('start', 'planner'),
      edge('planner', 'room'),
      edge('room', 'closer'),
      edge('closer', 'end'),
      edge('t', 'planner', 'tools'),
      edge('t', 'alice', 'tools'),
      edge('t', 'closer', 'tools'),
    ],
    [],
    { mcpServers: { fixture: { builtin: 'state' } } },
  );
  return {
    ...f,
    id: 'battery',
    name: 'Kill battery',
    models: {
      default: {
        provider: 'scripted',
        latencyMs,
        script: [
          { node: 'planner', toolCalls: [{ name: 'count', args: { k: 'planner' } }] },
          { node: 'planner', text: 'plan' },
          { node: 'alice', toolCalls: [{ name: 'count', args: { k: 'alice' } }] },
          { node: 'alice', text: 'a1', deltas: ['a', '1'] },
          { node: 'bob', text: 'b1', deltas: ['b', '1'] },
          { node: 'alice', text: 'a2' },
          { node: 'bob', text: 'b2' },
          { node: 'closer', toolCalls: [{ name: 'count', args: { k: 'closer' } }] },
          { node: 'closer', text: FINAL_OUTPUT },
        ],
      },
    },
  };
}

/**
 * Two parallel branches that each call `count`: p1's reply after its tool call takes `slowMs`,
 * so p2's turn (its tool call, its reply) ends while that call is in flight. Output `joined`.
 */
export function parallelSlowFlow(slowMs: number): Flow {
  return {
    ...flow(
      [
        node('start', 'start'),
        agent('p1'),
        agent('p2'),
        agent('joiner'),
        node('t', 'tool', { server: 'fixture' }),
        node('end', 'end'),
      ],
      [
        edge('start', 'p1'),
        edge('start', 'p2'),
        edge('p1', 'joiner'),
        edge('p2', 'joiner'),
        edge('joiner', 'end'),
        edge('t', 'p1', 'tools'),
        edge('t', 'p2', 'tools'),
      ],
      [
        { node: 'p1', toolCalls: [{ name: 'count', args: { k: 'p1' } }] },
        { node: 'p1', text: 'one', latencyMs: slowMs },
        { node: 'p2', toolCalls: [{ name: 'count', args: { k: 'p2' } }], latencyMs: 20 },
        { node: 'p2', text: 'two' },
        { node: 'joiner', text: 'joined' },
      ],
      { mcpServers: { fixture: { builtin: 'state' } } },
    ),
    id: 'parallel-slow',
    name: 'Parallel, one slow reply',
  };
}
