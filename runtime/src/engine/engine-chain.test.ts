import { describe, expect, it } from 'vitest';
import { runFlow } from './index.js';
import { agent, chain, collectRun, edge, flow, node, trace } from './testing/index.js';

describe('engine: chains', () => {
  it('runs start → agent → end with the documented event sequence', async () => {
    const f = flow(
      [node('start', 'start'), agent('writer'), node('end', 'end')],
      [edge('start', 'writer'), edge('writer', 'end')],
      [
        {
          node: 'writer',
          text: 'the draft',
          deltas: ['the ', 'draft'],
          usage: { promptTokens: 7, completionTokens: 3 },
        },
      ],
    );
    const { events, result } = await collectRun(f, 'write it');
    expect(result).toMatchObject({ status: 'completed', output: 'the draft' });
    expect(trace(events)).toEqual([
      'run.started',
      'message',
      'node.started@start',
      'node.completed@start',
      'handover@start',
      'node.started@writer',
      'turn.started@writer',
      'model.request@writer',
      'model.delta@writer',
      'model.delta@writer',
      'model.completed@writer',
      'message@writer',
      'turn.completed@writer',
      'node.completed@writer',
      'handover@writer',
      'node.started@end',
      'node.completed@end',
      'run.completed',
    ]);
    expect(events.every((e) => e.scripted === true)).toBe(true);
    const tc = events.find((e) => e.type === 'turn.completed');
    expect(tc).toMatchObject({ usage: { promptTokens: 7, completionTokens: 3 }, model: 'scripted:default' });
    expect(events.find((e) => e.type === 'handover' && e.nodeId === 'writer')).toMatchObject({
      edgeId: 'writer-end',
      from: 'writer',
      to: 'end',
    });
  });

  it('a chain of 10,000 agents runs on the default stack', async () => {
    const f = chain(10_000, { memory: 'thread' });
    let count = 0;
    const h = runFlow(f, 'go', { budgets: { maxSteps: 20_000 }, onEvent: () => void count++ });
    const r = await h.result;
    expect(r.status).toBe('completed');
    expect(count).toBeGreaterThan(70_000);
  });

  it('the async iterable yields every event from the first, and ends', async () => {
    const h = runFlow(chain(3), 'x');
    const types: string[] = [];
    for await (const e of h.events) types.push(e.type);
    expect(types[0]).toBe('run.started');
    expect(types.at(-1)).toBe('run.completed');
    expect((await h.result).status).toBe('completed');
  });

  it('an invalid flow gives a failed run naming the problem', async () => {
    const bad = flow([node('start', 'start'), agent('a', { model: 'nope' })], [edge('start', 'a')]);
    const { result, events } = await collectRun(bad, 'x');
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('flow_invalid');
    expect(result.error?.message).toContain('/nodes/1/config/model');
    expect(events.map((e) => e.type)).toEqual(['run.failed']);
  });
});
