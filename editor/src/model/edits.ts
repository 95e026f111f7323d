/**
 * Every change the editor makes to a flow, each one Yjs transaction with the `LOCAL` origin, so
 * that one user action is one undo step and a remote peer sees it atomically.
 */
import type { FlowEdgeT, FlowNodeT, PositionT } from '@switchboard/schemas';
import { setOwn } from '@switchboard/schemas/core';
import * as Y from 'yjs';
import {
  type ConfigLayout,
  configFromY,
  edgeToYMap,
  isPlainObject,
  LOCAL,
  nodeToYMap,
  PLAIN_LAYOUT,
  parts,
  reconcileConfig,
  setConfigField,
  setMetaValue,
} from './flowDoc.js';

type Size = { width: number; height: number };

/** Fields of a node that live outside its config; `null` removes the field. */
export interface NodePatch {
  position?: PositionT;
  parent?: string | null;
  size?: Size | null;
  label?: string | null;
}

export function addNodes(
  doc: Y.Doc,
  nodes: FlowNodeT[],
  edges: FlowEdgeT[] = [],
  layout: ConfigLayout = PLAIN_LAYOUT,
): void {
  const p = parts(doc);
  doc.transact(() => {
    for (const n of nodes) {
      if (p.nodes.has(n.id)) throw new Error(`A node with id "${n.id}" already exists`);
      p.nodes.set(n.id, nodeToYMap(n, layout));
    }
    for (const e of edges) {
      if (p.edges.has(e.id)) throw new Error(`An edge with id "${e.id}" already exists`);
      p.edges.set(e.id, edgeToYMap(e, layout));
    }
    if (nodes.length) p.nodeOrder.push(nodes.map((n) => n.id));
    if (edges.length) p.edgeOrder.push(edges.map((e) => e.id));
  }, LOCAL);
}

export function addEdge(doc: Y.Doc, edge: FlowEdgeT, layout: ConfigLayout = PLAIN_LAYOUT): void {
  addNodes(doc, [], [edge], layout);
}

function applyPatch(m: Y.Map<unknown>, patch: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (v === null) m.delete(k);
    else m.set(k, v);
  }
}

/** Patches several nodes at once (a drag of a selection is one undo step). */
export function patchNodes(doc: Y.Doc, patches: Record<string, NodePatch>): void {
  const p = parts(doc);
  doc.transact(() => {
    for (const [id, patch] of Object.entries(patches)) {
      const m = p.nodes.get(id);
      if (m) applyPatch(m, patch as Record<string, unknown>);
    }
  }, LOCAL);
}

export function patchEdge(doc: Y.Doc, id: string, patch: { label?: string | null }): void {
  const m = parts(doc).edges.get(id);
  if (!m) return;
  doc.transact(() => applyPatch(m, patch), LOCAL);
}

function ownerOf(doc: Y.Doc, target: { node: string } | { edge: string }) {
  const p = parts(doc);
  return 'node' in target ? p.nodes.get(target.node) : p.edges.get(target.edge);
}

function shapeOf(owner: Y.Map<unknown>, target: { node: string } | { edge: string }, layout: ConfigLayout) {
  const kind = String(owner.get('kind'));
  return 'node' in target ? layout.node(kind) : layout.edge(kind);
}

/**
 * Sets (or, with `undefined`, removes) one top-level key of a node's or edge's config, as the
 * smallest change: a text gets the delete and insert that turn it into `value`, an object or
 * list only the fields that differ, so a co-editor's concurrent edit elsewhere survives.
 */
export function setConfigValue(
  doc: Y.Doc,
  target: { node: string } | { edge: string },
  key: string,
  value: unknown,
  layout: ConfigLayout = PLAIN_LAYOUT,
): void {
  const owner = ownerOf(doc, target);
  if (!owner) return;
  const shape = shapeOf(owner, target, layout);
  doc.transact(() => {
    const cfg = owner.get('config');
    if (cfg instanceof Y.Map) setConfigField(cfg, key, value, shape);
    else {
      const next: Record<string, unknown> = { ...readConfig(owner, layout) };
      if (value === undefined) Reflect.deleteProperty(next, key);
      // An ordinary object (Yjs refuses null-prototype values), the key set as an own property.
      else setOwn(next, key, value);
      reconcileConfig(owner, next, shape);
    }
  }, LOCAL);
}

/** Replaces a whole config (used by the raw JSON editor), changing only the fields that differ. */
export function replaceConfig(
  doc: Y.Doc,
  target: { node: string } | { edge: string },
  config: Record<string, unknown>,
  layout: ConfigLayout = PLAIN_LAYOUT,
): void {
  const owner = ownerOf(doc, target);
  if (!owner) return;
  const shape = shapeOf(owner, target, layout);
  doc.transact(() => reconcileConfig(owner, config, shape), LOCAL);
}

/** Sets (or removes, with `undefined`) a top-level field of the flow: name, models, … */
export function setMeta(doc: Y.Doc, key: string, value: unknown): void {
  if (key === 'nodes' || key === 'edges') throw new Error('nodes and edges are not flow settings');
  const { meta } = parts(doc);
  // The description is a shared text: the smallest delete and insert, as for config texts.
  doc.transact(() => setMetaValue(meta, key, value), LOCAL);
}

/** The ids of `ids` and of every node nested in them. */
export function withDescendants(doc: Y.Doc, ids: Iterable<string>): Set<string> {
  const p = parts(doc);
  const children = new Map<string, string[]>();
  for (const [id, m] of p.nodes.entries()) {
    const parent = m.get('parent');
    if (typeof parent === 'string') children.set(parent, [...(children.get(parent) ?? []), id]);
  }
  const out = new Set<string>();
  const stack = [...ids];
  while (stack.length) {
    const id = stack.pop()!;
    if (out.has(id)) continue;
    out.add(id);
    stack.push(...(children.get(id) ?? []));
  }
  return out;
}

function removeFromOrder(order: Y.Array<string>, ids: Set<string>): void {
  const list = order.toArray();
  for (let i = list.length - 1; i >= 0; i--) if (ids.has(list[i]!)) order.delete(i, 1);
}

/**
 * Deletes nodes (with everything nested in them and every edge touching them) and edges, as one
 * undo step. Returns what was removed.
 */
export function removeElements(
  doc: Y.Doc,
  nodeIds: Iterable<string>,
  edgeIds: Iterable<string> = [],
): { nodes: string[]; edges: string[] } {
  const p = parts(doc);
  const nodes = withDescendants(doc, nodeIds);
  const edges = new Set(edgeIds);
  for (const [id, m] of p.edges.entries())
    if (nodes.has(m.get('source') as string) || nodes.has(m.get('target') as string)) edges.add(id);
  doc.transact(() => {
    for (const id of nodes) p.nodes.delete(id);
    for (const id of edges) p.edges.delete(id);
    removeFromOrder(p.nodeOrder, nodes);
    removeFromOrder(p.edgeOrder, edges);
  }, LOCAL);
  return { nodes: [...nodes], edges: [...edges] };
}

/** A plain-JSON snapshot of one node's or edge's config, for reading without Yjs types. */
export function readConfig(
  owner: Y.Map<unknown> | undefined,
  layout: ConfigLayout = PLAIN_LAYOUT,
  isEdge = false,
): Record<string, unknown> {
  if (!owner) return {};
  const kind = String(owner.get('kind'));
  const c = configFromY(owner.get('config'), isEdge ? layout.edge(kind) : layout.node(kind));
  return isPlainObject(c) ? c : {};
}
