/**
 * Ids are readable (`agent3`, `e7`: the smallest number free in this editor's copy), so two
 * people adding a node of the same kind at the same moment can pick the same one. Yjs then keeps
 * one of the two maps under that key and drops the other, everywhere alike. The editor whose map
 * was dropped notices when the other's update arrives and adds what it drew again under a fresh
 * id, so nothing anyone drew is lost. Only the losing side acts, so the repair happens once.
 *
 * The order arrays may then list the contested id twice; `orderedIds` reads each id once.
 */
import type { FlowEdgeT, FlowNodeT } from '@switchboard/schemas';
import { type ConfigLayout, PLAIN_LAYOUT, parts, readEdge, readNode } from '@switchboard/schemas/ydoc';
import type * as Y from 'yjs';
import { addNodes } from '../model/edits.js';
import { LOCAL } from '../model/flowDoc.js';
import { idPrefix, newId } from '../model/ids.js';

/** How long an add stays contestable: well past any reconnect that merges concurrent work. */
const WATCH_MS = 10 * 60_000;
/** At most this many recent adds are watched (oldest dropped first). */
const WATCH_MAX = 500;

interface Watched {
  map: Y.Map<unknown>;
  /** The item as this editor last wrote it (a dropped map can no longer be read). */
  last: FlowNodeT | FlowEdgeT;
  at: number;
}

export interface ConcurrentAddWatch {
  /** Ids re-added under a new name so far: `[old, new]` (tests, diagnostics). */
  readonly repaired: Array<[string, string]>;
  dispose(): void;
}

/** Watches `doc` for this editor's adds that a concurrent add under the same id replaced. */
export function watchConcurrentAdds(
  doc: Y.Doc,
  layout: ConfigLayout = PLAIN_LAYOUT,
  now: () => number = Date.now,
): ConcurrentAddWatch {
  const p = parts(doc);
  const nodes = new Map<string, Watched>();
  const edges = new Map<string, Watched>();
  const repaired: Array<[string, string]> = [];

  const remember = (
    watched: Map<string, Watched>,
    id: string,
    map: Y.Map<unknown>,
    last: Watched['last'],
  ) => {
    watched.delete(id);
    watched.set(id, { map, last, at: now() });
    if (watched.size > WATCH_MAX) watched.delete(watched.keys().next().value!);
  };
  const prune = (watched: Map<string, Watched>) => {
    const limit = now() - WATCH_MS;
    for (const [id, w] of watched) {
      if (w.at >= limit) break;
      watched.delete(id);
    }
  };

  // Yjs types its change map by the base type; our maps are its subclasses.
  const changedIn = (tr: Y.Transaction) => tr.changed as unknown as Map<unknown, Set<string | null>>;

  /** Records this editor's new items and keeps the last state of the ones it watches. */
  const onLocal = (tr: Y.Transaction) => {
    // Only what a person drew counts: a whole document loaded (a template, an import) over a
    // concurrent load is one document replacing another, not two drawings to keep.
    if (tr.origin === LOCAL)
      for (const [type, keys] of changedIn(tr)) {
        if (type === p.nodes || type === p.edges) {
          const isNode = type === p.nodes;
          for (const id of keys) {
            if (id === null) continue;
            const map = (isNode ? p.nodes : p.edges).get(id);
            // Only maps created by this editor are its adds (a change of an existing one is not).
            if (!map || map._item?.id.client !== doc.clientID) continue;
            if ((isNode ? nodes : edges).get(id)?.map === map) continue;
            remember(
              isNode ? nodes : edges,
              id,
              map,
              isNode ? readNode(id, map, layout) : readEdge(id, map, layout),
            );
          }
        }
      }
    // A field deep inside (a config entry, a text) changes the item too.
    for (const [watched, read] of [
      [nodes, readNode],
      [edges, readEdge],
    ] as const)
      for (const [id, w] of watched)
        if (
          changedIn(tr).has(w.map) ||
          (tr.changedParentTypes as unknown as Map<unknown, unknown>).has(w.map)
        )
          w.last = read(id, w.map, layout);
  };

  const lost = (watched: Map<string, Watched>, current: Y.Map<Y.Map<unknown>>, keys: Set<string | null>) => {
    const out: Array<[string, Watched]> = [];
    for (const id of keys) {
      if (id === null) continue;
      const w = watched.get(id);
      if (w && current.get(id) !== w.map) {
        watched.delete(id);
        // Deleted by someone (not replaced): a deletion is an edit like any other, not a loss.
        if (current.has(id)) out.push([id, w]);
      }
    }
    return out;
  };

  const onRemote = (tr: Y.Transaction) => {
    const lostNodes = lost(nodes, p.nodes, changedIn(tr).get(p.nodes) ?? new Set());
    const lostEdges = lost(edges, p.edges, changedIn(tr).get(p.edges) ?? new Set());
    if (lostNodes.length === 0 && lostEdges.length === 0) return;
    const taken = new Set([...p.nodes.keys(), ...p.edges.keys()]);
    const rename = new Map<string, string>();
    const addedNodes: FlowNodeT[] = [];
    for (const [id, w] of lostNodes) {
      const node = w.last as FlowNodeT;
      const fresh = newId(idPrefix(node.kind), taken);
      taken.add(fresh);
      rename.set(id, fresh);
      addedNodes.push({ ...node, id: fresh });
    }
    const addedEdges: FlowEdgeT[] = [];
    for (const [id, w] of lostEdges) {
      const fresh = newId('e', taken);
      taken.add(fresh);
      rename.set(id, fresh);
      addedEdges.push({ ...(w.last as FlowEdgeT), id: fresh });
    }
    const renamed = (id: string) => rename.get(id) ?? id;
    for (const n of addedNodes) if (n.parent !== undefined) n.parent = renamed(n.parent);
    for (const e of addedEdges) {
      e.source = renamed(e.source);
      e.target = renamed(e.target);
    }
    // This editor's surviving edges and members that pointed at its own dropped node follow it.
    const follow: Array<() => void> = [];
    if (lostNodes.length > 0) {
      for (const [id, w] of edges) {
        const e = p.edges.get(id);
        if (e !== w.map) continue;
        for (const end of ['source', 'target'] as const) {
          const to = rename.get(e.get(end) as string);
          if (to !== undefined) follow.push(() => e.set(end, to));
        }
      }
      for (const [id, w] of nodes) {
        const n = p.nodes.get(id);
        const to = n === w.map ? rename.get(n.get('parent') as string) : undefined;
        if (n && to !== undefined) follow.push(() => n.set('parent', to));
      }
    }
    for (const [from, to] of rename) repaired.push([from, to]);
    // A separate transaction, after the remote one: it is this editor's own edit (undoable).
    queueMicrotask(() =>
      doc.transact(() => {
        addNodes(doc, addedNodes, addedEdges, layout);
        for (const f of follow) f();
      }, LOCAL),
    );
  };

  const onTransaction = (tr: Y.Transaction) => {
    if (tr.local) onLocal(tr);
    else onRemote(tr);
    prune(nodes);
    prune(edges);
  };
  doc.on('afterTransaction', onTransaction);
  return {
    repaired,
    dispose: () => doc.off('afterTransaction', onTransaction),
  };
}
