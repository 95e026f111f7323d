import { describe, expect, it } from 'vitest';
import type { RunEvent } from './events.js';
import { summarizeNodes } from './node-summary.js';

const at = (seq: number, e: Record<string, unknown>) => ({ runId: 'r', seq, ts: seq * 10, ...e }) as RunEvent;

describe('summarizeNodes', () => {
  // A resumed run emits again the turns its log holds since the checkpoint, marked `replayed`:
  // counters must say what happened once, as the storage issue demands of every figure.
  it('counts a replayed turn once', () => {
    const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 };
    const turn = (seq: number, replayed?: true) => [
      at(seq, { type: 'node.started', nodeId: 'a', ...(replayed && { replayed }) }),
      at(seq + 1, { type: 'turn.started', nodeId: 'a', turn: 1, ...(replayed && { replayed }) }),
      at(seq + 2, { type: 'model.completed', nodeId: 'a', usage, ...(replayed && { replayed }) }),
    ];
    const once = summarizeNodes([...turn(1)]);
    const again = summarizeNodes([...turn(1), ...turn(4, true)]);
    expect(once[0]).toMatchObject({ turns: 1, promptTokens: 10, completionTokens: 5 });
    expect(again[0]).toMatchObject({ turns: 1, promptTokens: 10, completionTokens: 5 });
  });
});
