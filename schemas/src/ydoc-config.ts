/**
 * How a node's or an edge's `config` lives in the shared document (see the layout in ydoc.ts):
 * decided by the kind's config schema, so that concurrent edits to different fields, and to
 * one free-text field, merge instead of overwriting each other.
 *
 * - an object the schema describes with `properties` → `Y.Map`, one entry per field;
 * - an array the schema describes with `items` → `Y.Array` of its items, each mapped likewise;
 * - a free-text string → `Y.Text`: a `type: "string"` without `const`, `enum`, `pattern` or
 *   `format` that is no reference (model, MCP server, node, edge or route field of the kind),
 *   unless the schema says `"x-sb-text": false` (or forces it with `true`);
 * - anything else (numbers, booleans, enums, references, conditions, records such as a JSON
 *   Schema, values the schema does not describe) → a plain JSON value, replaced as a whole.
 * Optional free-text fields the value lacks are created as empty `Y.Text`s along with their
 * object, and an empty optional `Y.Text` reads as "absent": so two people starting to type into
 * the same empty field edit one text instead of racing to create two.
 *
 * Reading puts keys in canonical order (the schema's, then unknown keys sorted), so the exported
 * bytes never depend on the order in which peers' edits arrived.
 */
import * as Y from 'yjs';
import { EDGE_CONFIG_SCHEMAS } from './edges.js';
import type { KindCatalog } from './kinds.js';
import { setOwn } from './names.js';

/** A JSON Schema node (TypeBox schemas are plain JSON Schema underneath). */
export type SchemaNode = Record<string, unknown> & {
  type?: unknown;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  anyOf?: SchemaNode[];
  items?: SchemaNode;
};

/** What the layout knows about one kind's config. */
export interface ConfigShape {
  schema: SchemaNode;
  /** Dotted paths (`*` for any key or index) of strings that are references, never Y.Text. */
  plain: readonly string[];
}

/** Schema knowledge the shared document's mapping needs; `configLayout(catalog)` builds it. */
export interface ConfigLayout {
  node(kind: string): ConfigShape | undefined;
  edge(kind: string): ConfigShape | undefined;
}

/** A layout that knows no schema: every config field is a plain value, keys sorted. */
export const PLAIN_LAYOUT: ConfigLayout = { node: () => undefined, edge: () => undefined };

/** The layout of the kinds in `catalog` (the node registry) and of the four edge kinds. */
export function configLayout(catalog: KindCatalog): ConfigLayout {
  let layout = layouts.get(catalog);
  if (!layout) {
    layout = buildLayout(catalog);
    layouts.set(catalog, layout);
  }
  return layout;
}

const layouts = new WeakMap<KindCatalog, ConfigLayout>();

function buildLayout(catalog: KindCatalog): ConfigLayout {
  const nodes = new Map<string, ConfigShape | undefined>();
  const edges = new Map<string, ConfigShape>();
  for (const [kind, schema] of Object.entries(EDGE_CONFIG_SCHEMAS))
    edges.set(kind, { schema: schema as unknown as SchemaNode, plain: [] });
  return {
    node(kind) {
      if (nodes.has(kind)) return nodes.get(kind);
      const info = catalog.get(kind);
      const shape = info
        ? {
            schema: info.configSchema as unknown as SchemaNode,
            plain: [
              ...(info.modelRefs ?? []),
              ...(info.serverRefs ?? []),
              ...(info.nodeRefs ?? []),
              ...(info.edgeRefs ?? []),
              ...(info.routeRefs ?? (info.role === 'decider' ? ['rules.*.to', 'default'] : [])),
            ],
          }
        : undefined;
      nodes.set(kind, shape);
      return shape;
    },
    edge: (kind) => edges.get(kind),
  };
}

/** Where a value sits in a config: its schema and path, for deciding its representation. */
interface At {
  schema: SchemaNode | undefined;
  path: string[];
  plain: readonly string[];
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Y.AbstractType);

