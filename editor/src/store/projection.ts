/**
 * The React Flow nodes and edges, derived from the document plus view state and selection, and
 * rebuilt only for what changed: an object whose frame did not change keeps its identity (React
 * Flow and memoized faces skip it), and its content goes to `content`, which the faces read.
 */
import type { NodeKindDefinition } from '@switchboard/nodes/core';
import type { MarkerType } from '@xyflow/react';
import { edgeCaption } from '../model/captions.js';
import { defaultHandles } from '../model/connect.js';
import { EDGE_COLORS } from '../model/edgeStyle.js';
import { readConfig } from '../model/edits.js';
import { orderedIds, readEdge } from '../model/flowDoc.js';
import type { FlowDocument } from './document.js';
import { ESTIMATED_FACE, estimatedHandles } from './estimates.js';
import { KeyedStore } from './keyed.js';
import type { Selection } from './selection.js';
import type { NodeData, SbEdge, SbNode, Size, XY } from './types.js';
import type { ViewState } from './viewState.js';

export interface Snapshot {
  nodes: SbNode[];
  edges: SbEdge[];
}

export class Projection {
  /**
   * Per node id: its kind, label and config as its face shows them. An edit of content only
   * (typing in the inspector) changes this entry and nothing else: the React Flow node keeps its
   * identity, so React Flow does no work and only that node's face re-renders. The `data` of a
   * React Flow node is therefore the content at its last change of frame (position, size,
   * selection, parent, kind); faces read this store instead.
   */
  readonly content = new KeyedStore<NodeData | undefined>(undefined);
  private readonly nodeCache = new Map<string, { rf: SbNode; kind: string; parent?: string }>();
  private readonly edgeCache = new Map<string, SbEdge>();
  private nodes: SbNode[] = [];
  private edges: SbEdge[] = [];
  private snapshot: Snapshot = { nodes: [], edges: [] };
  private readonly listeners = new Set<() => void>();

  /**
   * @param linksStale edges or the node set changed: what edges say about nodes may have too
   */
  constructor(
    private readonly doc: FlowDocument,
    private readonly ui: ViewState,
    private readonly selection: Selection,
    private readonly linksStale: () => void,
  ) {}

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  getSnapshot = (): Snapshot => this.snapshot;

  /** The nodes as drawn, parents before their members. */
  get drawn(): readonly SbNode[] {
    return this.nodes;
  }

  /** The team a drawn node sits in (a valid parent only). */
  parentOf(id: string): string | undefined {
    return this.nodeCache.get(id)?.parent;
  }

  /** Ids of the drawn nodes, with their team. */
  parents(): IterableIterator<[string, { parent?: string }]> {
    return this.nodeCache.entries();
  }

  /** Forgets every derived object (a new document); `rebuildAll` follows. */
  clear(): void {
    this.nodeCache.clear();
    this.edgeCache.clear();
  }

  rebuildAll(): void {
    const p = this.doc.parts;
    this.refresh(new Set(p.nodes.keys()), new Set(p.edges.keys()), false, true);
  }

  private deriveNode(id: string): SbNode | undefined {
    const m = this.doc.parts.nodes.get(id);
    if (!m) return undefined;
    const kind = String(m.get('kind') ?? '');
    const def = this.doc.registry.get(kind);
    const ui = this.ui.get(id);
    const docPos = m.get('position') as XY | undefined;
    const position = ui?.position ?? docPos ?? { x: 0, y: 0 };
    const size =
      ui?.size ?? (m.get('size') as Size | undefined) ?? (def?.display.group ? def.display.size : undefined);
    const label = m.get('label');
    const data: NodeData = { kind, config: readConfig(m, this.doc.layout) };
    if (typeof label === 'string') data.label = label;
    const rf: SbNode = { id, type: def?.display.group ? 'group' : 'kind', position, data };
    if (size) {
      rf.width = size.width;
      rf.height = size.height;
    }
    if (ui?.measured) rf.measured = ui.measured;
    else {
      // Not rendered yet (on a large flow, perhaps never): estimates stand in (estimates.ts).
      const est = size ?? ESTIMATED_FACE;
      rf.initialWidth = est.width;
      rf.initialHeight = est.height;
      if (def) rf.handles = estimatedHandles(def, est);
    }
    if (ui?.dragging) rf.dragging = true;
    if (this.selection.hasNode(id)) rf.selected = true;
    return rf;
  }

