/**
 * The editor's state without React: the flow lives in a Y.Doc; the React Flow nodes and edges
 * are derived from it, rebuilt only for what a transaction touched (unchanged nodes keep their
 * object identity, so React Flow and memoized node components skip them). Transient view state
 * (selection, a drag in progress, measured sizes) stays outside the document until an action
 * ends, then is written as one transaction.
 */
import type { KindRegistry, NodeKindDefinition } from '@switchboard/nodes/core';
import {
  dict,
  type Flow,
  type FlowEdgeT,
  type FlowNodeT,
  ownValue,
  type Problem,
  serializeFlow,
} from '@switchboard/schemas/core';
import type { Edge, MarkerType, Node } from '@xyflow/react';
import * as Y from 'yjs';
import { type ConcurrentAddWatch, watchConcurrentAdds } from '../collab/concurrentAdds.js';
import { watchTextChanges } from '../collab/textCarets.js';
import { edgeCaption } from '../model/captions.js';
import { copyFragment, type FlowFragment, pasteFragment } from '../model/clipboard.js';
import { defaultHandles, judgeConnection } from '../model/connect.js';
import { EDGE_COLORS } from '../model/edgeStyle.js';
import {
  addNodes,
  type NodePatch,
  patchNodes,
  readConfig,
  removeElements,
  replaceConfig,
  setConfigValue,
  setMeta,
} from '../model/edits.js';
import {
  type ConfigLayout,
  configLayout,
  docToFlow,
  LOCAL,
  loadFlowIntoDoc,
  orderedIds,
  parts,
  readEdge,
  readMeta,
  readNode,
} from '../model/flowDoc.js';
import { idPrefix, newId } from '../model/ids.js';
import { growTeams, type TeamGeometry } from '../model/teamFit.js';
import { ESTIMATED_FACE, estimatedHandles } from './estimates.js';
import { KeyedStore } from './keyed.js';
import { OffThread, type OffThreadAnswer } from './offThread.js';
import { RunState } from './runState.js';

export interface NodeData extends Record<string, unknown> {
  kind: string;
  label?: string;
  config: Record<string, unknown>;
}

export interface EdgeData extends Record<string, unknown> {
  kind: string;
  caption: string;
}

export type SbNode = Node<NodeData>;
export type SbEdge = Edge<EdgeData>;

type XY = { x: number; y: number };
type Size = { width: number; height: number };

interface NodeUi {
  position?: XY;
  size?: Size;
  measured?: Size;
  dragging?: boolean;
}

/** Node changes the store understands (a subset of React Flow's `NodeChange`). */
export type NodeChangeLike =
  | { type: 'position'; id: string; position?: XY; dragging?: boolean }
  | {
      type: 'dimensions';
      id: string;
      dimensions?: Size;
      setAttributes?: boolean | 'width' | 'height';
      resizing?: boolean;
    }
  | { type: 'select'; id: string; selected: boolean }
  | { type: string; id?: string };

export type EdgeChangeLike =
  | { type: 'select'; id: string; selected: boolean }
  | { type: string; id?: string };

export interface ProblemSet {
  errors: Problem[];
  warnings: Problem[];
}

/** Severity and messages of the problems on one node or edge, as one comparable string. */
export type ProblemMark = string;

const ROUND = (v: number) => Math.round(v);

/** Flows up to this many nodes are validated as they load; larger ones a moment after. */
const VALIDATE_AT_ONCE_MAX = 1000;

/** The shared validator's verdict on a flow (`validate` from `@switchboard/nodes`). */
export type FlowValidator = (flow: Flow) => ProblemSet;

export interface EditorStoreOptions {
  registry: KindRegistry;
  /** Milliseconds of quiet after an edit before validation runs. Default 250. */
  validateDelay?: number;
  /**
   * The validator, when the caller has it at hand (tests, headless clients): validation is then
   * synchronous from the start. Without it the store loads it (`./validator.ts`, which brings
   * Ajv) on first need, so that it stays out of the editor's first load.
   */
  validate?: FlowValidator;
  /**
   * Starts a worker running `validate.worker.ts` (the browser build passes one): validation after
   * an edit then runs off the main thread. Without it, or when the worker fails, it runs here.
   */
  validationWorker?: () => Worker;
  doc?: Y.Doc;
}

export class EditorStore {
  /** The document; replaced as a whole when the editor joins a co-editing room. */
  private docNow: Y.Doc;
  readonly registry: KindRegistry;
  /** How configs map into the shared document (from the registry's schemas). */
  readonly layout: ConfigLayout;
  private undo_: Y.UndoManager;
  readonly runState = new RunState();
  /** Per node id: who else has it selected (`name|color` lines), from co-editing awareness. */
  readonly presence = new KeyedStore<string>('');
  /** Per node/edge id: `''`, or `error\n…messages` / `warning\n…messages`. */
  readonly marks = new KeyedStore<ProblemMark>('');
  /** Per node id: what edges say about it (`2 tools`, `observes writer`). */
  readonly links = new KeyedStore<string>('');
  /**
   * Per node id: its kind, label and config as its face shows them. An edit of content only
   * (typing in the inspector) changes this entry and nothing else: the React Flow node keeps its
   * identity, so React Flow does no work and only that node's face re-renders. The `data` of a
   * React Flow node is therefore the content at its last change of frame (position, size,
   * selection, parent, kind); faces read this store instead.
   */
  readonly content = new KeyedStore<NodeData | undefined>(undefined);