function pathMatches(pattern: string, path: string[]): boolean {
  const parts = pattern.split('.');
  return parts.length === path.length && parts.every((p, i) => p === '*' || p === path[i]);
}

/** An object schema with named fields (not a record, not a recursive reference). */
function objectSchema(
  s: SchemaNode | undefined,
): s is SchemaNode & { properties: Record<string, SchemaNode> } {
  return (
    !!s &&
    s.type === 'object' &&
    isObj(s.properties) &&
    s.patternProperties === undefined &&
    s.$id === undefined &&
    s.$ref === undefined
  );
}

/**
 * The variant of a union of objects that `get` (a field reader) matches: the one whose constant
 * fields all hold their constants, else the first. Undefined when `s` is no union of objects.
 */
function variantOf(s: SchemaNode | undefined, get: (k: string) => unknown): SchemaNode | undefined {
  if (!s || !Array.isArray(s.anyOf) || s.$id !== undefined) return undefined;
  const objects = s.anyOf.filter(objectSchema);
  if (objects.length === 0 || objects.length !== s.anyOf.length) return undefined;
  return (
    objects.find((o) =>
      Object.entries(o.properties).every(([k, p]) => p.const === undefined || get(k) === p.const),
    ) ?? objects[0]
  );
}

/** The object schema that describes an object value at `at`, if any. */
function objectShape(at: At, get: (k: string) => unknown): SchemaNode | undefined {
  if (objectSchema(at.schema)) return at.schema;
  return variantOf(at.schema, get);
}

function isTextSchema(at: At): boolean {
  const s = at.schema;
  if (!s) return false;
  if (s['x-sb-text'] === true) return true;
  if (s['x-sb-text'] === false) return false;
  if (s.type !== 'string' || s.const !== undefined || s.enum !== undefined) return false;
  if (s.pattern !== undefined || s.format !== undefined) return false;
  return !at.plain.some((p) => pathMatches(p, at.path));
}

function child(at: At, key: string, shape: SchemaNode | undefined): At {
  return { schema: shape?.properties?.[key], path: [...at.path, key], plain: at.plain };
}

function item(at: At, index: number): At {
  const items = at.schema?.type === 'array' ? at.schema.items : undefined;
  return { schema: items, path: [...at.path, String(index)], plain: at.plain };
}

type Repr = 'text' | 'map' | 'array' | 'plain';

/** How a JSON value at `at` is held. */
function reprOf(v: unknown, at: At): Repr {
  if (typeof v === 'string') return isTextSchema(at) ? 'text' : 'plain';
  if (Array.isArray(v)) return at.schema?.type === 'array' && isObj(at.schema.items) ? 'array' : 'plain';
  if (isObj(v)) return objectShape(at, (k) => v[k]) ? 'map' : 'plain';
  return 'plain';
}

function reprOfY(y: unknown): Repr {
  if (y instanceof Y.Text) return 'text';
  if (y instanceof Y.Map) return 'map';
  if (y instanceof Y.Array) return 'array';
  return 'plain';
}

/** The Yjs value (or plain value) holding JSON `v` at `at`. */
function toY(v: unknown, at: At): unknown {
  switch (reprOf(v, at)) {
    case 'text':
      return new Y.Text(v as string);
    case 'array': {
      const a = new Y.Array<unknown>();
      a.insert(
        0,
        (v as unknown[]).map((x, i) => toY(x, item(at, i))),
      );
      return a;
    }
    case 'map': {
      const obj = v as Record<string, unknown>;
      const shape = objectShape(at, (k) => obj[k]);
      const m = new Y.Map<unknown>();
      for (const [k, x] of Object.entries(obj)) if (x !== undefined) m.set(k, toY(x, child(at, k, shape)));
      for (const k of Object.keys(shape?.properties ?? {}))
        if (obj[k] === undefined && isTextSchema(child(at, k, shape))) m.set(k, new Y.Text());
      return m;
    }
    default:
      return v === undefined ? undefined : structuredClone(v);
  }
}

