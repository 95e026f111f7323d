/**
 * What the condition builder needs to know about a condition (see `schemas/src/condition.ts`):
 * whether the builder can show it, how a comparison's value is typed, and which paths a condition
 * may read. Edits made in the builder copy the object they change with its keys in their original
 * order, so a condition opened and saved back is byte-identical to what was there.
 */
import { COMPARE_OPS, type ConditionT, setOwn } from '@switchboard/schemas/core';
import type { JsonSchema } from './schemaForm.js';

export type CompareOp = (typeof COMPARE_OPS)[number];
export const OPS: readonly CompareOp[] = COMPARE_OPS;

/** Operators that test the value at the path alone, with no value to compare against. */
export const UNARY_OPS: ReadonlySet<string> = new Set(['exists', 'empty']);
/** Operators that compare numbers. */
export const NUMBER_OPS: ReadonlySet<string> = new Set(['gt', 'gte', 'lt', 'lte']);

function textAsNumber(v: string): unknown {
  if (v.trim() === '') return 0;
  const n = Number(v);
  return Number.isFinite(n) ? n : v;
}

/** Operators where "ignore case" means something. */
export const TEXT_OPS: ReadonlySet<string> = new Set(['eq', 'ne', 'contains', 'notContains', 'regex']);

export const OP_LABELS: Readonly<Record<CompareOp, string>> = {
  eq: 'equals',
  ne: 'does not equal',
  gt: 'is greater than',
  gte: 'is at least',
  lt: 'is less than',
  lte: 'is at most',
  contains: 'contains',
  notContains: 'does not contain',
  regex: 'matches regex',
  exists: 'exists',
  empty: 'is empty',
};

/** The paths a condition reads (the context documented in `schemas/src/condition.ts`). */
export const CONDITION_PATHS: readonly { path: string; hint: string }[] = [
  { path: 'last.content', hint: 'text of the last message' },
  { path: 'last.author', hint: 'node id that wrote the last message' },
  { path: 'last.json.', hint: 'a field of the last message parsed as JSON' },
  { path: 'state.', hint: 'a field of the run state' },
  { path: 'counters.turns', hint: 'turns taken so far' },
  { path: 'counters.failures.', hint: 'failures of a node (add its id)' },
  { path: 'turn.toolCalls', hint: 'tool calls in this turn' },
  { path: 'input', hint: 'the run input' },
];

/** Whether a config field's schema is the shared `Condition` schema (inline or referenced). */
export function isConditionSchema(s: JsonSchema): boolean {
  return s.$id === 'Condition' || s.$ref === 'Condition';
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const MAX_DEPTH = 32;

/**
 * Why the builder cannot show this value, or undefined when it can. Anything the builder shows
 * it writes back as it was, so it only refuses what is not a condition at all (the JSON view
 * then opens, with the validator's message on the flow).
 */
export function unbuildable(c: unknown, depth = 0): string | undefined {
  if (depth > MAX_DEPTH) return `nested deeper than ${MAX_DEPTH}`;
  if (!isRecord(c)) return 'not an object';
  const keys = Object.keys(c);
  const only = (...allowed: string[]) => keys.every((k) => allowed.includes(k));
  if ('all' in c || 'any' in c) {
    const key = 'all' in c ? 'all' : 'any';
    const list = c[key];
    if (keys.length !== 1) return `"${key}" has other keys beside it`;
    if (!Array.isArray(list)) return `"${key}" is not a list`;
    for (const x of list) {
      const why = unbuildable(x, depth + 1);
      if (why) return why;
    }
    return undefined;
  }
  if ('not' in c) return keys.length === 1 ? unbuildable(c.not, depth + 1) : '"not" has other keys beside it';
  if ('always' in c)
    return keys.length === 1 && c.always === true ? undefined : '"always" must be true, alone';
  if (typeof c.path !== 'string') return 'a comparison without a path';
  if (typeof c.op !== 'string' || !(OPS as readonly string[]).includes(c.op))
    return `unknown operator ${JSON.stringify(c.op)}`;
  if (!only('path', 'op', 'value', 'ignoreCase')) return 'a comparison with unknown keys';
  if (c.ignoreCase !== undefined && typeof c.ignoreCase !== 'boolean')
    return '"ignoreCase" is not true/false';
  return undefined;
}

/** How a comparison's value is edited: the type it has keeps its input. */
export type ValueKind = 'text' | 'number' | 'boolean' | 'json';

export function valueKind(v: unknown): ValueKind {
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'string' || v === undefined) return 'text';
  return 'json';
}