  private p: ReturnType<typeof parts>;
  private readonly nodeCache = new Map<string, { rf: SbNode; kind: string; parent?: string }>();
  private readonly edgeCache = new Map<string, SbEdge>();
  /**
   * Each node's and edge's JSON (`n:id`, `e:id`), dropped when a transaction touches it: reading
   * the whole document back on every keystroke (the toolbar's save state, the inspector) costs
   * tens of milliseconds on a flow of a thousand nodes.
   */
  private readonly json = new Map<string, FlowNodeT | FlowEdgeT>();
  private readonly ui = new Map<string, NodeUi>();
  /** The serialized flow at the current document version (cleared by every change). */
  private text: string | undefined;
  private selectedNodes = new Set<string>();
  private selectedEdges = new Set<string>();
  private nodes: SbNode[] = [];
  private edges: SbEdge[] = [];
  private snapshot: { nodes: SbNode[]; edges: SbEdge[] } = { nodes: [], edges: [] };
  private readonly listeners = new Set<() => void>();
  private readonly docListeners = new Set<() => void>();
  private readonly loadListeners = new Set<() => void>();
  private problemSet: ProblemSet = { errors: [], warnings: [] };
  private readonly problemListeners = new Set<() => void>();
  private validateTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly validateDelay: number;
  private validator: FlowValidator | undefined;
  private validatorLoading: Promise<FlowValidator> | undefined;
  /** Validation and serialization after edits, in a worker (when the browser build gives one). */
  private readonly offThread: OffThread | undefined;
  /** The document version the request in flight to the worker is about. */
  private offThreadVersion = -1;
  private readonly textWaiters: Array<() => void> = [];
  private clipboard: FlowFragment | undefined;
  private version = 0;
  /** Re-adds what this editor drew when a co-editor's add took the same id at the same moment. */
  private adds: ConcurrentAddWatch;
  /** Records co-editors' changes to texts, so inputs can keep their caret exactly (textCarets.ts). */
  private offTexts: () => void;

  constructor(opts: EditorStoreOptions) {
    this.registry = opts.registry;
    this.layout = configLayout(opts.registry);
    this.validateDelay = opts.validateDelay ?? 250;
    this.validator = opts.validate;
    this.offThread = opts.validationWorker
      ? new OffThread(
          opts.validationWorker,
          (a) => this.offThreadAnswer(a),
          () => {
            this.offThreadVersion = -1;
            this.validateNow();
            this.wakeTextWaiters();
          },
        )
      : undefined;
    // Fetched while the editor draws, so that it is at hand for the first flow loaded.
    if (!this.validator && typeof window !== 'undefined') void this.loadValidator();
    this.docNow = opts.doc ?? new Y.Doc();
    this.p = parts(this.docNow);
    this.undo_ = this.newUndoManager();
    this.adds = watchConcurrentAdds(this.docNow, this.layout);
    this.offTexts = watchTextChanges(this.docNow);
    this.docNow.on('afterTransaction', this.onTransaction);
    this.rebuildAll();
  }

  get doc(): Y.Doc {
    return this.docNow;
  }

  get undoManager(): Y.UndoManager {
    return this.undo_;
  }

  private newUndoManager(): Y.UndoManager {
    // Only this editor's own edits are undone; a co-editor's changes are never tracked.
    return new Y.UndoManager([this.p.meta, this.p.nodes, this.p.edges, this.p.nodeOrder, this.p.edgeOrder], {
      trackedOrigins: new Set([LOCAL]),
      captureTimeout: 500,
    });
  }

  dispose(): void {
    this.adds.dispose();
    this.offTexts();
    this.docNow.off('afterTransaction', this.onTransaction);
    if (this.validateTimer) clearTimeout(this.validateTimer);
    this.offThread?.dispose();
    this.undo_.destroy();
  }