/** The keys of an object in canonical order: the schema's first, then the rest sorted. */
function canonicalKeys(keys: Iterable<string>, shape: SchemaNode | undefined): string[] {
  // A peer's key `__proto__` stays a key (written with `setOwn`, refused by the validator).
  const all = new Set(keys);
  const out: string[] = [];
  for (const k of Object.keys(shape?.properties ?? {}))
    if (all.has(k)) {
      out.push(k);
      all.delete(k);
    }
  return out.concat([...all].sort());
}

/** JSON of a Yjs value (or plain value) at `at`; `undefined` for an empty optional text. */
function fromY(y: unknown, at: At): unknown {
  if (y instanceof Y.Text) return y.toString();
  if (y instanceof Y.Array) return y.toArray().map((x, i) => fromY(x, item(at, i)) ?? null);
  if (y instanceof Y.Map) {
    const shape = objectShape(at, (k) => {
      const x = y.get(k);
      return x instanceof Y.AbstractType ? undefined : x;
    });
    const required = new Set(shape?.required ?? []);
    const out: Record<string, unknown> = {};
    for (const k of canonicalKeys(y.keys(), shape)) {
      const x = y.get(k);
      if (x instanceof Y.Text && x.length === 0 && !required.has(k)) continue;
      const v = fromY(x, child(at, k, shape));
      if (v !== undefined) setOwn(out, k, v);
    }
    return out;
  }
  if (isObj(y)) {
    // A plain object (a record, a condition, a value the schema does not describe): keys sorted
    // only where the schema names none, so a plain config (old layout) still reads canonically.
    return plainData(y);
  }
  return plainData(y);
}

/** Deep equality of JSON values, ignoring key order. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => sameJson(v, bb[i]));
  }
  const oa = a as Record<string, unknown>;
  const ob = b as Record<string, unknown>;
  const ka = Object.keys(oa).filter((k) => oa[k] !== undefined);
  const kb = Object.keys(ob).filter((k) => ob[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => kb.includes(k) && sameJson(oa[k], ob[k]));
}

/** The value as one text field edit would leave it: where the caret is after the edit. */
let textHint: { value: string; caret: number } | undefined;

/**
 * Tells the next text diff where the caret ended up after a person's edit (an input's
 * `selectionEnd`), so that typing a letter next to the same letter inserts it where it was
 * typed: the diff of two strings alone cannot tell "aa|" from "a|a". Used once, and only for
 * the value it names.
 */
export function setTextEditHint(value: string, caret: number): void {
  textHint = { value, caret };
}

/** The smallest edit turning `a` into `b`: delete `del` characters at `at`, insert `ins`. */
export function textDiff(a: string, b: string, caret?: number): { at: number; del: number; ins: string } {
  if (caret !== undefined && caret >= 0 && caret <= b.length) {
    // The edit ends at the caret: what follows it is unchanged.
    const tail = b.length - caret;
    if (tail <= a.length && a.endsWith(b.slice(caret))) {
      const oldEnd = a.length - tail;
      let p = 0;
      const max = Math.min(oldEnd, caret);
      while (p < max && a.charCodeAt(p) === b.charCodeAt(p)) p++;
      return { at: p, del: oldEnd - p, ins: b.slice(p, caret) };
    }
  }
  let p = 0;
  const max = Math.min(a.length, b.length);
  while (p < max && a.charCodeAt(p) === b.charCodeAt(p)) p++;
  // Never split a surrogate pair.
  if (p > 0 && p < a.length && isHigh(a.charCodeAt(p - 1))) p--;
  let s = 0;
  while (s < max - p && a.charCodeAt(a.length - 1 - s) === b.charCodeAt(b.length - 1 - s)) s++;
  if (s > 0 && isLow(a.charCodeAt(a.length - s))) s--;
  return { at: p, del: a.length - p - s, ins: b.slice(p, b.length - s) };
}

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** Makes `t` read `value` with the smallest delete and insert. */
export function applyTextDiff(t: Y.Text, value: string): void {
  const cur = t.toString();
  if (cur === value) return;
  const hint = textHint?.value === value ? textHint.caret : undefined;
  textHint = undefined;
  const d = textDiff(cur, value, hint);
  if (d.del > 0) t.delete(d.at, d.del);
  if (d.ins) t.insert(d.at, d.ins);
}

