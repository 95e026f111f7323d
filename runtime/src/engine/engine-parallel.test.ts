import { describe, expect, it } from 'vitest';
import { agent, collectRun, edge, flow, node } from './testing/index.js';

describe('parallel dispatch', () => {
  it('fans out from the start node, runs concurrently and joins with results in edge order', async () => {
    // Latencies make the branches finish in reverse order; the merge is still in edge order.
    const f = flow(
      [node('start', 'start'), agent('p1'), agent('p2'), agent('p3'), agent('joiner'), node('end', 'end')],
      [
        edge('start', 'p1'),
        edge('start', 'p2'),
        edge('start', 'p3'),
        edge('p1', 'joiner'),
        edge('p2', 'joiner'),
        edge('p3', 'joiner'),
        edge('joiner', 'end'),
      ],
      [
        { node: 'p1', text: 'one', latencyMs: 90 },
        { node: 'p2', text: 'two', latencyMs: 50 },
        { node: 'p3', text: 'three', latencyMs: 10 },
        { node: 'joiner', text: 'joined' },
      ],
    );
    const { events, result } = await collectRun(f, 'go');
    expect(result).toMatchObject({ status: 'completed', output: 'joined' });
    const done = events
      .filter((e) => e.type === 'node.completed' && /^p\d$/.test(e.nodeId!))
      .map((e) => e.nodeId);
    // Concurrent: the branch started last finished first.
    expect(done).toEqual(['p3', 'p2', 'p1']);
    const merged = events.find((e) => e.type === 'message' && e.nodeId === 'start')!;
    expect((merged as { message: { content: string } }).message.content).toBe(
      '[p1] one\n\n[p2] two\n\n[p3] three',
    );
    expect(events.filter((e) => e.type === 'node.started' && e.nodeId === 'joiner')).toHaveLength(1);
  });

  it('an LLM decider choosing several edges runs them in parallel; join at the end node gives an ordered array', async () => {
    const f = flow(
      [
        node('start', 'start'),
        node('d', 'decider', { strategy: 'llm', allowMultiple: true }),
        agent('x'),
        agent('y'),
        node('end', 'end'),
      ],
      [
        edge('start', 'd'),
        edge('d', 'x', 'handover', undefined, 'dx'),
        edge('d', 'y', 'handover', undefined, 'dy'),
        edge('x', 'end'),
        edge('y', 'end'),
      ],
      [
        { node: 'd', json: { choice: ['dy', 'dx'], reason: 'both' } },
        { node: 'x', text: 'X', latencyMs: 20 },
        { node: 'y', text: 'Y' },
      ],
    );
    const { result, events } = await collectRun(f, 'go');
    expect(result).toMatchObject({ status: 'completed', output: ['Y', 'X'] });
    expect(events.find((e) => e.type === 'decision')).toMatchObject({ choice: ['dy', 'dx'] });
  });
});
