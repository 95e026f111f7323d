/**
 * One iterative pass over an untrusted document before any schema validation: nesting depth,
 * value count, prototype-polluting keys and non-finite numbers stop the validation early; every
 * string (and key) is checked for hidden or bidirectional characters, misplaced `${env:…}`
 * references and literal secrets. Iterative, so a 10,000-deep or cyclic object cannot overflow
 * the stack; paths are built only when a problem is reported.
 */

import { pointer, problem, quote } from './codes.js';
import type { Collector } from './collector.js';

export interface InspectLimits {
  /** Nesting depth of arrays and objects; the document itself is depth 1. */
  maxDepth: number;
  /** Values visited (objects given by code, not parsed text, may share subtrees). */
  maxValues: number;
}

export type IdsAt = (path: string) => { nodeId?: string; edgeId?: string };

/** A container on the walk; primitives are checked in place and never get a frame. */
interface Frame {
  v: object;
  key: string | number;
  parent: Frame | undefined;
  depth: number;
}

const RESERVED = new Set(['__proto__', 'constructor', 'prototype']);
// Trojan Source (CVE-2021-42574): embeddings, overrides and isolates reorder what a reader sees.
const BIDI = /[\u202a-\u202e\u2066-\u2069]/;
// Invisible characters with no place in prompts or names. ZWJ/ZWNJ and LRM/RLM are left out:
// emoji sequences and Persian, Arabic or Hebrew text need them.
const HIDDEN = /[\u00ad\u180e\u200b\u2060-\u2064\ufeff]/;
// Shapes of well-known credentials. Deliberately specific, so prose mentioning "sk-" passes.
const LITERAL_SECRET =
  /(?:^|[^A-Za-z0-9_-])(sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|xox[abpr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})/;
/** Where a secret may stand, so `${env:NAME}` is allowed: model keys and endpoints, env and headers maps. */
export const SECRET_SLOTS: readonly RegExp[] = [
  /^\/models\/[^/]+\/(apiKey|baseURL)$/,
  /^\/mcpServers\/[^/]+\/(env|headers)\/[^/]+$/,
  /^\/nodes\/\d+\/config(\/[^/]+)*\/(env|headers)\/[^/]+$/,
];
// An env or header entry with such a name holds a credential, so its value must come from ${env:…}.
const SECRET_NAME = /key|token|secret|passw|auth|cookie|credential/i;
const ENV_ONLY = /^(?:(?:Bearer|Basic|Token)\s+)?(?:\$\{env:[A-Za-z_][A-Za-z0-9_]*\}\s*)+$/;

function pathOf(f: Frame | undefined, last?: string | number): string {
  const keys: Array<string | number> = last === undefined ? [] : [last];
  for (let cur = f; cur?.parent; cur = cur.parent) keys.push(cur.key);
  return pointer(...keys.reverse());
}

/** Every character we flag is outside ASCII, so a plain loop skips almost every string. */
function hasNonAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return true;
  return false;
}

const SPECIAL = /[\u00ad\u180e\u200b\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069]/;
// Cheap pre-filter before the full credential pattern.
const SECRET_HINT = /sk-|AKIA|gh[pousr]_|github_pat_|xox[abpr]-|AIza/;

/** Returns false when the document must not be looked at further (too deep, too big, reserved keys). */
export function inspectDocument(doc: unknown, limits: InspectLimits, c: Collector, idsAt: IdsAt): boolean {
  if (doc === null || typeof doc !== 'object') return true;
  const stack: Frame[] = [{ v: doc, key: '', parent: undefined, depth: 1 }];
  let visited = 1;
  let fatal = false;
  // Checks one child of `f`; returns false to stop the walk.
  const visit = (v: unknown, key: string | number, f: Frame): boolean => {
    if (++visited > limits.maxValues) {
      c.error(problem('too-large', '', `more than ${limits.maxValues} values`));
      return false;
    }
    if (typeof v === 'string') checkString(v, key, f, c, idsAt);
    else if (typeof v === 'number') {
      if (!Number.isFinite(v)) {
        const path = pathOf(f, key);
        c.error(problem('schema', path, 'must be a finite number', idsAt(path)));
      }
    } else if (v !== null && typeof v === 'object') {
      if (f.depth + 1 > limits.maxDepth) {
        c.error(problem('too-deep', pathOf(f, key), `more than ${limits.maxDepth} levels`));
        return false;
      }
      stack.push({ v, key, parent: f, depth: f.depth + 1 });
    }
    return true;
  };
  while (stack.length > 0) {
    const f = stack.pop()!;
    const v = f.v;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) if (!visit(v[i], i, f)) return false;
      continue;
    }
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i]!;
      if (RESERVED.has(k)) {
        const path = pathOf(f, k);
        c.error(problem('reserved-key', path, `"${k}"`, idsAt(path)));
        fatal = true;
        continue;
      }
      if (hasNonAscii(k) && SPECIAL.test(k)) checkString(k, k, f, c, idsAt, true);
      if (!visit((v as Record<string, unknown>)[k], k, f)) return false;
    }
  }
  return !fatal;
}

/** `s` is the value at key `key` of container `f` (or, with `isKey`, that key itself). */
function checkString(
  s: string,
  key: string | number,
  f: Frame,
  c: Collector,
  idsAt: IdsAt,
  isKey = false,
): void {
  if (hasNonAscii(s) && SPECIAL.test(s)) {
    const path = pathOf(f, key);
    const where = isKey ? 'in a key' : undefined;
    if (BIDI.test(s)) c.error(problem('bidi-control', path, where, idsAt(path)));
    else if (HIDDEN.test(s)) c.warn(problem('hidden-characters', path, where, idsAt(path)));
  }
  if (isKey) return;
  const slotKey = f.key;
  const inMap = slotKey === 'env' || slotKey === 'headers';
  const maybeSlot = inMap || key === 'apiKey' || key === 'baseURL';
  if (s.includes('${env:')) {
    const path = pathOf(f, key);
    if (!maybeSlot || !SECRET_SLOTS.some((re) => re.test(path)))
      c.error(problem('env-not-allowed', path, undefined, idsAt(path)));
    return;
  }
  if (s.length >= 15 && SECRET_HINT.test(s) && LITERAL_SECRET.test(s)) {
    const path = pathOf(f, key);
    c.error(problem('literal-secret', path, undefined, idsAt(path)));
    return;
  }
  if (inMap && typeof key === 'string' && SECRET_NAME.test(key) && s.trim() !== '') {
    const path = pathOf(f, key);
    if (SECRET_SLOTS.some((re) => re.test(path)) && !ENV_ONLY.test(s))
      c.error(
        problem(
          'literal-secret',
          path,
          `${quote(key)} holds a credential; write its value as \${env:NAME}`,
          idsAt(path),
        ),
      );
  }
}