interface Slot {
  get(): unknown;
  set(v: unknown): void;
  remove(): void;
}

/** Makes the slot hold JSON `v` (undefined: absent) with the smallest change. */
function reconcileSlot(slot: Slot, v: unknown, at: At, optional: boolean): void {
  const cur = slot.get();
  if (v === undefined) {
    if (cur instanceof Y.Text && optional && isTextSchema(at)) {
      if (cur.length > 0) cur.delete(0, cur.length);
    } else if (cur !== undefined) slot.remove();
    return;
  }
  const want = reprOf(v, at);
  if (want !== reprOfY(cur)) slot.set(toY(v, at));
  else if (want === 'text') applyTextDiff(cur as Y.Text, v as string);
  else if (want === 'map') reconcileMap(cur as Y.Map<unknown>, v as Record<string, unknown>, at);
  else if (want === 'array') reconcileArray(cur as Y.Array<unknown>, v as unknown[], at);
  else if (!sameJson(cur, v)) slot.set(toY(v, at));
}

function reconcileMap(m: Y.Map<unknown>, obj: Record<string, unknown>, at: At): void {
  const shape = objectShape(at, (k) => obj[k]);
  const required = new Set(shape?.required ?? []);
  const keys = new Set([...m.keys(), ...Object.keys(obj)]);
  for (const k of keys)
    reconcileSlot(
      { get: () => m.get(k), set: (v) => m.set(k, v), remove: () => m.delete(k) },
      obj[k],
      child(at, k, shape),
      !required.has(k),
    );
}

function reconcileArray(a: Y.Array<unknown>, list: unknown[], at: At): void {
  const old = a.toArray();
  const same = (i: number, j: number) => sameJson(fromY(old[i], item(at, i)), list[j]);
  let p = 0;
  while (p < old.length && p < list.length && same(p, p)) p++;
  let s = 0;
  while (s < old.length - p && s < list.length - p && same(old.length - 1 - s, list.length - 1 - s)) s++;
  const oldMid = old.length - p - s;
  const newMid = list.length - p - s;
  if (oldMid === newMid) {
    // Items edited in place (a field of one rule): each is reconciled, so edits merge.
    for (let i = p; i < p + oldMid; i++)
      reconcileSlot(
        {
          get: () => a.get(i),
          set: (v) => {
            a.delete(i, 1);
            a.insert(i, [v]);
          },
          remove: () => {},
        },
        list[i],
        item(at, i),
        false,
      );
    return;
  }
  if (oldMid > 0) a.delete(p, oldMid);
  if (newMid > 0)
    a.insert(
      p,
      list.slice(p, p + newMid).map((x, k) => toY(x, item(at, p + k))),
    );
}

function rootAt(shape: ConfigShape | undefined): At {
  return { schema: shape?.schema, path: [], plain: shape?.plain ?? [] };
}

/**
 * A config as a `Y.Map` (any object, even one its schema does not describe, gets one entry per
 * top-level field); anything that is no object stays a plain value (the validator reports it).
 */
export function configToY(config: unknown, shape: ConfigShape | undefined): unknown {
  if (!isObj(config)) return config === undefined ? undefined : structuredClone(config);
  const at = rootAt(shape);
  if (objectShape(at, (k) => config[k])) return toY(config, at);
  const m = new Y.Map<unknown>();
  for (const [k, v] of Object.entries(config)) if (v !== undefined) m.set(k, structuredClone(v));
  return m;
}