/** The value typed into a value input of a kind, or the reason it is not one. */
export function parseValue(kind: ValueKind, text: string): { value: unknown } | { error: string } {
  switch (kind) {
    case 'text':
      return { value: text };
    case 'number': {
      const n = Number(text);
      return text.trim() !== '' && Number.isFinite(n) ? { value: n } : { error: `"${text}" is not a number` };
    }
    case 'boolean':
      return text === 'true' || text === 'false' ? { value: text === 'true' } : { error: 'true or false' };
    case 'json':
      try {
        return { value: JSON.parse(text) };
      } catch (e) {
        return { error: `Invalid JSON: ${(e as Error).message}` };
      }
  }
}

/** The text shown in a value input for a value of a kind. */
export function valueText(kind: ValueKind, v: unknown): string {
  if (v === undefined) return '';
  if (kind === 'text') return typeof v === 'string' ? v : JSON.stringify(v);
  if (kind === 'json') return JSON.stringify(v);
  return String(v);
}

/** A value converted to another kind as well as it goes (the text of a number stays its digits). */
export function convertValue(v: unknown, to: ValueKind): unknown {
  const text = typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v);
  switch (to) {
    case 'text':
      return text;
    case 'number': {
      const n = Number(text);
      return text.trim() !== '' && Number.isFinite(n) ? n : 0;
    }
    case 'boolean':
      return text === 'true';
    case 'json':
      return v === undefined ? null : v;
  }
}

/** A new comparison for "add condition". */
export function newComparison(): ConditionT {
  return { path: 'last.content', op: 'contains', value: '' };
}

/**
 * A comparison with its operator changed: the value goes when the operator takes none, a value
 * appears when it needs one, and ignoreCase goes when it means nothing. Keys keep their order.
 */
export function withOp(c: Record<string, unknown>, op: CompareOp): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const numeric = NUMBER_OPS.has(op) && !NUMBER_OPS.has(String(c.op));
  for (const [k, v] of Object.entries(c)) {
    if (k === 'value' && UNARY_OPS.has(op)) continue;
    if (k === 'ignoreCase' && !TEXT_OPS.has(op)) continue;
    // Moving to a numeric comparison, a text value that is a number (or nothing yet) becomes one.
    const value = numeric && k === 'value' && typeof v === 'string' ? textAsNumber(v) : v;
    setOwn(out, k, k === 'op' ? op : value);
  }
  if (!UNARY_OPS.has(op) && !('value' in out)) out.value = ['gt', 'gte', 'lt', 'lte'].includes(op) ? 0 : '';
  return out;
}

/** A copy of `o` with `key` set (or removed when `v` is undefined), other keys in their order. */
export function withKey(o: Record<string, unknown>, key: string, v: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let seen = false;
  for (const [k, x] of Object.entries(o)) {
    if (k === key) {
      seen = true;
      if (v === undefined) continue;
      setOwn(out, k, v);
    } else setOwn(out, k, x);
  }
  if (!seen && v !== undefined) setOwn(out, key, v);
  return out;
}

/** Whether a config path (`rules.2.to`) is named by a route pattern (`rules.*.to`). */
export function pathMatches(pattern: string, path: string): boolean {
  const a = pattern.split('.');
  const b = path.split('.');
  return a.length === b.length && a.every((p, i) => p === '*' || p === b[i]);
}

/**
 * Every condition a config holds, found through its schema: `[path, value]` with dotted paths
 * (`rules.0.when`), as the inspector names its fields.
 */
export function conditionsIn(schema: JsonSchema, value: unknown, path = ''): Array<[string, unknown]> {
  if (value === undefined) return [];
  if (isConditionSchema(schema)) return [[path, value]];
  const at = (k: string) => (path ? `${path}.${k}` : k);
  if (schema.type === 'object' && schema.properties && isRecord(value))
    return Object.entries(schema.properties).flatMap(([k, s]) =>
      Object.hasOwn(value, k) ? conditionsIn(s, value[k], at(k)) : [],
    );
  if (schema.type === 'array' && schema.items && Array.isArray(value))
    return value.flatMap((v, i) => conditionsIn(schema.items as JsonSchema, v, at(String(i))));
  return [];
}
