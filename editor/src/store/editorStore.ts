/**
 * The editor's state without React, as one facade over its parts (see `editor/CONTEXT.md`):
 * the flow lives in a Y.Doc (`document.ts`); the React Flow nodes and edges are derived from it,
 * rebuilt only for what a transaction touched (`projection.ts`). Transient view state
 * (`viewState.ts`, `selection.ts`) stays outside the document until an action ends, then is
 * written as one transaction (`moves.ts`, `editing.ts`, `clipboard.ts`), one undo step each
 * (`history.ts`). Problems are validated a moment after an edit (`problems.ts`).
 */
import type { KindRegistry, NodeKindDefinition } from '@switchboard/nodes/core';
import type { Flow, FlowEdgeT, FlowNodeT } from '@switchboard/schemas/core';
import * as Y from 'yjs';
import { type ConcurrentAddWatch, watchConcurrentAdds } from '../collab/concurrentAdds.js';
import { watchTextChanges } from '../collab/textCarets.js';
import type { FlowFragment } from '../model/clipboard.js';
import { type ConfigLayout, configLayout, loadFlowIntoDoc } from '../model/flowDoc.js';
import { Clipboard } from './clipboard.js';
import { FlowDocument } from './document.js';
import { type ConfigTarget, Editing } from './editing.js';
import { Geometry } from './geometry.js';
import { History } from './history.js';
import { KeyedStore } from './keyed.js';
import { Moves } from './moves.js';
import { Problems } from './problems.js';
import { Projection, type Snapshot } from './projection.js';
import { RunState } from './runState.js';
import { Selection, type SelectionView } from './selection.js';
import type {
  EdgeChangeLike,
  FlowValidator,
  NodeChangeLike,
  NodeData,
  ProblemMark,
  ProblemSet,
  Size,
  XY,
} from './types.js';
import { ViewState } from './viewState.js';

