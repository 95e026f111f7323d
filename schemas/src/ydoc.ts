/**
 * `@switchboard/schemas/ydoc`: the flow document kept in a Y.Doc, the shape co-editing shares.
 * The editor edits it; the server loads a room from the catalog and saves it back with the same
 * mapping, so both sides read one layout. Browser-safe; only this subpath loads yjs.
 *
 * Layout of the Y.Doc (names are part of the collaboration contract, change them only with a
 * migration):
 * - `meta`  Y.Map: every top-level field except `nodes` and `edges` (`version`, `id`, `name`,
 *           `models`, …) as plain JSON values.
 * - `nodes` Y.Map<id, Y.Map>: one map per node with `kind`, `parent`, `label`, `position`, `size`
 *           and `config` as plain values. A config is one value, not a Y.Map: a Y.Map does not
 *           keep the order of its keys through undo/redo or concurrent edits, and the exported
 *           bytes must not depend on history (two people editing one node's config at the same
 *           moment: the last write wins for that node).
 * - `edges` Y.Map<id, Y.Map>: likewise (`kind`, `source`, `target`, handles, `label`, `config`).
 * - `nodeOrder` / `edgeOrder` Y.Array<id>: document order, kept so that an exported file lists
 *           nodes and edges in the order it was opened with (byte-identical round trips).
 *
 * Plain values are never mutated in place: every change sets a new value inside a transaction.
 */
import * as Y from 'yjs';
import type { Flow, FlowEdgeT, FlowNodeT } from './flow.js';
import { setOwn } from './names.js';

/** Origin of loading a whole document (import, template, restore, a room's load); never undoable. */
export const LOAD = Symbol('switchboard-load');

export interface FlowDocParts {
  meta: Y.Map<unknown>;
  nodes: Y.Map<Y.Map<unknown>>;
  edges: Y.Map<Y.Map<unknown>>;
  nodeOrder: Y.Array<string>;
  edgeOrder: Y.Array<string>;
}

export function parts(doc: Y.Doc): FlowDocParts {
  return {
    meta: doc.getMap('meta'),
    nodes: doc.getMap('nodes') as Y.Map<Y.Map<unknown>>,
    edges: doc.getMap('edges') as Y.Map<Y.Map<unknown>>,
    nodeOrder: doc.getArray<string>('nodeOrder'),
    edgeOrder: doc.getArray<string>('edgeOrder'),
  };
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Why a parsed JSON value cannot be held by the editor (it can still be shown as text). */
export class UnrepresentableFlowError extends Error {}

/**
 * Checks the minimum shape the editor needs: an object whose `nodes` and `edges` are arrays of
 * objects with unique string ids. Anything else (wrong config, unknown kinds, bad edges) is the
 * validator's business and is shown on the canvas instead.
 */
export function assertRepresentable(doc: unknown): asserts doc is Flow {
  if (!isPlainObject(doc)) throw new UnrepresentableFlowError('the document is not a JSON object');
  const seen = new Set<string>();
  for (const field of ['nodes', 'edges'] as const) {
    const list = doc[field];
    if (!Array.isArray(list)) throw new UnrepresentableFlowError(`/${field} is not an array`);
    list.forEach((item, i) => {
      if (!isPlainObject(item)) throw new UnrepresentableFlowError(`/${field}/${i} is not an object`);
      if (typeof item.id !== 'string' || item.id === '')
        throw new UnrepresentableFlowError(`/${field}/${i}/id is missing or not a string`);
      if (seen.has(item.id))
        throw new UnrepresentableFlowError(
          `/${field}/${i}/id "${item.id}" is used twice; ids must be unique`,
        );
      seen.add(item.id);
    });
  }
}

// Keys read from a shared document are set as own properties (`setOwn`): a peer's key `__proto__`
// must stay a key (which the validator then refuses), never become the object's prototype. The
// objects stay ordinary ones, because they go back into Yjs, which refuses null-prototype values.
function yMapToObject(m: Y.Map<unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of m.entries()) setOwn(out, k, v instanceof Y.Map ? yMapToObject(v) : plainData(v));
  return out;
}

/**
 * A JSON value from the document, rebuilt from its own keys. lib0 decodes
 * a peer's object with `obj[key] = …`, so a key `__proto__` arrives as the object's prototype
 * rather than as a key: it is put back as an own `__proto__` key, which the validator refuses
 * (`reserved-key`), instead of its fields being read as if they were the object's own.
 */
function plainData(v: unknown, depth = 0): unknown {
  if (v === null || typeof v !== 'object' || depth > 256) return v;
  // Shared types (a Y.Text field) and binary content are not JSON objects: left as they are.
  if (v instanceof Uint8Array || v instanceof Y.AbstractType) return v;
  if (Array.isArray(v)) return v.map((x) => plainData(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) setOwn(out, k, plainData(x, depth + 1));
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) setOwn(out, '__proto__', plainData(proto, depth + 1));
  return out;
}

