/**
 * Where a person's caret goes when a co-editor's change to the same text arrives. Comparing
 * the old and new strings cannot tell where identical letters went ("a␣" + "␣" could be either
 * space), and a wrong guess puts the next keystroke into the other person's run. The shared
 * text's own delta says exactly: this module records the delta of each remote change to a
 * Y.Text, keyed by the text before and after, for the input showing it to map its caret with.
 */
import * as Y from 'yjs';

type Delta = Array<{ retain?: number; insert?: unknown; delete?: number }>;

/** Recent remote changes: `before\u0000after` → delta. Bounded; old entries are dropped first. */
const changes = new Map<string, Delta>();
const MAX = 64;

const key = (before: string, after: string) => `${before}\u0000${after}`;

/**
 * Records the remote changes to texts in `doc` (node and edge configs); returns the function
 * that stops it. Read in deep observers, which run before Yjs discards deleted content.
 */
export function watchTextChanges(doc: Y.Doc): () => void {
  // biome-ignore lint/suspicious/noExplicitAny: Yjs types deep events as YEvent<any>
  const onEvents = (events: Array<Y.YEvent<any>>, tr: Y.Transaction) => {
    if (tr.local) return;
    for (const e of events) {
      const t = e.target as unknown;
      if (!(t instanceof Y.Text)) continue;
      const before = textBefore(t, e);
      if (before === undefined) continue;
      const k = key(before, t.toString());
      changes.delete(k);
      changes.set(k, e.delta as Delta);
      if (changes.size > MAX) changes.delete(changes.keys().next().value!);
    }
  };
  const roots = [doc.getMap('nodes'), doc.getMap('edges')];
  for (const r of roots) r.observeDeep(onEvents);
  return () => {
    for (const r of roots) r.unobserveDeep(onEvents);
  };
}

/** The text as it was before the transaction of `e`: what it kept plus what it deleted, in order. */
function textBefore(t: Y.Text, e: Y.YEvent<Y.Text>): string | undefined {
  let out = '';
  for (let it = t._start; it !== null; it = it.right) {
    if (!it.countable || e.adds(it)) continue;
    if (it.deleted && !e.deletes(it)) continue;
    const str = (it.content as unknown as { str?: unknown }).str;
    if (typeof str !== 'string') return undefined;
    out += str;
  }
  return out;
}

/**
 * Where caret `c` in `before` is in `after`, if a recorded remote change turned one into the
 * other. Text inserted right at the caret goes after it: the caret stays with what its owner
 * typed last, so their next key continues their own run.
 */
export function caretThroughRemote(before: string, after: string, c: number): number | undefined {
  const delta = changes.get(key(before, after));
  if (!delta) return undefined;
  let old = 0;
  let shift = 0;
  for (const op of delta) {
    if (op.retain !== undefined) old += op.retain;
    else if (typeof op.insert === 'string') {
      if (old < c) shift += op.insert.length;
    } else if (op.delete !== undefined) {
      if (c >= old + op.delete) shift -= op.delete;
      else if (c > old) shift -= c - old;
      old += op.delete;
    }
  }
  return c + shift;
}
