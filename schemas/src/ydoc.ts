/**
 * `@switchboard/schemas/ydoc`: the flow document kept in a Y.Doc, the shape co-editing shares.
 * The editor edits it; the server loads a room from the catalog and saves it back with the same
 * mapping, so both sides read one layout. Browser-safe; only this subpath loads yjs.
 *
 * ## Layout (version 2; the names are the collaboration contract)
 *
 * A script can co-edit a live flow with stock `yjs` + `y-websocket` by following this:
 *
 * - `meta`  Y.Map: every top-level field except `nodes` and `edges` (`version`, `id`, `name`,
 *           `models`, `mcpServers`, …) as plain JSON values, each replaced as a whole, except
 *           `description`: a Y.Text (always there; empty means no description).
 * - `nodes` Y.Map<id, Y.Map>: one map per node. `kind`, `parent`, `label`, `position` (`{x,y}`)
 *           and `size` are plain values (a move replaces `position`). `config` is a Y.Map with
 *           one entry per field of the node kind's config schema:
 *   - a field whose schema is an object with `properties` → a nested Y.Map, likewise;
 *   - a field whose schema is an array with `items` → a Y.Array of its items, likewise
 *     (agent `prompt` is a Y.Array of Y.Maps, each segment's `text` a Y.Text);
 *   - a free-text string (role, prompt text, notes, descriptions, questions, rule reasons,
 *     briefings: `type: "string"` without `const`/`enum`/`pattern`/`format`, and no model,
 *     server, node, edge or route reference) → a `Y.Text`. Edit it with `insert`/`delete` at a
 *     position, never by replacing it, or concurrent typing is lost. An optional text that is
 *     empty means "absent"; such fields exist as empty `Y.Text`s from the moment their object does;
 *   - anything else (numbers, booleans, enum strings, references, conditions, records such as a
 *     JSON Schema) → a plain JSON value, replaced as a whole (never mutated in place).
 *   See ydoc-config.ts for the exact rule (`configLayout`); `"x-sb-text"` in a schema overrides it.
 * - `edges` Y.Map<id, Y.Map>: likewise: `kind`, `source`, `target`, `sourceHandle`,
 *           `targetHandle`, `label` plain; `config` a Y.Map by the edge kind's schema
 *           (`briefing` and `description` are Y.Texts).
 * - `nodeOrder` / `edgeOrder` Y.Array<id>: document order (an id may appear twice after
 *           concurrent adds: the first counts; ids missing from it come last, sorted). Adding a
 *           node = set `nodes[id]` and push `id` to `nodeOrder` in one transaction; removing =
 *           delete both (and the edges touching it).
 *
 * Exported JSON is canonical whatever the editing history: config keys in the schema's order
 * (then unknown keys sorted), top-level and node keys in `serializeFlow`'s order.
 *
 * A room is seeded once, by one side (`seedDoc`): the server from its catalog, or, for a flow
 * the server does not hold, the first editor. A seed is made by a client id derived from the
 * flow's text, so two identical seeds are the same Yjs items and merge instead of doubling.
 * Documents of the old layout (version 1: `config` one plain value) are converted on load by
 * `applyFlowToDoc`.
 */
import * as Y from 'yjs';
import type { Flow, FlowEdgeT, FlowNodeT } from './flow.js';
import { setOwn } from './names.js';
import { serializeFlow } from './serialize.js';
import {
  applyTextDiff,
  type ConfigLayout,
  configFromY,
  configToY,
  PLAIN_LAYOUT,
  plainData,
  reconcileConfig,
} from './ydoc-config.js';

export * from './ydoc-config.js';

/** Bumped whenever the mapping of a flow into a Y.Doc changes (it is part of every seed). */
export const YDOC_LAYOUT_VERSION = 2;

/** Top-level fields that are free text (Y.Text in `meta`); an empty one reads as absent. */
export const META_TEXT: ReadonlySet<string> = new Set(['description']);

/** Reads one `meta` entry as JSON; an empty free-text field reads as absent. */
export function readMeta(key: string, v: unknown): unknown {
  if (v instanceof Y.Text) return v.length === 0 && META_TEXT.has(key) ? undefined : v.toString();
  return v instanceof Y.AbstractType ? v.toJSON() : v;
}

/** Makes `meta[key]` hold `v` (undefined: absent) with the smallest change. */
export function setMetaValue(meta: Y.Map<unknown>, key: string, v: unknown): void {
  const cur = meta.get(key);
  if (META_TEXT.has(key) && (typeof v === 'string' || v === undefined)) {
    const text = v ?? '';
    if (cur instanceof Y.Text) applyTextDiff(cur, text);
    else meta.set(key, new Y.Text(text));
    return;
  }
  if (v === undefined) {
    if (cur !== undefined) meta.delete(key);
  } else if (cur instanceof Y.AbstractType || !jsonEqual(cur, v)) meta.set(key, structuredClone(v));
}

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

