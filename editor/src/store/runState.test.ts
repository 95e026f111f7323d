import { describe, expect, it } from 'vitest';
import { RunState } from './runState.js';

/** Which keys of a keyed store notified during `fn`. */
function notified(rs: RunState, fn: () => void): { nodes: string[]; edges: string[] } {
  const nodes: string[] = [];
  const edges: string[] = [];
  const offs = ['a', 'b', 'c'].map((k) => rs.subscribe(k, () => nodes.push(k)));
  const offE = ['e1', 'e2'].map((k) => rs.edges.subscribe(k, () => edges.push(k)));
  fn();
  for (const off of [...offs, ...offE]) off();
  return { nodes, edges };
}

describe('RunState', () => {
  it('one event notifies at most the old and the new active node', () => {
    const rs = new RunState();
    rs.applyRunEvent({ type: 'node.started', nodeId: 'a' });
    expect(notified(rs, () => rs.applyRunEvent({ type: 'node.started', nodeId: 'b' })).nodes.sort()).toEqual([
      'a',
      'b',
    ]);
    expect(rs.get('a')).toEqual({ status: 'running', active: false });
    expect(rs.get('b')).toEqual({ status: 'running', active: true });
    expect(notified(rs, () => rs.applyRunEvent({ type: 'node.completed', nodeId: 'a' })).nodes).toEqual([
      'a',
    ]);
    // Events that change nothing notify nobody.
    expect(notified(rs, () => rs.applyRunEvent({ type: 'turn.started', nodeId: 'b' })).nodes).toEqual([]);
  });

  it('a handover lights its edge; the previous edge becomes taken', () => {
    const rs = new RunState();
    rs.applyRunEvent({ type: 'handover', edgeId: 'e1' });
    expect(rs.edges.get('e1')).toBe('active');
    const n = notified(rs, () => rs.applyRunEvent({ type: 'handover', edgeId: 'e2' }));
    expect(n.edges.sort()).toEqual(['e1', 'e2']);
    expect(n.nodes).toEqual([]);
    expect(rs.edges.get('e1')).toBe('taken');
    expect(rs.edges.get('e2')).toBe('active');
    // A delegation called through its edge lights that edge too.
    rs.applyRunEvent({ type: 'tool.called', nodeId: 'a', edgeId: 'e1' });
    expect(rs.edges.get('e1')).toBe('active');
  });

  it('the end of the run clears the active node and edge; a nested run’s end does not', () => {
    const rs = new RunState();
    rs.applyRunEvent({ type: 'node.started', nodeId: 'a' });
    rs.applyRunEvent({ type: 'handover', edgeId: 'e1' });
    rs.applyRunEvent({ type: 'run.completed' }, false);
    expect(rs.activeNode).toBe('a');
    rs.applyRunEvent({ type: 'run.completed' });
    expect(rs.activeNode).toBeUndefined();
    expect(rs.activeEdge).toBeUndefined();
    expect(rs.get('a')).toEqual({ status: 'running', active: false });
    expect(rs.edges.get('e1')).toBe('taken');
  });

  it('reset forgets the run but keeps breakpoints', () => {
    const rs = new RunState();
    rs.toggleBreakpoint('b');
    rs.toggleBreakpoint('c');
    rs.toggleBreakpoint('c');
    rs.applyRunEvent({ type: 'node.started', nodeId: 'a' });
    rs.applyRunEvent({ type: 'handover', edgeId: 'e1' });
    rs.reset();
    expect(rs.get('a')).toEqual({ status: 'idle', active: false });
    expect(rs.edges.get('e1')).toBe('');
    expect(rs.breakpointList()).toEqual(['b']);
  });

  it('restoreRun takes another state’s run marks, notifying only what changes; breakpoints stay', () => {
    const earlier = new RunState();
    earlier.applyRunEvent({ type: 'node.started', nodeId: 'a' });
    earlier.applyRunEvent({ type: 'handover', edgeId: 'e1' });
    const rs = new RunState();
    rs.toggleBreakpoint('c');
    for (const ev of [
      { type: 'node.started', nodeId: 'a' },
      { type: 'handover', edgeId: 'e1' },
      { type: 'node.started', nodeId: 'b' },
      { type: 'handover', edgeId: 'e2' },
    ])
      rs.applyRunEvent(ev);
    const n = notified(rs, () => rs.restoreRun(earlier));
    expect(n.nodes.sort()).toEqual(['a', 'b']);
    expect(n.edges.sort()).toEqual(['e1', 'e2']);
    expect([rs.activeNode, rs.activeEdge]).toEqual(['a', 'e1']);
    expect(rs.get('a')).toEqual({ status: 'running', active: true });
    expect(rs.get('b')).toEqual({ status: 'idle', active: false });
    expect([rs.edges.get('e1'), rs.edges.get('e2')]).toEqual(['active', '']);
    expect(rs.breakpointList()).toEqual(['c']);
    // The next event carries on from the restored point.
    rs.applyRunEvent({ type: 'node.started', nodeId: 'c' });
    expect(rs.get('a')).toEqual({ status: 'running', active: false });
  });
});