  /**
   * Switches to another document (a co-editing room's): view state, selection and undo history
   * start afresh, everything derived is rebuilt, and listeners hear one document change.
   */
  replaceDoc(doc: Y.Doc): void {
    if (doc === this.docNow) return;
    this.docNow.off('afterTransaction', this.onTransaction);
    this.undo_.destroy();
    this.adds.dispose();
    this.offTexts();
    this.docNow = doc;
    this.p = parts(doc);
    this.undo_ = this.newUndoManager();
    this.adds = watchConcurrentAdds(doc, this.layout);
    this.offTexts = watchTextChanges(doc);
    doc.on('afterTransaction', this.onTransaction);
    this.keepMeasuredOnly();
    this.selectedNodes.clear();
    this.selectedEdges.clear();
    this.nodeCache.clear();
    this.edgeCache.clear();
    this.json.clear();
    this.text = undefined;
    this.version++;
    this.rebuildAll();
    this.recomputeLinks();
    for (const fn of this.docListeners) fn();
    this.validateLoaded();
    for (const fn of this.loadListeners) fn();
  }

  /**
   * Forgets view state on a new document except measured sizes: a node whose id is in the new
   * document too keeps its element on the canvas, and React Flow measures an element again only
   * when its size changes; without its measured size the node would stay on its estimate.
   */
  private keepMeasuredOnly(): void {
    for (const [id, ui] of this.ui) {
      if (ui.measured) this.ui.set(id, { measured: ui.measured });
      else this.ui.delete(id);
    }
  }

  // ---- reading --------------------------------------------------------------------------

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  getSnapshot = (): { nodes: SbNode[]; edges: SbEdge[] } => this.snapshot;

  /** Listens to document changes only (persistence, flow settings panel). */
  onDocChange(fn: () => void): () => void {
    this.docListeners.add(fn);
    return () => this.docListeners.delete(fn);
  }

  /** Listens to whole-document loads (open, import, joining a room), e.g. to fit the view. */
  onLoad(fn: () => void): () => void {
    this.loadListeners.add(fn);
    return () => this.loadListeners.delete(fn);
  }

  /** Increases with every document change. */
  get docVersion(): number {
    return this.version;
  }

  /** The flow, sharing the cached node and edge objects: for readers that do not change it. */
  private sharedFlow(): Flow {
    const cached = <T>(key: string, read: () => T): T => {
      let v = this.json.get(key) as T | undefined;
      if (v === undefined) {
        v = read();
        this.json.set(key, v as FlowNodeT);
      }
      return v;
    };
    return docToFlow(this.doc, this.layout, {
      node: (id, m) => cached(`n:${id}`, () => readNode(id, m, this.layout)),
      edge: (id, m) => cached(`e:${id}`, () => readEdge(id, m, this.layout)),
    });
  }

  toFlow(): Flow {
    return structuredClone(this.sharedFlow());
  }

  /** The flow, not copied (cached per document version): for readers that never change it. */
  flowView(): Readonly<Flow> {
    return this.sharedFlow();
  }

