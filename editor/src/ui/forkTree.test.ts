import { describe, expect, it } from 'vitest';
import type { RunSummary } from '../model/api.js';
import { forkTree } from './RunHistory.js';

const run = (id: string, parentRunId?: string): RunSummary => ({
  id,
  flowId: 'f',
  status: 'completed',
  createdAt: '2026-01-01T00:00:00Z',
  lastSeq: 1,
  ...(parentRunId ? { parentRunId, forkedAt: { nodeId: 'n', turn: 1 } } : {}),
});

describe('the run history as a tree of forks', () => {
  it('puts each fork under its parent, keeps the listed order among siblings, and lists every run once', () => {
    const list = [
      run('c', 'a'),
      run('b'),
      run('d', 'c'),
      run('a'),
      run('e', 'gone'),
      run('x', 'y'),
      run('y', 'x'),
    ];
    expect(forkTree(list).map(({ run: r, depth }) => `${r.id}:${depth}`)).toEqual([
      'b:0',
      'a:0',
      'c:1',
      'd:2',
      'e:0',
      'x:0',
      'y:1',
    ]);
  });
});