/** A node as a Y.Map (see the layout). The id is the key in `nodes`. */
export function nodeToYMap(node: FlowNodeT, layout: ConfigLayout = PLAIN_LAYOUT): Y.Map<unknown> {
  return itemToYMap(node as unknown as Record<string, unknown>, layout.node(String(node.kind)));
}

export function edgeToYMap(edge: FlowEdgeT, layout: ConfigLayout = PLAIN_LAYOUT): Y.Map<unknown> {
  return itemToYMap(edge as unknown as Record<string, unknown>, layout.edge(String(edge.kind)));
}

function itemToYMap(item: Record<string, unknown>, shape: ReturnType<ConfigLayout['node']>): Y.Map<unknown> {
  const m = new Y.Map<unknown>();
  for (const [k, v] of Object.entries(item)) {
    if (k === 'id' || v === undefined) continue;
    m.set(k, k === 'config' ? configToY(v, shape) : structuredClone(v));
  }
  return m;
}

/**
 * The fields of one node or edge entry. Entries are Y.Maps when written by an editor; anything
 * else (a peer writing another layout) is read as its plain fields, or none, rather than
 * throwing: a shared document is input from other people's browsers.
 */
function readItem(
  id: string,
  m: unknown,
  shapeOf: (kind: string) => ReturnType<ConfigLayout['node']>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { id };
  const get = (k: string): unknown =>
    m instanceof Y.Map ? m.get(k) : isPlainObject(m) ? (m as Record<string, unknown>)[k] : undefined;
  const keys = m instanceof Y.Map ? [...m.keys()] : isPlainObject(m) ? Object.keys(m) : [];
  const kind = get('kind');
  for (const k of keys) {
    if (k === 'id') continue;
    const v = plainData(get(k));
    // A key `__proto__` stays a key (the validator refuses it), never the object's prototype.
    if (k === 'config') out.config = configFromY(v, typeof kind === 'string' ? shapeOf(kind) : undefined);
    else setOwn(out, k, v instanceof Y.AbstractType ? v.toJSON() : v);
  }
  return out;
}

/** Reads one node back as plain JSON. */
export function readNode(id: string, m: Y.Map<unknown>, layout: ConfigLayout = PLAIN_LAYOUT): FlowNodeT {
  return readItem(id, m, (k) => layout.node(k)) as unknown as FlowNodeT;
}

export function readEdge(id: string, m: Y.Map<unknown>, layout: ConfigLayout = PLAIN_LAYOUT): FlowEdgeT {
  return readItem(id, m, (k) => layout.edge(k)) as unknown as FlowEdgeT;
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
export function loadFlowIntoDoc(
  doc: Y.Doc,
  flow: unknown,
  layout: ConfigLayout = PLAIN_LAYOUT,
  origin: unknown = LOAD,
): void {
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
      setMetaValue(p.meta, k, v);
    }
    for (const k of META_TEXT) if (!p.meta.has(k)) setMetaValue(p.meta, k, undefined);
    for (const n of flow.nodes) p.nodes.set(n.id, nodeToYMap(n, layout));
    for (const e of flow.edges) p.edges.set(e.id, edgeToYMap(e, layout));
    p.nodeOrder.push(flow.nodes.map((n) => n.id));
    p.edgeOrder.push(flow.edges.map((e) => e.id));
  }, origin);
}

/** A fresh Y.Doc holding `flow`. */
export function flowToDoc(flow: unknown, layout: ConfigLayout = PLAIN_LAYOUT): Y.Doc {
  const doc = new Y.Doc();
  loadFlowIntoDoc(doc, flow, layout);
  return doc;
}

/**
 * The Yjs update that seeds a room with `flow`: made by a client id derived from the flow's
 * canonical text (and the layout version), so every seed of the same flow is the same items. A
 * client that kept a room's document through a server restart, when the server had no history
 * to reload, merges its offline edits into the server's fresh seed instead of into a second,
 * unrelated copy of every node.
 */
export function seedUpdate(flow: unknown, layout: ConfigLayout = PLAIN_LAYOUT): Uint8Array {
  const doc = new Y.Doc();
  try {
    seedDoc(doc, flow, layout);
    return Y.encodeStateAsUpdate(doc);
  } finally {
    doc.destroy();
  }
}

/** The client id a seed of `text` (a serialized flow) is made by. */
function seedClientId(text: string): number {
  // Yjs client ids are uint32; small ids are left to nobody in particular.
  return (Number.parseInt(flowTextHash(`v${YDOC_LAYOUT_VERSION}\n${text}`), 36) % 0xfffff000) + 0x1000;
}

/**
 * Seeds an empty document with `flow` (see `seedUpdate`); does nothing to a non-empty one. The
 * document's own client id is lent to the seed for that one transaction, then given back.
 */