  /** The flow as saved; computed once per document version (autosave and save state share it). */
  serialize(): string {
    this.text ??= serializeFlow(this.sharedFlow());
    return this.text;
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

  kindOf(id: string): NodeKindDefinition | undefined {
    const k = this.p.nodes.get(id)?.get('kind');
    return typeof k === 'string' ? this.registry.get(k) : undefined;
  }

  get selection(): { nodes: string[]; edges: string[] } {
    return this.getSelection();
  }

  private selectionSnapshot: { nodes: string[]; edges: string[] } = { nodes: [], edges: [] };

  /** The selection, as an object that keeps its identity until the selection changes. */
  getSelection = (): { nodes: string[]; edges: string[] } => {
    const s = this.selectionSnapshot;
    if (
      s.nodes.length !== this.selectedNodes.size ||
      s.edges.length !== this.selectedEdges.size ||
      s.nodes.some((id) => !this.selectedNodes.has(id)) ||
      s.edges.some((id) => !this.selectedEdges.has(id))
    )
      this.selectionSnapshot = { nodes: [...this.selectedNodes], edges: [...this.selectedEdges] };
    return this.selectionSnapshot;
  };

  // ---- problems -------------------------------------------------------------------------

  get problems(): ProblemSet {
    return this.problemSet;
  }

  subscribeProblems = (fn: () => void): (() => void) => {
    this.problemListeners.add(fn);
    return () => this.problemListeners.delete(fn);
  };

  getProblems = (): ProblemSet => this.problemSet;

  /**
   * Runs the validator now (normally it runs a moment after the last edit). Before the validator
   * has loaded, it loads it and validates then; `validated()` waits for that.
   */
  validateNow(): ProblemSet {
    if (this.validateTimer) clearTimeout(this.validateTimer);
    this.validateTimer = undefined;
    // An answer the worker is still working on is older than this.
    this.offThread?.drop();
    const validate = this.validator;
    if (!validate) {
      void this.loadValidator().then(() => this.validateNow());
      return this.problemSet;
    }
    const r = validate(this.sharedFlow());
    this.setProblems({ errors: r.errors, warnings: r.warnings });
    return this.problemSet;
  }

  /** Validates the document as it is now, loading the validator first if needed. */
  async validated(): Promise<ProblemSet> {
    await this.loadValidator();
    return this.validateNow();
  }

  private loadValidator(): Promise<FlowValidator> {
    if (this.validator) return Promise.resolve(this.validator);
    this.validatorLoading ??= import('./validator.js').then((m) => {
      this.validator = m.validate;
      return m.validate;
    });
    return this.validatorLoading;
  }

  /** Shows problems reported from elsewhere (the server refusing a save). */
  setProblems(set: ProblemSet): void {
    this.problemSet = set;
    const marks = new Map<string, string[]>();
    const add = (p: Problem, sev: string) => {
      const id = p.nodeId ?? p.edgeId;
      if (!id) return;
      const list = marks.get(id) ?? [];
      if (list.length === 0) list.push(sev);
      list.push(p.message);
      marks.set(id, list);
    };
    for (const p of set.errors) add(p, 'error');
    for (const p of set.warnings) add(p, 'warning');
    this.marks.replaceAll(new Map([...marks].map(([k, v]) => [k, v.join('\n')])));
    for (const fn of this.problemListeners) fn();
  }

  /**
   * A flow just loaded shows its problems with its first drawing; a very large one is validated
   * a moment later instead, so that it is drawn sooner (at 5,000 nodes validation takes a good
   * part of a second).
   */
  private validateLoaded(): void {
    if (this.p.nodes.size <= VALIDATE_AT_ONCE_MAX) {
      this.validateNow();
      // The worker starts (and compiles its schemas) now rather than at the first pause in typing.
      this.offThread?.warm(this.sharedFlow());
    } else this.scheduleValidation();
  }

  private scheduleValidation(): void {
    if (this.validateTimer) clearTimeout(this.validateTimer);
    this.validateTimer = setTimeout(() => this.validateSoon(), this.validateDelay);
  }

  /** Validates in the worker when there is one (the answer comes a moment later), else here. */
  private validateSoon(): void {
    this.validateTimer = undefined;
    if (!this.offThread?.usable) {
      this.validateNow();
      return;
    }
    this.offThreadVersion = this.version;
    this.offThread.send(this.sharedFlow());
  }

  private offThreadAnswer(a: OffThreadAnswer): void {
    const current = this.offThreadVersion === this.version;
    this.offThreadVersion = -1;
    if (current && a.text !== undefined) this.text ??= a.text;
    // Problems about an older state are dropped: a newer request follows the newer edit.
    if (current || !this.validateTimer)
      this.setProblems({ errors: a.errors ?? [], warnings: a.warnings ?? [] });
    this.wakeTextWaiters();
  }

  private wakeTextWaiters(): void {
    for (const fn of this.textWaiters.splice(0)) fn();
  }

  /**
   * The serialized flow as it is now, without serializing on the main thread when the worker is
   * about to send it (the save state and autosave wait a moment after an edit anyway); undefined
   * when the document changed while waiting.
   */
  async settledText(): Promise<string | undefined> {
    const version = this.version;
    if (this.text === undefined && this.offThreadVersion === version && this.offThread?.usable)
      await new Promise<void>((resolve) => this.textWaiters.push(resolve));
    // Changed meanwhile: the caller waits for the next quiet moment.
    return this.version === version ? this.serialize() : undefined;
  }

  // ---- document events ------------------------------------------------------------------

  private onTransaction = (tr: Y.Transaction): void => {
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
    if (!structure && !order && nodeIds.size === 0 && edgeIds.size === 0) return;
    this.version++;
    this.text = undefined;
    this.refresh(nodeIds, edgeIds, false, order);
    for (const fn of this.docListeners) fn();
    this.scheduleValidation();
  };

  private rebuildAll(): void {
    this.refresh(new Set(this.p.nodes.keys()), new Set(this.p.edges.keys()), false, true);
  }

  private deriveNode(id: string): SbNode | undefined {
    const m = this.p.nodes.get(id);
    if (!m) return undefined;
    const kind = String(m.get('kind') ?? '');
    const def = this.registry.get(kind);
    const ui = this.ui.get(id);
    const docPos = m.get('position') as XY | undefined;
    const position = ui?.position ?? docPos ?? { x: 0, y: 0 };
    const size =
      ui?.size ?? (m.get('size') as Size | undefined) ?? (def?.display.group ? def.display.size : undefined);
    const label = m.get('label');
    const data: NodeData = { kind, config: readConfig(m, this.layout) };
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
    if (this.selectedNodes.has(id)) rf.selected = true;
    return rf;
  }

  /** A parent React Flow can use: it exists, is a group, and does not lead into a cycle. */
  private validParent(id: string): string | undefined {
    const parent = this.p.nodes.get(id)?.get('parent');
    if (typeof parent !== 'string' || !this.p.nodes.has(parent)) return undefined;
    const seen = new Set([id]);
    let cur: string | undefined = parent;
    while (cur !== undefined) {
      if (seen.has(cur)) return undefined;
      seen.add(cur);
      const next: unknown = this.p.nodes.get(cur)?.get('parent');
      cur = typeof next === 'string' && this.p.nodes.has(next) ? next : undefined;
    }
    return parent;
  }

  private deriveEdge(id: string): SbEdge | undefined {
    const m = this.p.edges.get(id);
    if (!m) return undefined;
    const e = readEdge(id, m, this.layout);
    const s = this.p.nodes.get(e.source);
    const t = this.p.nodes.get(e.target);
    if (!s || !t) return undefined; // dangling: listed as a problem, not drawn
    const sDef = this.registry.get(String(s.get('kind')));
    const tDef = this.registry.get(String(t.get('kind')));
    const dflt = defaultHandles(e.kind, sDef, tDef);
    const has = (def: NodeKindDefinition | undefined, h: string | undefined, type: string) =>
      !!h && !!def?.ports.some((p) => p.id === h && p.type === type);
    const sourceHandle = has(sDef, e.sourceHandle, 'source') ? e.sourceHandle : dflt.sourceHandle;
    const targetHandle = has(tDef, e.targetHandle, 'target') ? e.targetHandle : dflt.targetHandle;
    if (!sourceHandle || !targetHandle) return undefined; // kinds without such ports: a validator error
    const caption = edgeCaption(e, sDef?.role, readConfig(s, this.layout));
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
    if (this.selectedEdges.has(id)) rf.selected = true;
    return rf;
  }

  /**
   * Rebuilds the React Flow objects of the given ids and reassembles the arrays. An object whose
   * frame did not change keeps its identity (its content goes to `content`); when no object
   * changed and nothing was added, removed or reordered, the snapshot stays as it is and React
   * Flow is not told anything.
   */
  private refresh(nodeIds: Set<string>, edgeIds: Set<string>, uiOnly = false, order = false): void {
    let structural = false;
    let changed = order;
    for (const id of nodeIds) {
      const prev = this.nodeCache.get(id);
      const rf = this.deriveNode(id);
      if (!rf) {
        if (prev) changed = true;
        this.nodeCache.delete(id);
        this.ui.delete(id);
        this.selectedNodes.delete(id);
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
        for (const [id, m] of this.p.edges.entries())
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
          this.selectedEdges.delete(id);
        }
      }
      if (edgeIds.size > 0 || structural) this.recomputeLinks();
      if (!changed && !structural) return;
      // Order React Flow needs: a parent before its children; otherwise document order.
      const order = orderedIds(this.p.nodes, this.p.nodeOrder);
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
      this.edges = orderedIds(this.p.edges, this.p.edgeOrder)
        .map((id) => this.edgeCache.get(id))
        .filter((e): e is SbEdge => !!e);
    } else {
      if (!changed) return;
      this.nodes = this.nodes.map((n) => this.nodeCache.get(n.id)?.rf ?? n);
    }
    this.snapshot = { nodes: this.nodes, edges: this.edges };
    for (const fn of this.listeners) fn();
  }

