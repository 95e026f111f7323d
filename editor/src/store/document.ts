/**
 * Reading the flow out of the Y.Doc: the document the store is on (replaced as a whole when the
 * editor joins a co-editing room), its parts, and what is read from them, cached per node and edge
 * and per document version so that a keystroke does not read a thousand nodes back.
 */
import type { KindRegistry, NodeKindDefinition } from '@switchboard/nodes/core';
import { type Flow, type FlowEdgeT, type FlowNodeT, serializeFlow } from '@switchboard/schemas/core';
import type * as Y from 'yjs';
import { readConfig } from '../model/edits.js';
import {
  type ConfigLayout,
  docToFlow,
  orderedIds,
  parts,
  readEdge,
  readMeta,
  readNode,
} from '../model/flowDoc.js';

export type DocParts = ReturnType<typeof parts>;

/** What one transaction touched, as far as the projection cares. */
export interface Touched {
  nodeIds: Set<string>;
  edgeIds: Set<string>;
  /** Flow-level data (meta, the description) changed. */
  structure: boolean;
  /** Nodes or edges were reordered. */
  order: boolean;
}

export class FlowDocument {
  private docNow: Y.Doc;
  private p: DocParts;
  /**
   * Each node's and edge's JSON (`n:id`, `e:id`), dropped when a transaction touches it: reading
   * the whole document back on every keystroke (the toolbar's save state, the inspector) costs
   * tens of milliseconds on a flow of a thousand nodes.
   */
  private readonly json = new Map<string, FlowNodeT | FlowEdgeT>();
  /** The serialized flow at the current document version (cleared by every change). */
  private text: string | undefined;
  private versionNow = 0;

  constructor(
    doc: Y.Doc,
    readonly registry: KindRegistry,
    readonly layout: ConfigLayout,
  ) {
    this.docNow = doc;
    this.p = parts(doc);
  }

  get doc(): Y.Doc {
    return this.docNow;
  }

  get parts(): DocParts {
    return this.p;
  }

  /** Increases with every document change. */
  get version(): number {
    return this.versionNow;
  }

  /** Moves to another document: every cache is dropped and the version moves on. */
  replace(doc: Y.Doc): void {
    this.docNow = doc;
    this.p = parts(doc);
    this.json.clear();
    this.text = undefined;
    this.versionNow++;
  }

  /** Reads which nodes and edges a transaction touched, and drops their cached JSON. */
  touchedBy(tr: Y.Transaction): Touched {
    const nodeIds = new Set<string>();
    const edgeIds = new Set<string>();
    let structure = false;
    let order = false;
    const { nodes, edges, meta, nodeOrder, edgeOrder } = this.p as unknown as Record<string, unknown>;
    for (const [type] of tr.changed) {
      if (type === nodeOrder || type === edgeOrder) order = true;
      if (type === meta) structure = true;
      // A flow-level text (the description) changed inside `meta`.
      if ((type as Y.AbstractType<unknown>)._item?.parent === meta) structure = true;
    }
    for (const [type, keys] of tr.changed) {
      if (type === nodes) for (const k of keys) if (k) nodeIds.add(k);
      if (type === edges) for (const k of keys) if (k) edgeIds.add(k);
      // Nested change: find the node or edge map that holds it.
      let t: Y.AbstractType<unknown> | null = type as Y.AbstractType<unknown>;
      while (t?._item) {
        const parent = t._item.parent as Y.AbstractType<unknown>;
        if (parent === nodes && t._item.parentSub) nodeIds.add(t._item.parentSub);
        if (parent === edges && t._item.parentSub) edgeIds.add(t._item.parentSub);
        t = parent;
      }
    }
    for (const id of nodeIds) this.json.delete(`n:${id}`);
    for (const id of edgeIds) this.json.delete(`e:${id}`);
    return { nodeIds, edgeIds, structure, order };
  }

  /** A change the store reacts to: a new version, whose text is not known yet. */
  bump(): void {
    this.versionNow++;
    this.text = undefined;
  }

  /** The flow, sharing the cached node and edge objects: for readers that do not change it. */
  flow(): Flow {
    const cached = <T>(key: string, read: () => T): T => {
      let v = this.json.get(key) as T | undefined;
      if (v === undefined) {
        v = read();
        this.json.set(key, v as FlowNodeT);
      }
      return v;
    };
    return docToFlow(this.docNow, this.layout, {
      node: (id, m) => cached(`n:${id}`, () => readNode(id, m, this.layout)),
      edge: (id, m) => cached(`e:${id}`, () => readEdge(id, m, this.layout)),
    });
  }

  /** The flow as saved; computed once per document version. */
  serialize(): string {
    this.text ??= serializeFlow(this.flow());
    return this.text;
  }

  get hasText(): boolean {
    return this.text !== undefined;
  }

  /** The serialized text of the current version, computed elsewhere (the worker). */
  offerText(text: string): void {
    this.text ??= text;
  }

  meta(key: string): unknown {
    return readMeta(key, this.p.meta.get(key));
  }

  readNode(id: string): FlowNodeT | undefined {
    const m = this.p.nodes.get(id);
    return m ? readNode(id, m, this.layout) : undefined;
  }

  readEdge(id: string): FlowEdgeT | undefined {
    const m = this.p.edges.get(id);
    return m ? readEdge(id, m, this.layout) : undefined;
  }

  /** Node ids in document order. */
  nodeIds(): string[] {
    return orderedIds(this.p.nodes, this.p.nodeOrder);
  }

  hasNode(id: string): boolean {
    return this.p.nodes.has(id);
  }

  hasEdge(id: string): boolean {
    return this.p.edges.has(id);
  }

  get nodeCount(): number {
    return this.p.nodes.size;
  }

  /** Every id in use by a node or an edge (new ids avoid them). */
  takenIds(): Set<string> {
    return new Set([...this.p.nodes.keys(), ...this.p.edges.keys()]);
  }

  kindOf(id: string): NodeKindDefinition | undefined {
    const k = this.p.nodes.get(id)?.get('kind');
    return typeof k === 'string' ? this.registry.get(k) : undefined;
  }

  /** The label a person knows a node by: its label, its config name, or its id. */
  displayName(id: string): string {
    const m = this.p.nodes.get(id);
    const label = m?.get('label');
    if (typeof label === 'string' && label) return label;
    const name = readConfig(m, this.layout).name;
    return typeof name === 'string' && name ? name : id;
  }

  /** What edges say about each node (`2 tools`, `observes writer`), for `EditorStore.links`. */
  links(): Map<string, string> {
    const tools = new Map<string, number>();
    const observes = new Map<string, string[]>();
    for (const [, m] of this.p.edges.entries()) {
      const kind = m.get('kind');
      const s = m.get('source') as string;
      const t = m.get('target') as string;
      if (kind === 'tools') tools.set(t, (tools.get(t) ?? 0) + 1);
      if (kind === 'observe') observes.set(s, [...(observes.get(s) ?? []), this.displayName(t)]);
    }
    const out = new Map<string, string>();
    for (const [id, n] of tools) out.set(id, `${n} tool${n === 1 ? '' : 's'}`);
    for (const [id, list] of observes) out.set(id, `observes ${list.join(', ')}`);
    return out;
  }
}
