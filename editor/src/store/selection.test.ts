import { describe, expect, it } from 'vitest';
import { Selection } from './selection.js';
import { ViewState } from './viewState.js';

describe('Selection', () => {
  it('keeps the identity of its snapshot until the selection changes', () => {
    const s = new Selection();
    s.setNode('a', true);
    const first = s.get();
    expect(first).toEqual({ nodes: ['a'], edges: [] });
    s.setNode('a', true);
    expect(s.get()).toBe(first);
    s.setEdge('e1', true);
    expect(s.get()).not.toBe(first);
    expect(s.get().edges).toEqual(['e1']);
  });

  it('replacing keeps only existing ids and reports the old and new ones as touched', () => {
    const s = new Selection();
    s.setNode('old', true);
    const touched = s.replace(
      { nodes: ['a', 'gone'], edges: ['e1'] },
      { node: (id) => id !== 'gone', edge: () => true },
    );
    expect([...touched.nodes].sort()).toEqual(['a', 'gone', 'old']);
    expect(s.get()).toEqual({ nodes: ['a'], edges: ['e1'] });
  });
});

describe('ViewState', () => {
  it('takes drags and measurements from React Flow and keeps only measured sizes on a new document', () => {
    const v = new ViewState();
    const touched = v.apply([
      { type: 'position', id: 'a', position: { x: 1, y: 2 }, dragging: true },
      { type: 'dimensions', id: 'b', dimensions: { width: 10, height: 20 } },
      { type: 'dimensions', id: 'c', dimensions: { width: 30, height: 40 }, setAttributes: true },
      { type: 'select', id: 'd', selected: true },
    ]);
    expect([...touched].sort()).toEqual(['a', 'b', 'c']);
    expect(v.get('a')).toEqual({ position: { x: 1, y: 2 }, dragging: true });
    expect(v.get('c')?.size).toEqual({ width: 30, height: 40 });
    v.of('b').dragging = true;
    v.keepMeasuredOnly();
    expect(v.get('a')).toBeUndefined();
    expect(v.get('b')).toEqual({ measured: { width: 10, height: 20 } });
    expect(v.get('c')).toBeUndefined();
  });
});