  private refreshUi(nodeIds: Iterable<string>, edgeIds: Iterable<string> = []): void {
    let edgesChanged = false;
    for (const id of edgeIds) {
      const rf = this.deriveEdge(id);
      if (rf) this.edgeCache.set(id, rf);
      edgesChanged = true;
    }
    if (edgesChanged) this.edges = this.edges.map((e) => this.edgeCache.get(e.id) ?? e);
    this.refresh(new Set(nodeIds), new Set(), true, edgesChanged);
  }

  private recomputeLinks(): void {
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
    this.links.replaceAll(out);
  }

  /** The label a person knows a node by: its label, its config name, or its id. */
  displayName(id: string): string {
    const m = this.p.nodes.get(id);
    const label = m?.get('label');
    if (typeof label === 'string' && label) return label;
    const name = readConfig(m, this.layout).name;
    return typeof name === 'string' && name ? name : id;
  }

  // ---- React Flow change handlers ---------------------------------------------------------

  applyNodeChanges = (changes: NodeChangeLike[]): void => {
    const touched = new Set<string>();
    for (const c of changes) {
      if (!c.id) continue;
      if (c.type === 'position' && 'position' in c) {
        const ui = this.uiOf(c.id);
        if (c.position) ui.position = c.position;
        ui.dragging = !!c.dragging;
        touched.add(c.id);
      } else if (c.type === 'dimensions' && 'dimensions' in c && c.dimensions) {
        const ui = this.uiOf(c.id);
        if (c.setAttributes) ui.size = c.dimensions;
        else ui.measured = c.dimensions;
        touched.add(c.id);
      } else if (c.type === 'select' && 'selected' in c) {
        if (c.selected) this.selectedNodes.add(c.id);
        else this.selectedNodes.delete(c.id);
        touched.add(c.id);
      }
    }
    if (touched.size) this.refreshUi(touched);
  };