/** A node as a Y.Map of plain values. The id is the key in `nodes`. */
export function nodeToYMap(node: FlowNodeT): Y.Map<unknown> {
  const m = new Y.Map<unknown>();
  for (const [k, v] of Object.entries(node)) {
    if (k === 'id' || v === undefined) continue;
    m.set(k, v);
  }
  return m;
}

export function edgeToYMap(edge: FlowEdgeT): Y.Map<unknown> {
  const m = new Y.Map<unknown>();
  for (const [k, v] of Object.entries(edge)) {
    if (k === 'id' || v === undefined) continue;
    m.set(k, v);
  }
  return m;
}

/**
 * The fields of one node or edge entry. Entries are Y.Maps when written by an editor; anything
 * else (a peer writing another layout) is read as its plain fields, or none, rather than
 * throwing: a shared document is input from other people's browsers.
 */
function readItem(id: string, m: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = { id };
  if (m instanceof Y.Map) {
    for (const [k, v] of m.entries())
      if (k !== 'id') setOwn(out, k, v instanceof Y.Map ? yMapToObject(v) : plainData(v));
  } else if (isPlainObject(m)) {
    for (const [k, v] of Object.entries(m)) if (k !== 'id') setOwn(out, k, plainData(v));
  }
  return out;
}

/** Reads one node back as plain JSON. */
export function readNode(id: string, m: Y.Map<unknown>): FlowNodeT {
  return readItem(id, m) as unknown as FlowNodeT;
}

export function readEdge(id: string, m: Y.Map<unknown>): FlowEdgeT {
  return readItem(id, m) as unknown as FlowEdgeT;
}

/** Ids in document order: the order arrays first (deduplicated), then any id they miss. */
export function orderedIds(
  map: { has(id: string): boolean; keys(): IterableIterator<string> },
  order: Y.Array<string>,
): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const id of order.toArray())
    if (!seen.has(id) && map.has(id)) {
      seen.add(id);
      out.push(id);
    }
  const rest = [...map.keys()].filter((id) => !seen.has(id)).sort();
  return out.concat(rest);
}

/**
 * Replaces the whole content of `doc` with `flow`, in one transaction.
 * Throws `UnrepresentableFlowError` when the flow lacks the shape the editor needs.
 */
export function loadFlowIntoDoc(doc: Y.Doc, flow: unknown, origin: unknown = LOAD): void {
  assertRepresentable(flow);
  const p = parts(doc);
  doc.transact(() => {
    for (const k of [...p.meta.keys()]) p.meta.delete(k);
    p.nodes.clear();
    p.edges.clear();
    p.nodeOrder.delete(0, p.nodeOrder.length);
    p.edgeOrder.delete(0, p.edgeOrder.length);
    for (const [k, v] of Object.entries(flow)) {
      if (k === 'nodes' || k === 'edges' || v === undefined) continue;
      p.meta.set(k, v);
    }
    for (const n of flow.nodes) p.nodes.set(n.id, nodeToYMap(n));
    for (const e of flow.edges) p.edges.set(e.id, edgeToYMap(e));
    p.nodeOrder.push(flow.nodes.map((n) => n.id));
    p.edgeOrder.push(flow.edges.map((e) => e.id));
  }, origin);
}

/** A fresh Y.Doc holding `flow`. */
export function flowToDoc(flow: unknown): Y.Doc {
  const doc = new Y.Doc();
  loadFlowIntoDoc(doc, flow);
  return doc;
}

/**
 * The flow held by `doc`, as plain JSON. Top-level keys come out in the order they were set;
 * `serializeFlow` puts them in canonical order anyway.
 */
export function docToFlow(doc: Y.Doc): Flow {
  const p = parts(doc);
  const out: Record<string, unknown> = {};
  for (const [k, v] of p.meta.entries()) setOwn(out, k, plainData(v));
  out.nodes = orderedIds(p.nodes, p.nodeOrder).map((id) => readNode(id, p.nodes.get(id)!));
  out.edges = orderedIds(p.edges, p.edgeOrder).map((id) => readEdge(id, p.edges.get(id)!));
  return out as unknown as Flow;
}

/** Whether `doc` holds no flow at all (a room nobody has seeded yet). */
export function isEmptyFlowDoc(doc: Y.Doc): boolean {
  const p = parts(doc);
  return p.meta.size === 0 && p.nodes.size === 0 && p.edges.size === 0;
}