  /** A parent React Flow can use: it exists, is a group, and does not lead into a cycle. */
  private validParent(id: string): string | undefined {
    const nodes = this.doc.parts.nodes;
    const parent = nodes.get(id)?.get('parent');
    if (typeof parent !== 'string' || !nodes.has(parent)) return undefined;
    const seen = new Set([id]);
    let cur: string | undefined = parent;
    while (cur !== undefined) {
      if (seen.has(cur)) return undefined;
      seen.add(cur);
      const next: unknown = nodes.get(cur)?.get('parent');
      cur = typeof next === 'string' && nodes.has(next) ? next : undefined;
    }
    return parent;
  }

  private deriveEdge(id: string): SbEdge | undefined {
    const { nodes, edges } = this.doc.parts;
    const { registry, layout } = this.doc;
    const m = edges.get(id);
    if (!m) return undefined;
    const e = readEdge(id, m, layout);
    const s = nodes.get(e.source);
    const t = nodes.get(e.target);
    if (!s || !t) return undefined; // dangling: listed as a problem, not drawn
    const sDef = registry.get(String(s.get('kind')));
    const tDef = registry.get(String(t.get('kind')));
    const dflt = defaultHandles(e.kind, sDef, tDef);
    const has = (def: NodeKindDefinition | undefined, h: string | undefined, type: string) =>
      !!h && !!def?.ports.some((p) => p.id === h && p.type === type);
    const sourceHandle = has(sDef, e.sourceHandle, 'source') ? e.sourceHandle : dflt.sourceHandle;
    const targetHandle = has(tDef, e.targetHandle, 'target') ? e.targetHandle : dflt.targetHandle;
    if (!sourceHandle || !targetHandle) return undefined; // kinds without such ports: a validator error
    const caption = edgeCaption(e, sDef?.role, readConfig(s, layout));
    const rf: SbEdge = {
      id,
      source: e.source,
      target: e.target,
      sourceHandle,
      targetHandle,
      type: e.kind,
      data: { kind: e.kind, caption },
      markerEnd: { type: 'arrowclosed' as MarkerType, width: 18, height: 18, color: EDGE_COLORS[e.kind] },
    };
    if (this.selection.hasEdge(id)) rf.selected = true;
    return rf;
  }