  applyEdgeChanges = (changes: EdgeChangeLike[]): void => {
    const touched: string[] = [];
    for (const c of changes)
      if (c.type === 'select' && c.id && 'selected' in c) {
        if (c.selected) this.selectedEdges.add(c.id);
        else this.selectedEdges.delete(c.id);
        touched.push(c.id);
      }
    if (touched.length) this.refreshUi([], touched);
  };

  private uiOf(id: string): NodeUi {
    let ui = this.ui.get(id);
    if (!ui) {
      ui = {};
      this.ui.set(id, ui);
    }
    return ui;
  }

  /** Replaces the selection (problem list clicks, select all, after paste). */
  select(sel: { nodes?: string[]; edges?: string[] }): void {
    const touchedN = new Set([...this.selectedNodes, ...(sel.nodes ?? [])]);
    const touchedE = new Set([...this.selectedEdges, ...(sel.edges ?? [])]);
    this.selectedNodes = new Set((sel.nodes ?? []).filter((id) => this.p.nodes.has(id)));
    this.selectedEdges = new Set((sel.edges ?? []).filter((id) => this.p.edges.has(id)));
    this.refreshUi(touchedN, touchedE);
  }

  // ---- geometry -------------------------------------------------------------------------

  /** The size a node is drawn with: resized, stored, measured, or its kind's default. */
  sizeOf(id: string): Size {
    const ui = this.ui.get(id);
    const m = this.p.nodes.get(id);
    const def = this.kindOf(id);
    return (
      ui?.size ??
      (m?.get('size') as Size | undefined) ??
      ui?.measured ??
      def?.display.size ?? { width: 180, height: 60 }
    );
  }

  private positionOf(id: string): XY {
    return (
      this.ui.get(id)?.position ?? (this.p.nodes.get(id)?.get('position') as XY | undefined) ?? { x: 0, y: 0 }
    );
  }

  /** Absolute canvas position of a node (positions of members are relative to their team). */
  absolutePosition(id: string): XY {
    let { x, y } = this.positionOf(id);
    let parent = this.nodeCache.get(id)?.parent;
    let guard = 0;
    while (parent && guard++ < 100) {
      const p = this.positionOf(parent);
      x += p.x;
      y += p.y;
      parent = this.nodeCache.get(parent)?.parent;
    }
    return { x, y };
  }

  /** The innermost team whose box holds `point`, leaving out `exclude` and its members. */
  teamAt(point: XY, exclude: Set<string> = new Set()): string | undefined {
    const banned = exclude.size ? this.descendants(exclude) : exclude;
    let best: { id: string; depth: number; index: number } | undefined;
    this.nodes.forEach((n, index) => {
      if (n.type !== 'group' || banned.has(n.id)) return;
      const a = this.absolutePosition(n.id);
      const s = this.sizeOf(n.id);
      if (point.x < a.x || point.y < a.y || point.x > a.x + s.width || point.y > a.y + s.height) return;
      let depth = 0;
      for (let p = this.nodeCache.get(n.id)?.parent; p && depth < 100; p = this.nodeCache.get(p)?.parent)
        depth++;
      if (!best || depth > best.depth || (depth === best.depth && index > best.index))
        best = { id: n.id, depth, index };
    });
    return best?.id;
  }

  private descendants(ids: Set<string>): Set<string> {
    const out = new Set(ids);
    let grew = true;
    while (grew) {
      grew = false;
      for (const [id, e] of this.nodeCache)
        if (e.parent && out.has(e.parent) && !out.has(id)) {
          out.add(id);
          grew = true;
        }
    }
    return out;
  }

  // ---- edits ----------------------------------------------------------------------------

  /** Runs one discrete user action as its own undo step. */
  private step(fn: () => void): void {
    this.undoManager.stopCapturing();
    fn();
    this.undoManager.stopCapturing();
  }

  private takenIds(): Set<string> {
    return new Set([...this.p.nodes.keys(), ...this.p.edges.keys()]);
  }

  /**
   * Adds a node of `kind` at an absolute canvas point; dropped inside a team it becomes a member
   * (its position is then relative to the team). Returns the new id.
   */
  addNode(kind: string, at: XY): string {
    const def = this.registry.require(kind);
    const id = newId(idPrefix(kind), this.takenIds());
    const parent = this.teamAt(at);
    const origin = parent ? this.absolutePosition(parent) : { x: 0, y: 0 };
    const node: FlowNodeT = {
      id,
      kind,
      position: { x: ROUND(at.x - origin.x), y: ROUND(at.y - origin.y) },
      config: def.defaults() as Record<string, unknown>,
    };
    if (parent) node.parent = parent;
    if (def.display.size) node.size = { ...def.display.size };
    this.step(() => {
      addNodes(this.doc, [node], [], this.layout);
      if (parent) this.growTeams(dict<NodePatch>(), [parent]);
    });
    this.select({ nodes: [id] });
    return id;
  }

