import { describe, expect, it } from 'vitest';
import type { RunSummary } from '../model/api.js';
import { filterRuns, MAX_WHO, pathLabel, startedByLabel } from './history.js';

const run = (p: Partial<RunSummary>): RunSummary => ({
  id: 'r1',
  flowId: 'f',
  status: 'completed',
  createdAt: '2026-01-01T00:00:00.000Z',
  lastSeq: 1,
  ...p,
});

describe('run history rows', () => {
  it('says who started a run, or how when nobody was named', () => {
    expect(startedByLabel({ startedBy: 'Ada', source: 'api' })).toEqual({ text: 'Ada', named: true });
    expect(startedByLabel({ source: 'api' })).toEqual({ text: 'REST', named: false });
    expect(startedByLabel({ source: 'cli' }).text).toBe('CLI');
    expect(startedByLabel({ source: 'mcp' }).text).toBe('MCP');
    expect(startedByLabel({ source: '__proto__' }).text).toBe('unknown');
    expect(startedByLabel({ startedBy: '   ', source: 'mcp' }).text).toBe('MCP');
    // A name from a server that did not bound it is bounded here.
    expect([...startedByLabel({ startedBy: '😀'.repeat(100) }).text]).toHaveLength(MAX_WHO);
  });

  it('shows a path and counts what it leaves out', () => {
    expect(pathLabel({ path: ['start', 'a', 'end'] })).toBe('start → a → end');
    expect(pathLabel({ path: ['start', 'a'], pathMore: 3 })).toBe('start → a → … (+3)');
    expect(pathLabel({})).toBe('');
  });

  it('filters by status, stale, and text (id, who, path nodes, error)', () => {
    const list = [
      run({ id: 'r1', startedBy: 'Ada', path: ['start', 'billing-agent', 'end'] }),
      run({ id: 'r2', status: 'waiting', source: 'mcp', path: ['start', 'approval'] }),
      run({ id: 'r3', status: 'failed', source: 'api', error: { code: 'x', message: 'Disk full' } }),
    ];
    const stale = (r: RunSummary) => r.id === 'r2';
    const ids = (status: string, text: string) => filterRuns(list, status, text, stale).map((r) => r.id);
    expect(ids('all', '')).toEqual(['r1', 'r2', 'r3']);
    expect(ids('failed', '')).toEqual(['r3']);
    expect(ids('stale', '')).toEqual(['r2']);
    expect(ids('all', 'ada')).toEqual(['r1']);
    expect(ids('all', 'BILLING')).toEqual(['r1']);
    expect(ids('all', 'mcp')).toEqual(['r2']);
    expect(ids('all', 'rest')).toEqual(['r3']);
    expect(ids('all', 'disk full')).toEqual(['r3']);
    expect(ids('completed', 'approval')).toEqual([]);
    expect(ids('all', ' r2 ')).toEqual(['r2']);
  });
});