/**
 * Deep equality of JSON values, key order included: a config's key order reaches the exported
 * bytes, so a reordered config is a change.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]));
  }
  const oa = a as Record<string, unknown>;
  const ob = b as Record<string, unknown>;
  const ka = Object.keys(oa).filter((k) => oa[k] !== undefined);
  const kb = Object.keys(ob).filter((k) => ob[k] !== undefined);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && jsonEqual(oa[k], ob[k]));
}

/** Sets the plain fields of one node or edge map to `item`'s, touching only those that differ. */
function reconcileItem(m: Y.Map<unknown>, item: Record<string, unknown>): void {
  for (const k of [...m.keys()]) if (k === 'id' || item[k] === undefined) m.delete(k);
  for (const [k, v] of Object.entries(item)) {
    if (k === 'id' || v === undefined) continue;
    const cur = m.get(k);
    if (cur instanceof Y.Map || !jsonEqual(cur, v)) m.set(k, v);
  }
}

function reconcileMap(
  map: Y.Map<Y.Map<unknown>>,
  order: Y.Array<string>,
  items: Array<FlowNodeT | FlowEdgeT>,
  toYMap: (item: never) => Y.Map<unknown>,
): void {
  const wanted = new Set(items.map((i) => i.id));
  for (const id of [...map.keys()]) if (!wanted.has(id)) map.delete(id);
  for (const item of items) {
    const m = map.get(item.id);
    if (m instanceof Y.Map) reconcileItem(m, item as unknown as Record<string, unknown>);
    else map.set(item.id, toYMap(item as never));
  }
  const ids = items.map((i) => i.id);
  const now = order.toArray();
  if (now.length !== ids.length || now.some((id, i) => id !== ids[i])) {
    order.delete(0, order.length);
    order.push(ids);
  }
}

/**
 * Makes `doc` hold `flow` with the smallest change: fields, nodes and edges that are equal stay
 * untouched (same Yjs items), so applying a flow the document already holds changes nothing, and
 * a write from elsewhere (the REST API into an open room) reaches co-editors as the edits it
 * really is rather than as a whole new document. One transaction.
 * Throws `UnrepresentableFlowError` when the flow lacks the shape the editor needs.
 */
export function applyFlowToDoc(doc: Y.Doc, flow: unknown, origin: unknown = LOAD): void {
  assertRepresentable(flow);
  const p = parts(doc);
  doc.transact(() => {
    const top = flow as unknown as Record<string, unknown>;
    for (const k of [...p.meta.keys()])
      if (k === 'nodes' || k === 'edges' || top[k] === undefined) p.meta.delete(k);
    for (const [k, v] of Object.entries(top)) {
      if (k === 'nodes' || k === 'edges' || v === undefined) continue;
      if (!jsonEqual(p.meta.get(k), v)) p.meta.set(k, v);
    }
    reconcileMap(p.nodes, p.nodeOrder, flow.nodes, nodeToYMap as (i: never) => Y.Map<unknown>);
    reconcileMap(p.edges, p.edgeOrder, flow.edges, edgeToYMap as (i: never) => Y.Map<unknown>);
  }, origin);
}

/**
 * What the server says about saving a co-editing room, published as its own awareness state
 * (`{ [ROOM_STATUS_FIELD]: RoomSaveStatus }`, never with a `user`, so it is nobody in the room).
 * It describes the document whose serialized flow has `hash` (`flowTextHash`): an editor holding
 * a document with another hash has changes the server has not looked at yet.
 */
export interface RoomSaveStatus {
  /**
   * `saved`: written as revision `rev`; `unchanged`: the catalog holds it already as `rev` (no
   * `rev`: a flow the catalog does not have, only opened so far); `invalid`: not written, the
   * validator found `errors` problems; `id-mismatch`: not written, the document's id is not the
   * room's; `empty`: the room holds no flow.
   */
  state: 'saved' | 'unchanged' | 'invalid' | 'id-mismatch' | 'empty';
  rev?: number;
  errors?: number;
  hash?: string;
}

export const ROOM_STATUS_FIELD = 'roomStatus';

const ROOM_STATES = new Set(['saved', 'unchanged', 'invalid', 'id-mismatch', 'empty']);

/** A status as it arrives from the network (awareness is anyone's input), or undefined. */
export function readRoomStatus(v: unknown): RoomSaveStatus | undefined {
  if (!isPlainObject(v) || typeof v.state !== 'string' || !ROOM_STATES.has(v.state)) return undefined;
  const out: RoomSaveStatus = { state: v.state as RoomSaveStatus['state'] };
  if (typeof v.rev === 'number' && Number.isInteger(v.rev) && v.rev > 0) out.rev = v.rev;
  if (typeof v.errors === 'number' && Number.isInteger(v.errors) && v.errors >= 0) out.errors = v.errors;
  if (typeof v.hash === 'string' && v.hash.length <= 32) out.hash = v.hash;
  return out;
}

/** A short, fast, non-cryptographic hash of a serialized flow (cyrb53): which version a status is about. */
export function flowTextHash(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}