  /**
   * Ends a drag: writes the final positions, and moves each dragged node into the team under
   * its centre or out of the team it left (positions converted between relative and absolute).
   */
  commitDrag(ids: string[]): void {
    const dragged = new Set(ids.filter((id) => this.p.nodes.has(id)));
    const patches = dict<NodePatch>();
    for (const id of dragged) {
      const current = this.nodeCache.get(id)?.parent;
      if (current && dragged.has(current)) {
        // Moves along with its team; its relative position is unchanged.
        const pos = this.positionOf(id);
        patches[id] = { position: { x: ROUND(pos.x), y: ROUND(pos.y) } };
        continue;
      }
      const abs = this.absolutePosition(id);
      const size = this.sizeOf(id);
      const centre = { x: abs.x + size.width / 2, y: abs.y + size.height / 2 };
      const team = this.teamAt(centre, new Set([id]));
      if (team !== current) {
        const origin = team ? this.absolutePosition(team) : { x: 0, y: 0 };
        patches[id] = {
          parent: team ?? null,
          position: { x: ROUND(abs.x - origin.x), y: ROUND(abs.y - origin.y) },
        };
      } else {
        const pos = this.positionOf(id);
        patches[id] = { position: { x: ROUND(pos.x), y: ROUND(pos.y) } };
      }
    }
    // A team grows to hold what was dropped into it (or dragged across its border).
    const teams = new Set<string>();
    for (const [id, patch] of Object.entries(patches)) {
      const team = patch.parent === undefined ? this.nodeCache.get(id)?.parent : patch.parent;
      if (team) teams.add(team);
    }
    const grown = this.teamPatches(patches, teams);
    for (const id of dragged) {
      const ui = this.ui.get(id);
      if (ui) {
        delete ui.position;
        ui.dragging = false;
      }
    }
    const changed = Object.entries(patches).some(([id, patch]) => {
      const m = this.p.nodes.get(id)!;
      const pos = m.get('position') as XY | undefined;
      return (
        patch.parent !== undefined ||
        patch.size !== undefined ||
        !pos ||
        pos.x !== patch.position?.x ||
        pos.y !== patch.position?.y
      );
    });
    if (changed || grown) this.step(() => patchNodes(this.doc, patches));
    else this.refreshUi(dragged);
  }

  /** Adds to `patches` what makes `teams` (and the teams around them) hold their members; whether it did. */
  private teamPatches(patches: Record<string, NodePatch>, teams: Iterable<string>): boolean {
    const before = Object.keys(patches).length;
    const sizes = JSON.stringify(patches);
    const parentOf = (id: string): string | undefined => {
      const p = ownValue(patches, id)?.parent;
      return p === undefined ? this.nodeCache.get(id)?.parent : (p ?? undefined);
    };
    const g: TeamGeometry = {
      positionOf: (id) => this.positionOf(id),
      sizeOf: (id) => this.sizeOf(id),
      parentOf,
      membersOf: (team) => [...this.nodeCache.keys()].filter((id) => parentOf(id) === team),
      isTeam: (id) => !!this.kindOf(id)?.display.group,
    };
    growTeams(patches, teams, g);
    return Object.keys(patches).length !== before || JSON.stringify(patches) !== sizes;
  }

  /** Grows `teams` now, as its own change (after a node was added into one). */
  private growTeams(patches: Record<string, NodePatch>, teams: string[]): void {
    if (this.teamPatches(patches, teams)) patchNodes(this.doc, patches);
  }

  /** Ends a resize of a team: its box (position may move when resized from the top or left). */
  commitResize(id: string, box: { x: number; y: number; width: number; height: number }): void {
    const ui = this.ui.get(id);
    if (ui) {
      delete ui.size;
      delete ui.position;
    }
    const patches = dict<NodePatch>();
    patches[id] = {
      position: { x: ROUND(box.x), y: ROUND(box.y) },
      size: { width: ROUND(box.width), height: ROUND(box.height) },
    };
    // Resizing from the top or left moves the members so they stay put on the canvas.
    for (const [child, entry] of this.nodeCache) {
      const cui = this.ui.get(child);
      if (entry.parent !== id || !cui?.position) continue;
      patches[child] = { position: { x: ROUND(cui.position.x), y: ROUND(cui.position.y) } };
      delete cui.position;
    }
    this.step(() => patchNodes(this.doc, patches));
  }

  /** Judges a connection between two handles (used while dragging and on drop). */
  judge(
    source: string,
    sourceHandle: string | null | undefined,
    target: string,
    targetHandle: string | null | undefined,
  ) {
    const sk = String(this.p.nodes.get(source)?.get('kind') ?? '');
    const tk = String(this.p.nodes.get(target)?.get('kind') ?? '');
    const existing = [...this.p.edges.values()].map((m) => ({
      kind: String(m.get('kind')),
      source: String(m.get('source')),
      target: String(m.get('target')),
    }));
    return judgeConnection(
      this.registry,
      { id: source, kind: sk, handle: sourceHandle },
      { id: target, kind: tk, handle: targetHandle },
      existing,
    );
  }