export type {
  EdgeChangeLike,
  EdgeData,
  FlowValidator,
  NodeChangeLike,
  NodeData,
  ProblemMark,
  ProblemSet,
  SbEdge,
  SbNode,
} from './types.js';

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
  readonly registry: KindRegistry;
  /** How configs map into the shared document (from the registry's schemas). */
  readonly layout: ConfigLayout;
  readonly runState = new RunState();
  /** Per node id: who else has it selected (`name|color` lines), from co-editing awareness. */
  readonly presence = new KeyedStore<string>('');
  /** Per node/edge id: `''`, or `error\n…messages` / `warning\n…messages`. */
  readonly marks: KeyedStore<ProblemMark>;
  /** Per node id: what edges say about it (`2 tools`, `observes writer`). */
  readonly links = new KeyedStore<string>('');
  /** Per node id: its kind, label and config as its face shows them (`Projection.content`). */
  readonly content: KeyedStore<NodeData | undefined>;

  private readonly document: FlowDocument;
  private readonly ui = new ViewState();
  private readonly sel = new Selection();
  private readonly projection: Projection;
  private readonly geometry: Geometry;
  private readonly history: History;
  private readonly moves: Moves;
  private readonly editing: Editing;
  private readonly clip: Clipboard;
  private readonly check: Problems;
  private readonly docListeners = new Set<() => void>();
  private readonly loadListeners = new Set<() => void>();
  /** Re-adds what this editor drew when a co-editor's add took the same id at the same moment. */
  private adds: ConcurrentAddWatch;
  /** Records co-editors' changes to texts, so inputs can keep their caret exactly (textCarets.ts). */
  private offTexts: () => void;

  constructor(opts: EditorStoreOptions) {
    this.registry = opts.registry;
    this.layout = configLayout(opts.registry);
    const doc = opts.doc ?? new Y.Doc();
    this.document = new FlowDocument(doc, this.registry, this.layout);
    this.check = new Problems(this.document, {
      delay: opts.validateDelay ?? 250,
      validate: opts.validate,
      worker: opts.validationWorker,
    });
    this.marks = this.check.marks;
    this.projection = new Projection(this.document, this.ui, this.sel, () => this.recomputeLinks());
    this.content = this.projection.content;
    this.geometry = new Geometry(this.document, this.ui, this.projection);
    this.history = new History(this.document.parts);
    this.moves = new Moves(this.document, this.ui, this.geometry, this.projection, this.history, (ids) =>
      this.projection.refreshUi(ids),
    );
    const selection = { get: () => this.getSelection(), select: (s: SelectionArg) => this.select(s) };
    this.editing = new Editing(this.document, this.history, this.geometry, this.moves, selection);
    this.clip = new Clipboard(this.document, this.history, selection);
    this.adds = watchConcurrentAdds(doc, this.layout);
    this.offTexts = watchTextChanges(doc);
    doc.on('afterTransaction', this.onTransaction);
    this.projection.rebuildAll();
  }

  get doc(): Y.Doc {
    return this.document.doc;
  }

  get undoManager(): Y.UndoManager {
    return this.history.manager;
  }

  dispose(): void {
    this.adds.dispose();
    this.offTexts();
    this.doc.off('afterTransaction', this.onTransaction);
    this.check.dispose();
    this.history.dispose();
  }

  /**
   * Switches to another document (a co-editing room's): view state, selection and undo history
   * start afresh, everything derived is rebuilt, and listeners hear one document change.
   */
  replaceDoc(doc: Y.Doc): void {
    if (doc === this.doc) return;
    this.doc.off('afterTransaction', this.onTransaction);
    this.adds.dispose();
    this.offTexts();
    this.document.replace(doc);
    this.history.replace(this.document.parts);
    this.adds = watchConcurrentAdds(doc, this.layout);
    this.offTexts = watchTextChanges(doc);
    doc.on('afterTransaction', this.onTransaction);
    this.ui.keepMeasuredOnly();
    this.sel.clear();
    this.projection.clear();
    this.projection.rebuildAll();
    this.recomputeLinks();
    for (const fn of this.docListeners) fn();
    this.check.validateLoaded();
    for (const fn of this.loadListeners) fn();
  }

  /** Replaces the document (import, template, restore); starts a fresh undo history. */
  load(flow: unknown): void {
    this.ui.keepMeasuredOnly();
    this.sel.clear();
    loadFlowIntoDoc(this.doc, flow, this.layout);
    this.history.clear();
    this.check.validateLoaded();
    for (const fn of this.loadListeners) fn();
  }

  private onTransaction = (tr: Y.Transaction): void => {
    const t = this.document.touchedBy(tr);
    if (!t.structure && !t.order && t.nodeIds.size === 0 && t.edgeIds.size === 0) return;
    this.document.bump();
    this.projection.refresh(t.nodeIds, t.edgeIds, false, t.order);
    for (const fn of this.docListeners) fn();
    this.check.schedule();
  };

  private recomputeLinks(): void {
    this.links.replaceAll(this.document.links());
  }

  // ---- reading --------------------------------------------------------------------------

  subscribe = (fn: () => void): (() => void) => this.projection.subscribe(fn);

  getSnapshot = (): Snapshot => this.projection.getSnapshot();

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
    return this.document.version;
  }

  toFlow(): Flow {
    return structuredClone(this.document.flow());
  }

  /** The flow, not copied (cached per document version): for readers that never change it. */
  flowView(): Readonly<Flow> {
    return this.document.flow();
  }

  /** The flow as saved; computed once per document version (autosave and save state share it). */
  serialize(): string {
    return this.document.serialize();
  }

  meta(key: string): unknown {
    return this.document.meta(key);
  }

  readNode(id: string): FlowNodeT | undefined {
    return this.document.readNode(id);
  }

  readEdge(id: string): FlowEdgeT | undefined {
    return this.document.readEdge(id);
  }

  /** Node ids in document order. */
  nodeIds(): string[] {
    return this.document.nodeIds();
  }

  kindOf(id: string): NodeKindDefinition | undefined {
    return this.document.kindOf(id);
  }

  /** The label a person knows a node by: its label, its config name, or its id. */
  displayName(id: string): string {
    return this.document.displayName(id);
  }

  // ---- selection ------------------------------------------------------------------------

  get selection(): SelectionView {
    return this.sel.get();
  }

  /** The selection, as an object that keeps its identity until the selection changes. */
  getSelection = (): SelectionView => this.sel.get();

  /** Replaces the selection (problem list clicks, select all, after paste). */
  select(sel: SelectionArg): void {
    const touched = this.sel.replace(sel, {
      node: (id) => this.document.hasNode(id),
      edge: (id) => this.document.hasEdge(id),
    });
    this.projection.refreshUi(touched.nodes, touched.edges);
  }

  // ---- React Flow change handlers -------------------------------------------------------

  applyNodeChanges = (changes: NodeChangeLike[]): void => {
    const touched = this.ui.apply(changes);
    for (const c of changes)
      if (c.id && c.type === 'select' && 'selected' in c) {
        this.sel.setNode(c.id, c.selected);
        touched.add(c.id);
      }
    if (touched.size) this.projection.refreshUi(touched);
  };

  applyEdgeChanges = (changes: EdgeChangeLike[]): void => {
    const touched: string[] = [];
    for (const c of changes)
      if (c.type === 'select' && c.id && 'selected' in c) {
        this.sel.setEdge(c.id, c.selected);
        touched.push(c.id);
      }
    if (touched.length) this.projection.refreshUi([], touched);
  };

  // ---- problems -------------------------------------------------------------------------

  get problems(): ProblemSet {
    return this.check.current;
  }

  subscribeProblems = (fn: () => void): (() => void) => this.check.subscribe(fn);

  getProblems = (): ProblemSet => this.check.current;

  /**
   * Runs the validator now (normally it runs a moment after the last edit). Before the validator
   * has loaded, it loads it and validates then; `validated()` waits for that.
   */
  validateNow(): ProblemSet {
    return this.check.validateNow();
  }

  /** Validates the document as it is now, loading the validator first if needed. */
  validated(): Promise<ProblemSet> {
    return this.check.validated();
  }

  /** Shows problems reported from elsewhere (the server refusing a save). */
  setProblems(set: ProblemSet): void {
    this.check.setProblems(set);
  }

  /** The serialized flow once the worker has sent it (undefined when the document changed meanwhile). */
  settledText(): Promise<string | undefined> {
    return this.check.settledText();
  }

  // ---- geometry and moves ---------------------------------------------------------------

  /** The size a node is drawn with: resized, stored, measured, or its kind's default. */
  sizeOf(id: string): Size {
    return this.geometry.sizeOf(id);
  }

  /** Absolute canvas position of a node (positions of members are relative to their team). */
  absolutePosition(id: string): XY {
    return this.geometry.absolutePosition(id);
  }

  /** The innermost team whose box holds `point`, leaving out `exclude` and its members. */
  teamAt(point: XY, exclude?: Set<string>): string | undefined {
    return this.geometry.teamAt(point, exclude);
  }

  /** Ends a drag: final positions, into or out of teams, teams grown (`moves.ts`). */
  commitDrag(ids: string[]): void {
    this.moves.commitDrag(ids);
  }

  /** Ends a resize of a team: its box (position may move when resized from the top or left). */
  commitResize(id: string, box: { x: number; y: number; width: number; height: number }): void {
    this.moves.commitResize(id, box);
  }

  /** Writes positions (and team sizes) computed by auto-layout, as one undo step. */
  applyLayout(boxes: Map<string, { x: number; y: number; width?: number; height?: number }>): void {
    this.moves.applyLayout(boxes);
  }

  // ---- edits ----------------------------------------------------------------------------

  /** Adds a node of `kind` at an absolute canvas point (into the team there); returns its id. */
  addNode(kind: string, at: XY): string {
    return this.editing.addNode(kind, at);
  }

  /** Judges a connection between two handles (used while dragging and on drop). */
  judge(
    source: string,
    sourceHandle: string | null | undefined,
    target: string,
    targetHandle: string | null | undefined,
  ) {
    return this.editing.judge(source, sourceHandle, target, targetHandle);
  }

  /** Creates the edge a connection implies; returns its id, or the refusal reason. */
  connect(
    source: string,
    sourceHandle: string | null | undefined,
    target: string,
    targetHandle: string | null | undefined,
  ): { id: string } | { reason: string } {
    return this.editing.connect(source, sourceHandle, target, targetHandle);
  }

  deleteSelection(): void {
    this.editing.deleteSelection();
  }

  /** Replaces a whole config (the raw JSON editor), as one undo step. */
  replaceConfig(target: ConfigTarget, config: Record<string, unknown>): void {
    this.editing.replaceConfig(target, config);
  }

  /** Sets one config field. Typing merges into one undo step; other changes stand alone. */
  setConfig(target: ConfigTarget, key: string, value: unknown, typing = false): void {
    this.editing.setConfig(target, key, value, typing);
  }

  setNodeLabel(id: string, label: string, typing = false): void {
    this.editing.setNodeLabel(id, label, typing);
  }

  setEdgeLabel(id: string, label: string): void {
    this.editing.setEdgeLabel(id, label);
  }

  setMeta(key: string, value: unknown, typing = false): void {
    this.editing.setMeta(key, value, typing);
  }

  // ---- clipboard ------------------------------------------------------------------------

  copySelection(): FlowFragment | undefined {
    return this.clip.copySelection();
  }

  /** Pastes a fragment (ours or one read from the system clipboard); selects what was pasted. */
  paste(fragment?: FlowFragment, offset?: XY): string[] {
    return this.clip.paste(fragment, offset);
  }

  duplicateSelection(): string[] {
    return this.clip.duplicateSelection();
  }

  // ---- undo -----------------------------------------------------------------------------

  undo(): void {
    this.history.undo();
  }

  redo(): void {
    this.history.redo();
  }
}

type SelectionArg = { nodes?: string[]; edges?: string[] };