/** A config held in the document (a Y.Map, or a plain object in the old layout) as JSON. */
export function configFromY(y: unknown, shape: ConfigShape | undefined): unknown {
  const at = rootAt(shape);
  if (y instanceof Y.Map && !objectShape(at, (k) => y.get(k))) {
    const out: Record<string, unknown> = {};
    for (const k of canonicalKeys(y.keys(), undefined))
      setOwn(out, k, fromY(y.get(k), { schema: undefined, path: [k], plain: [] }));
    return out;
  }
  if (isObj(y)) {
    // The old layout (one plain value): canonical order all the same.
    const shapeNode = objectShape(at, (k) => y[k]);
    const out: Record<string, unknown> = {};
    for (const k of canonicalKeys(Object.keys(y), shapeNode))
      if (Object.hasOwn(y, k) && y[k] !== undefined) setOwn(out, k, plainData(y[k]));
    return out;
  }
  return fromY(y, at);
}

/**
 * Makes the config entry `key` of `owner` (a node's or an edge's map) hold `config`, changing
 * only what differs: a changed field is set, a changed text gets the smallest delete and insert,
 * untouched fields keep their Yjs items (and so any concurrent edit to them).
 */
export function reconcileConfig(
  owner: Y.Map<unknown>,
  config: unknown,
  shape: ConfigShape | undefined,
  key = 'config',
): void {
  const cur = owner.get(key);
  if (config === undefined) {
    if (cur !== undefined) owner.delete(key);
    return;
  }
  if (!isObj(config)) {
    if (cur instanceof Y.Map || !sameJson(cur, config)) owner.set(key, structuredClone(config));
    return;
  }
  // No map yet, or the old layout (the whole config one plain value): a fresh map.
  if (!(cur instanceof Y.Map)) {
    owner.set(key, configToY(config, shape));
    return;
  }
  const at = rootAt(shape);
  if (objectShape(at, (k) => config[k])) {
    reconcileMap(cur, config, at);
    return;
  }
  for (const k of [...cur.keys()]) if (config[k] === undefined) cur.delete(k);
  for (const [k, v] of Object.entries(config))
    if (v !== undefined && !sameJson(fromY(cur.get(k), rootAt(undefined)), v)) cur.set(k, structuredClone(v));
}

/**
 * Sets one top-level field of a config held as a Y.Map (the inspector's edits): the smallest
 * change, as `reconcileConfig` for that field alone.
 */
export function setConfigField(
  config: Y.Map<unknown>,
  key: string,
  value: unknown,
  shape: ConfigShape | undefined,
): void {
  const at = rootAt(shape);
  const current = configFromY(config, shape) as Record<string, unknown>;
  const obj = { ...current, [key]: value };
  const s = objectShape(at, (k) => obj[k]);
  if (!s) {
    if (value === undefined) config.delete(key);
    else if (!sameJson(fromY(config.get(key), rootAt(undefined)), value))
      config.set(key, structuredClone(value));
    return;
  }
  reconcileSlot(
    { get: () => config.get(key), set: (v) => config.set(key, v), remove: () => config.delete(key) },
    value,
    child(at, key, s),
    !(s.required ?? []).includes(key),
  );
}

/** Whether a config is held in the fine-grained layout (a Y.Map) rather than the old one. */
export function isFineConfig(y: unknown): boolean {
  return y instanceof Y.Map;
}

export { sameJson };

/**
 * A JSON value from the document, rebuilt from its own keys. lib0 decodes a peer's object with
 * `obj[key] = …`, so a key `__proto__` arrives as the object's prototype rather than as a key: it
 * is put back as an own `__proto__` key, which the validator refuses (`reserved-key`), instead of
 * its fields being read as if they were the object's own. The objects stay ordinary ones: they go
 * back into Yjs, which refuses null-prototype values.
 */
export function plainData(v: unknown, depth = 0): unknown {
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