  /** Creates the edge a connection implies; returns its id, or the refusal reason. */
  connect(
    source: string,
    sourceHandle: string | null | undefined,
    target: string,
    targetHandle: string | null | undefined,
  ): { id: string } | { reason: string } {
    const v = this.judge(source, sourceHandle, target, targetHandle);
    if (!v.ok) return { reason: v.reason };
    const id = newId('e', this.takenIds());
    const edge: FlowEdgeT = { id, kind: v.kind, source, target };
    // Handles are implied by the edge kind; they are written only when they differ from that.
    const dflt = defaultHandles(v.kind, this.kindOf(source), this.kindOf(target));
    if (v.sourcePort.id !== dflt.sourceHandle) edge.sourceHandle = v.sourcePort.id;
    if (v.targetPort.id !== dflt.targetHandle) edge.targetHandle = v.targetPort.id;
    this.step(() => addNodes(this.doc, [], [edge], this.layout));
    return { id };
  }

  deleteSelection(): void {
    const { nodes, edges } = this.selection;
    if (!nodes.length && !edges.length) return;
    this.step(() => removeElements(this.doc, nodes, edges));
  }

  copySelection(): FlowFragment | undefined {
    const { nodes } = this.selection;
    if (!nodes.length) return undefined;
    this.clipboard = copyFragment(this.toFlow(), nodes);
    return this.clipboard;
  }

  /** Pastes a fragment (ours or one read from the system clipboard); selects what was pasted. */
  paste(fragment: FlowFragment | undefined = this.clipboard, offset = { x: 40, y: 40 }): string[] {
    if (!fragment || fragment.nodes.length === 0) return [];
    const out = pasteFragment(
      fragment,
      { nodeIds: new Set(this.p.nodes.keys()), edgeIds: new Set(this.p.edges.keys()) },
      this.registry,
      offset,
    );
    this.step(() => addNodes(this.doc, out.nodes, out.edges, this.layout));
    this.select({
      nodes: out.nodes.filter((n) => !n.parent || !out.nodes.some((m) => m.id === n.parent)).map((n) => n.id),
    });
    return out.nodes.map((n) => n.id);
  }

  duplicateSelection(): string[] {
    const frag = this.copySelection();
    return frag ? this.paste(frag) : [];
  }

  /** Replaces a whole config (the raw JSON editor), as one undo step. */
  replaceConfig(target: { node: string } | { edge: string }, config: Record<string, unknown>): void {
    this.step(() => replaceConfig(this.doc, target, config, this.layout));
  }

  /** Sets one config field. Typing merges into one undo step; other changes stand alone. */
  setConfig(target: { node: string } | { edge: string }, key: string, value: unknown, typing = false): void {
    if (typing) setConfigValue(this.doc, target, key, value, this.layout);
    else this.step(() => setConfigValue(this.doc, target, key, value, this.layout));
  }

  setNodeLabel(id: string, label: string, typing = false): void {
    const fn = () => patchNodes(this.doc, { [id]: { label: label === '' ? null : label } });
    if (typing) fn();
    else this.step(fn);
  }

  setEdgeLabel(id: string, label: string): void {
    const m = this.p.edges.get(id);
    if (!m) return;
    this.doc.transact(() => {
      if (label === '') m.delete('label');
      else m.set('label', label);
    }, LOCAL);
  }

  setMeta(key: string, value: unknown, typing = false): void {
    if (typing) setMeta(this.doc, key, value);
    else this.step(() => setMeta(this.doc, key, value));
  }

  /** Writes positions (and team sizes) computed by auto-layout, as one undo step. */
  applyLayout(boxes: Map<string, { x: number; y: number; width?: number; height?: number }>): void {
    const patches = dict<NodePatch>();
    for (const [id, b] of boxes) {
      if (!this.p.nodes.has(id)) continue;
      const patch: NodePatch = { position: { x: ROUND(b.x), y: ROUND(b.y) } };
      if (b.width !== undefined && b.height !== undefined && this.kindOf(id)?.display.group)
        patch.size = { width: ROUND(b.width), height: ROUND(b.height) };
      patches[id] = patch;
    }
    this.step(() => patchNodes(this.doc, patches));
  }

  /** Replaces the document (import, template, restore); starts a fresh undo history. */
  load(flow: unknown): void {
    this.keepMeasuredOnly();
    this.selectedNodes.clear();
    this.selectedEdges.clear();
    loadFlowIntoDoc(this.doc, flow, this.layout);
    this.undoManager.clear();
    this.validateLoaded();
    for (const fn of this.loadListeners) fn();
  }

  undo(): void {
    this.undoManager.undo();
  }

  redo(): void {
    this.undoManager.redo();
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
