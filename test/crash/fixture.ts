/**
 * The battery's flow and its non-idempotent tool. The flow: a planner that calls the tool, a
 * group chat (a loop of turns between alice and bob, alice calling the tool), a closer that
 * calls it again. Replies take a few ms, the tool takes longer, so kills land everywhere —
 * including while a tool call is in flight.
 */
import { appendFileSync } from 'node:fs';
import type { Flow } from '@switchboard/schemas';
import { agent, edge, flow, MemoryToolHost, node } from '../../runtime/src/engine/testing/index.js';
import type { ToolHost } from '../../runtime/src/tools/types.js';

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

/** `count` appends one line per execution to `file`: `<runId> <k>`. Not idempotent, on purpose. */
export function countingTools(file: string, delayMs = 25): (run: { flow: Flow }) => ToolHost {
  return ({ flow: f }) =>
    new MemoryToolHost(f, {
      fixture: {
        count: {
          description: 'Counts one execution (not idempotent)',
          inputSchema: { type: 'object', properties: { k: { type: 'string' } } },
          run: async (args, { host }) => {
            await new Promise((r) => setTimeout(r, delayMs / 2));
            appendFileSync(file, `${host.runId} ${String(args.k)}\n`);
            await new Promise((r) => setTimeout(r, delayMs / 2));
            return 'counted';
          },
        },
      },
    });
}

/**
 * The battery's flow with its k-th reply (1-based; the flow asks for them in script order) taking
 * `ms`: a window, wide even on a loaded machine, in which that model call is in flight.
 */
export function slowReply(latencyMs: number, k: number, ms: number): Flow {
  const f = batteryFlow(latencyMs);
  const model = f.models.default as { script: Array<Record<string, unknown>> };
  model.script = model.script.map((e, i) => (i === k - 1 ? { ...e, latencyMs: ms } : e));
  return f;
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
