import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { caretThroughRemote, watchTextChanges } from './textCarets.js';

function pair(text: string): { a: Y.Doc; b: Y.Doc; ta: Y.Text; tb: Y.Text } {
  const a = new Y.Doc();
  const node = new Y.Map<unknown>();
  a.getMap('nodes').set('n', node);
  node.set('role', new Y.Text(text));
  const b = new Y.Doc();
  Y.applyUpdate(b, Y.encodeStateAsUpdate(a));
  const get = (d: Y.Doc) => (d.getMap('nodes').get('n') as Y.Map<unknown>).get('role') as Y.Text;
  return { a, b, ta: get(a), tb: get(b) };
}

const sync = (from: Y.Doc, to: Y.Doc) =>
  Y.applyUpdate(to, Y.encodeStateAsUpdate(from, Y.encodeStateVector(to)));

describe('carets through a co-editor’s change', () => {
  it('knows which of two identical letters arrived (the string diff cannot)', () => {
    const { a, b, tb } = pair('} ');
    const stop = watchTextChanges(a);
    // Ada's caret is after her space (2); Bob's space lands before it.
    tb.insert(1, ' ');
    sync(b, a);
    expect(caretThroughRemote('} ', '}  ', 2)).toBe(3);
    stop();
  });

  it('keeps the caret before text inserted right at it, and moves it out of a deleted range', () => {
    const { a, b, tb } = pair('hello world');
    const stop = watchTextChanges(a);
    tb.insert(5, ' there');
    sync(b, a);
    expect(caretThroughRemote('hello world', 'hello there world', 5)).toBe(5);
    expect(caretThroughRemote('hello world', 'hello there world', 8)).toBe(14);
    tb.delete(0, 6);
    sync(b, a);
    expect(caretThroughRemote('hello there world', 'there world', 3)).toBe(0);
    expect(caretThroughRemote('hello there world', 'there world', 17)).toBe(11);
    stop();
  });

  it('records nothing for this editor’s own changes', () => {
    const { a, ta } = pair('abc');
    const stop = watchTextChanges(a);
    ta.insert(3, 'd');
    expect(caretThroughRemote('abc', 'abcd', 3)).toBeUndefined();
    stop();
  });
});
