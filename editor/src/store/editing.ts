/**
 * The user's edits of the document: adding nodes and edges, removing the selection, configs,
 * labels and flow settings. Each is one transaction (`model/edits.ts`); a discrete action is an
 * undo step of its own, typing merges into one.
 */
import type { FlowEdgeT, FlowNodeT } from '@switchboard/schemas/core';
import { defaultHandles, judgeConnection } from '../model/connect.js';
import {
  addNodes,
  patchNodes,
  removeElements,
  replaceConfig,
  setConfigValue,
  setMeta,
} from '../model/edits.js';
import { LOCAL } from '../model/flowDoc.js';
import { idPrefix, newId } from '../model/ids.js';
import type { FlowDocument } from './document.js';
import type { Geometry } from './geometry.js';
import type { History } from './history.js';
import type { Moves } from './moves.js';
import type { SelectionView } from './selection.js';
import { ROUND, type XY } from './types.js';

export type ConfigTarget = { node: string } | { edge: string };

/** How edits read and set the selection (the store's, which redraws). */
export interface SelectionAccess {
  get(): SelectionView;
  select(sel: { nodes?: string[]; edges?: string[] }): void;
}

export class Editing {
  constructor(
    private readonly doc: FlowDocument,
    private readonly history: History,
    private readonly geometry: Geometry,
    private readonly moves: Pick<Moves, 'growTeams'>,
    private readonly selection: SelectionAccess,
  ) {}

  /**
   * Adds a node of `kind` at an absolute canvas point; dropped inside a team it becomes a member
   * (its position is then relative to the team). Returns the new id.
   */
  addNode(kind: string, at: XY): string {
    const { registry, layout } = this.doc;
    const def = registry.require(kind);
    const id = newId(idPrefix(kind), this.doc.takenIds());
    const parent = this.geometry.teamAt(at);
    const origin = parent ? this.geometry.absolutePosition(parent) : { x: 0, y: 0 };
    const node: FlowNodeT = {
      id,
      kind,
      position: { x: ROUND(at.x - origin.x), y: ROUND(at.y - origin.y) },
      config: def.defaults() as Record<string, unknown>,
    };
    if (parent) node.parent = parent;
    if (def.display.size) node.size = { ...def.display.size };
    this.history.step(() => {
      addNodes(this.doc.doc, [node], [], layout);
      if (parent) this.moves.growTeams([parent]);
    });
    this.selection.select({ nodes: [id] });
    return id;
  }

  /** Judges a connection between two handles (used while dragging and on drop). */
  judge(
    source: string,
    sourceHandle: string | null | undefined,
    target: string,
    targetHandle: string | null | undefined,
  ) {
    const { nodes, edges } = this.doc.parts;
    const sk = String(nodes.get(source)?.get('kind') ?? '');
    const tk = String(nodes.get(target)?.get('kind') ?? '');
    const existing = [...edges.values()].map((m) => ({
      kind: String(m.get('kind')),
      source: String(m.get('source')),
      target: String(m.get('target')),
    }));
    return judgeConnection(
      this.doc.registry,
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
    const id = newId('e', this.doc.takenIds());
    const edge: FlowEdgeT = { id, kind: v.kind, source, target };
    // Handles are implied by the edge kind; they are written only when they differ from that.
    const dflt = defaultHandles(v.kind, this.doc.kindOf(source), this.doc.kindOf(target));
    if (v.sourcePort.id !== dflt.sourceHandle) edge.sourceHandle = v.sourcePort.id;
    if (v.targetPort.id !== dflt.targetHandle) edge.targetHandle = v.targetPort.id;
    this.history.step(() => addNodes(this.doc.doc, [], [edge], this.doc.layout));
    return { id };
  }

  deleteSelection(): void {
    const { nodes, edges } = this.selection.get();
    if (!nodes.length && !edges.length) return;
    this.history.step(() => removeElements(this.doc.doc, nodes, edges));
  }

  /** Replaces a whole config (the raw JSON editor), as one undo step. */
  replaceConfig(target: ConfigTarget, config: Record<string, unknown>): void {
    this.history.step(() => replaceConfig(this.doc.doc, target, config, this.doc.layout));
  }

  /** Sets one config field. Typing merges into one undo step; other changes stand alone. */
  setConfig(target: ConfigTarget, key: string, value: unknown, typing = false): void {
    const fn = () => setConfigValue(this.doc.doc, target, key, value, this.doc.layout);
    if (typing) fn();
    else this.history.step(fn);
  }

  setNodeLabel(id: string, label: string, typing = false): void {
    const fn = () => patchNodes(this.doc.doc, { [id]: { label: label === '' ? null : label } });
    if (typing) fn();
    else this.history.step(fn);
  }

  setEdgeLabel(id: string, label: string): void {
    const m = this.doc.parts.edges.get(id);
    if (!m) return;
    this.doc.doc.transact(() => {
      if (label === '') m.delete('label');
      else m.set('label', label);
    }, LOCAL);
  }

  setMeta(key: string, value: unknown, typing = false): void {
    const fn = () => setMeta(this.doc.doc, key, value);
    if (typing) fn();
    else this.history.step(fn);
  }
}