  /**
   * Rebuilds the React Flow objects of the given ids and reassembles the arrays. An object whose
   * frame did not change keeps its identity (its content goes to `content`); when no object
   * changed and nothing was added, removed or reordered, the snapshot stays as it is and React
   * Flow is not told anything.
   */
  refresh(nodeIds: Set<string>, edgeIds: Set<string>, uiOnly = false, order = false): void {
    const p = this.doc.parts;
    let structural = false;
    let changed = order;
    for (const id of nodeIds) {
      const prev = this.nodeCache.get(id);
      const rf = this.deriveNode(id);
      if (!rf) {
        if (prev) changed = true;
        this.nodeCache.delete(id);
        this.ui.delete(id);
        this.selection.setNode(id, false);
        this.content.set(id, undefined);
        structural = true;
        continue;
      }
      const parent = this.validParent(id);
      if (parent) rf.parentId = parent;
      if (!uiOnly || !prev) this.content.set(id, rf.data);
      if (prev && sameFrame(prev.rf, rf)) continue;
      changed = true;
      if (!prev || prev.parent !== parent || prev.kind !== rf.data.kind) structural = true;
      this.nodeCache.set(id, { rf, kind: rf.data.kind, parent });
    }
    if (structural && !uiOnly) {
      // A node that appeared, vanished or moved between teams can make other parents (in)valid.
      for (const [id, entry] of this.nodeCache) {
        const parent = this.validParent(id);
        if (parent !== entry.parent) {
          const rf = { ...entry.rf };
          if (parent) rf.parentId = parent;
          else delete rf.parentId;
          this.nodeCache.set(id, { ...entry, rf, parent });
        }
      }
    }
    if (!uiOnly) {
      // Edges whose ends changed may need new handles or captions (a decider's rules).
      const touched = new Set(edgeIds);
      if (nodeIds.size > 0)
        for (const [id, m] of p.edges.entries())
          if (nodeIds.has(m.get('source') as string) || nodeIds.has(m.get('target') as string))
            touched.add(id);
      for (const id of touched) {
        const prev = this.edgeCache.get(id);
        const rf = this.deriveEdge(id);
        if (rf) {
          if (prev && sameEdge(prev, rf)) continue;
          this.edgeCache.set(id, rf);
          changed = true;
        } else {
          if (prev || edgeIds.has(id)) changed = true;
          this.edgeCache.delete(id);
          this.selection.setEdge(id, false);
        }
      }
      if (edgeIds.size > 0 || structural) this.linksStale();
      if (!changed && !structural) return;
      // Order React Flow needs: a parent before its children; otherwise document order.
      const order = orderedIds(p.nodes, p.nodeOrder);
      const placed = new Set<string>();
      const out: SbNode[] = [];
      const place = (id: string) => {
        if (placed.has(id)) return;
        placed.add(id);
        const entry = this.nodeCache.get(id);
        if (!entry) return;
        if (entry.parent) place(entry.parent);
        out.push(entry.rf);
      };
      for (const id of order) place(id);
      this.nodes = out;
      this.edges = orderedIds(p.edges, p.edgeOrder)
        .map((id) => this.edgeCache.get(id))
        .filter((e): e is SbEdge => !!e);
    } else {
      if (!changed) return;
      this.nodes = this.nodes.map((n) => this.nodeCache.get(n.id)?.rf ?? n);
    }
    this.snapshot = { nodes: this.nodes, edges: this.edges };
    for (const fn of this.listeners) fn();
  }

  /** Redraws after a change of view state or selection only (the document did not change). */
  refreshUi(nodeIds: Iterable<string>, edgeIds: Iterable<string> = []): void {
    let edgesChanged = false;
    for (const id of edgeIds) {
      const rf = this.deriveEdge(id);
      if (rf) this.edgeCache.set(id, rf);
      edgesChanged = true;
    }
    if (edgesChanged) this.edges = this.edges.map((e) => this.edgeCache.get(e.id) ?? e);
    this.refresh(new Set(nodeIds), new Set(), true, edgesChanged);
  }
}

/** Whether two React Flow nodes are drawn in the same place, size and state (content aside). */
function sameFrame(a: SbNode, b: SbNode): boolean {
  return (
    a.type === b.type &&
    a.data.kind === b.data.kind &&
    a.parentId === b.parentId &&
    a.position.x === b.position.x &&
    a.position.y === b.position.y &&
    a.width === b.width &&
    a.height === b.height &&
    a.measured?.width === b.measured?.width &&
    a.measured?.height === b.measured?.height &&
    !!a.dragging === !!b.dragging &&
    !!a.selected === !!b.selected
  );
}

/** Whether two React Flow edges draw the same. */
function sameEdge(a: SbEdge, b: SbEdge): boolean {
  return (
    a.source === b.source &&
    a.target === b.target &&
    a.sourceHandle === b.sourceHandle &&
    a.targetHandle === b.targetHandle &&
    a.type === b.type &&
    a.data?.kind === b.data?.kind &&
    a.data?.caption === b.data?.caption &&
    !!a.selected === !!b.selected
  );
}
