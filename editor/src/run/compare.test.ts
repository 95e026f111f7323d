import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { compareRuns } from './compare.js';

const log = (runId: string, list: Array<Record<string, unknown>>): RunEvent[] =>
  list.map((e, i) => ({ runId, seq: i + 1, ts: (i + 1) * 10, ...e }) as RunEvent);

const path = (runId: string, nodes: string[], reply: string) =>
  log(runId, [
    { type: 'run.started', flowId: 'f', input: 'x' },
    ...nodes.flatMap((n) => [
      { type: 'node.started', nodeId: n },
      {
        type: 'model.completed',
        nodeId: n,
        text: reply,
        usage: { promptTokens: 10, completionTokens: n.length },
      },
      {
        type: 'message',
        nodeId: n,
        message: { seq: 1, role: 'assistant', author: n, content: `${n}: ${reply}` },
      },
      { type: 'node.completed', nodeId: n },
    ]),
    { type: 'run.completed', output: reply },
  ]);

describe('comparing two runs', () => {
  it('says which run each node ran in, with both sides’ counters and outputs', () => {
    const c = compareRuns(
      { runId: 'A', events: path('A', ['start', 'triage', 'billing'], 'money') },
      { runId: 'B', events: path('B', ['start', 'triage', 'tech'], 'crash') },
    );
    const by = new Map(c.nodes.map((n) => [n.nodeId, n]));
    expect(by.get('triage')).toMatchObject({
      side: 'both',
      outputA: 'triage: money',
      outputB: 'triage: crash',
    });
    expect(by.get('billing')).toMatchObject({ side: 'a', a: { promptTokens: 10, completionTokens: 7 } });
    expect(by.get('billing')!.b).toBeUndefined();
    expect(by.get('tech')).toMatchObject({ side: 'b' });
  });
});