export function seedDoc(
  doc: Y.Doc,
  flow: unknown,
  layout: ConfigLayout = PLAIN_LAYOUT,
  origin: unknown = LOAD,
): void {
  assertRepresentable(flow);
  if (!isEmptyFlowDoc(doc)) return;
  const text = serializeFlow(flow);
  const own = doc.clientID;
  doc.clientID = seedClientId(text);
  try {
    loadFlowIntoDoc(doc, JSON.parse(text), layout, origin);
  } finally {
    doc.clientID = own;
  }
}

/**
 * The flow held by `doc`, as plain JSON. Top-level keys come out in the order they were set;
 * `serializeFlow` puts them in canonical order anyway.
 */
export function docToFlow(
  doc: Y.Doc,
  layout: ConfigLayout = PLAIN_LAYOUT,
  /** Readers of one node or edge (a cache of them, e.g. the editor's). */
  read: {
    node?: (id: string, m: Y.Map<unknown>) => FlowNodeT;
    edge?: (id: string, m: Y.Map<unknown>) => FlowEdgeT;
  } = {},
): Flow {
  const p = parts(doc);
  const out: Record<string, unknown> = {};
  for (const [k, v] of p.meta.entries()) {
    const json = readMeta(k, plainData(v));
    if (json !== undefined) setOwn(out, k, json);
  }
  const node = read.node ?? ((id: string, m: Y.Map<unknown>) => readNode(id, m, layout));
  const edge = read.edge ?? ((id: string, m: Y.Map<unknown>) => readEdge(id, m, layout));
  out.nodes = orderedIds(p.nodes, p.nodeOrder).map((id) => node(id, p.nodes.get(id)!));
  out.edges = orderedIds(p.edges, p.edgeOrder).map((id) => edge(id, p.edges.get(id)!));
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

/** Sets the fields of one node or edge map to `item`'s, touching only those that differ. */
function reconcileItem(
  m: Y.Map<unknown>,
  item: Record<string, unknown>,
  shape: ReturnType<ConfigLayout['node']>,
): void {
  for (const k of [...m.keys()]) if (k === 'id' || item[k] === undefined) m.delete(k);
  for (const [k, v] of Object.entries(item)) {
    if (k === 'id' || v === undefined) continue;
    if (k === 'config') {
      reconcileConfig(m, v, shape);
      continue;
    }
    const cur = m.get(k);
    if (cur instanceof Y.AbstractType || !jsonEqual(cur, v)) m.set(k, structuredClone(v));
  }
}

function reconcileMap(
  map: Y.Map<Y.Map<unknown>>,
  order: Y.Array<string>,
  items: Array<FlowNodeT | FlowEdgeT>,
  toYMap: (item: never) => Y.Map<unknown>,
  shapeOf: (kind: string) => ReturnType<ConfigLayout['node']>,
): void {
  const wanted = new Set(items.map((i) => i.id));
  for (const id of [...map.keys()]) if (!wanted.has(id)) map.delete(id);
  for (const item of items) {
    const m = map.get(item.id);
    // A node whose kind changed is a new node: its config means something else.
    if (m instanceof Y.Map && m.get('kind') === item.kind)
      reconcileItem(m, item as unknown as Record<string, unknown>, shapeOf(String(item.kind)));
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
 * untouched (same Yjs items), a changed text gets the smallest delete and insert, so applying a
 * flow the document already holds changes nothing, and a write from elsewhere (the REST API
 * into an open room) reaches co-editors as the edits it really is rather than as a whole new
 * document. Converts a document of the old layout. One transaction.
 * Throws `UnrepresentableFlowError` when the flow lacks the shape the editor needs.
 */
export function applyFlowToDoc(
  doc: Y.Doc,
  flow: unknown,
  layout: ConfigLayout = PLAIN_LAYOUT,
  origin: unknown = LOAD,
): void {
  assertRepresentable(flow);
  const p = parts(doc);
  doc.transact(() => {
    const top = flow as unknown as Record<string, unknown>;
    for (const k of [...p.meta.keys()])
      if (k === 'nodes' || k === 'edges' || (top[k] === undefined && !META_TEXT.has(k))) p.meta.delete(k);
    for (const [k, v] of Object.entries(top)) {
      if (k === 'nodes' || k === 'edges' || v === undefined) continue;
      setMetaValue(p.meta, k, v);
    }
    for (const k of META_TEXT) if (top[k] === undefined) setMetaValue(p.meta, k, undefined);
    reconcileMap(
      p.nodes,
      p.nodeOrder,
      flow.nodes,
      ((n: FlowNodeT) => nodeToYMap(n, layout)) as (i: never) => Y.Map<unknown>,
      (k) => layout.node(k),
    );
    reconcileMap(
      p.edges,
      p.edgeOrder,
      flow.edges,
      ((e: FlowEdgeT) => edgeToYMap(e, layout)) as (i: never) => Y.Map<unknown>,
      (k) => layout.edge(k),
    );
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
