/**
 * Names chosen by users (flow, node and edge ids, model names, server and tool names, run ids,
 * state keys) must never become keys of a plain object: `obj["__proto__"] = v` replaces the
 * object's prototype, and `obj["__proto__"].x = v` writes into `Object.prototype` for the whole
 * process. Two defences, used together everywhere:
 *
 * - ids refuse the three names that reach a prototype (`isReservedName`), with a named error;
 * - every table keyed by data is a `Map` or a null-prototype object (`dict()`), so even a name
 *   that slipped through — a model endpoint's answer, an old checkpoint — is an ordinary key, and
 *   a lookup of `toString` or `hasOwnProperty` finds nothing instead of `Object.prototype`'s.
 *
 * `test/security/no-data-keys.test.ts` scans the sources for writes with a data key into anything
 * else and fails on a new one.
 */

/** Names that reach an object's prototype when used as a key. */
export const RESERVED_NAMES: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

export function isReservedName(name: unknown): boolean {
  return typeof name === 'string' && RESERVED_NAMES.has(name);
}

/**
 * A table keyed by data: no prototype, so no key is special and JSON round trips are unchanged.
 * A null-prototype object is used where the table is part of plain-JSON state (checkpoints,
 * catalogs, event payloads); otherwise prefer a `Map`.
 */
export type Dict<T> = Record<string, T>;

export function dict<T>(from?: Readonly<Record<string, T>> | Iterable<readonly [string, T]>): Dict<T> {
  const out = Object.create(null) as Dict<T>;
  if (from === undefined || from === null) return out;
  const entries =
    Symbol.iterator in (from as object)
      ? (from as Iterable<readonly [string, T]>)
      : Object.entries(from as Record<string, T>);
  // defineProperty: a plain `out[k] = v` would be safe on a null-prototype object too, but this
  // stays safe even if someone changes `out`'s creation.
  for (const [k, v] of entries)
    Object.defineProperty(out, k, { value: v, writable: true, enumerable: true, configurable: true });
  return out;
}

/** `obj[key]` when `obj` has its own `key`; never a value inherited from a prototype. */
export function ownValue<T>(obj: Readonly<Record<string, T>> | undefined | null, key: string): T | undefined {
  return obj != null && Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/**
 * Sets `obj[key] = value` as an own property, even for `__proto__`, without touching the
 * prototype. For objects keyed by data that must stay ordinary objects, because a library checks
 * their constructor (Yjs refuses null-prototype values) — everywhere else prefer `dict()`.
 */
export function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}
