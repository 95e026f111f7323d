import { describe, expect, it } from 'vitest';
import type { FlowSummary } from '../model/api.js';
import { filterFlows } from './FlowList.js';
import { copyId, deletedBy } from './flowLifecycle.js';

describe('flow lifecycle helpers', () => {
  it('reads who deleted a flow from the room’s close reason', () => {
    expect(deletedBy('deleted by Ada Lovelace')).toBe('Ada Lovelace');
    expect(deletedBy('server shutting down')).toBeUndefined();
  });

  it('suggests a copy id nobody holds', () => {
    expect(copyId('triage', new Set(['triage']))).toBe('triage-copy');
    expect(copyId('triage', new Set(['triage', 'triage-copy', 'triage-copy-2']))).toBe('triage-copy-3');
    expect(copyId('triage-copy-2', new Set(['triage-copy']))).toBe('triage-copy-2');
  });

  it('searches by every word over id, name, description and author; sorts; same names stay apart by id', () => {
    const list: FlowSummary[] = [
      { id: 'b', name: 'Support triage', updatedAt: '2026-01-02T00:00:00Z', updatedBy: 'Ada' },
      { id: 'a', name: 'Support triage', updatedAt: '2026-01-03T00:00:00Z', updatedBy: 'Bob' },
      { id: 'c', name: 'Writer', description: 'drafts support mail', updatedAt: '2026-01-01T00:00:00Z' },
    ];
    expect(filterFlows(list, '', 'recent').map((f) => f.id)).toEqual(['a', 'b', 'c']);
    expect(filterFlows(list, '', 'name').map((f) => f.id)).toEqual(['a', 'b', 'c']);
    expect(filterFlows(list, '', 'id').map((f) => f.id)).toEqual(['a', 'b', 'c']);
    expect(filterFlows(list, 'support', 'id').map((f) => f.id)).toEqual(['a', 'b', 'c']);
    expect(filterFlows(list, 'triage ada', 'id').map((f) => f.id)).toEqual(['b']);
    expect(filterFlows(list, 'MAIL', 'id').map((f) => f.id)).toEqual(['c']);
  });
});
