/**
 * Turns Ajv's raw errors into problems a person can act on. Ajv reports every branch of a
 * union (`anyOf`) separately, so `{ "type": "xml" }` for a text-or-json output yields five
 * errors about two shapes the author never meant. Here a union is explained as a whole: the
 * value is re-checked against each branch, and the branch the author evidently meant (its
 * literal tag matches, fewest problems) speaks; when no branch fits at all, one sentence lists
 * what is allowed.
 */
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { quote } from './codes.js';

/** A problem relative to the value that was checked. */
export interface Explained {
  path: string;
  keyword: string;
  detail: string;
}

const branchCache = new WeakMap<object, ValidateFunction | null>();

function compileBranch(ajv: Ajv, schema: unknown): ValidateFunction | null {
  if (schema === null || typeof schema !== 'object') return null;
  let fn = branchCache.get(schema);
  if (fn === undefined) {
    try {
      fn = ajv.compile(schema as object);
    } catch {
      fn = null; // a third-party schema Ajv cannot compile on its own: fall back to raw errors
    }
    branchCache.set(schema, fn);
  }
  return fn;
}

const under = (p: string, q: string) => p === q || p.startsWith(`${q}/`);

/** Explains the errors `fn` left after failing on `data`. */
export function explainErrors(ajv: Ajv, errors: readonly ErrorObject[]): Explained[] {
  // The outermost unions: Ajv pushes a union's error after its branches' errors, so of two
  // unions at the same place the later one is the outer.
  const unions = errors
    .map((e, i) => ({ e, i }))
    .filter(({ e }) => (e.keyword === 'anyOf' || e.keyword === 'oneOf') && Array.isArray(e.schema))
    .filter(({ e }) => !(e.keyword === 'oneOf' && (e.params as { passingSchemas?: unknown }).passingSchemas))
    .sort((a, b) => a.e.instancePath.length - b.e.instancePath.length || b.i - a.i);
  const outer: ErrorObject[] = [];
  for (const { e } of unions) if (!outer.some((o) => under(e.instancePath, o.instancePath))) outer.push(e);

  const out: Explained[] = [];
  const seen = new Set<string>();
  const add = (x: Explained) => {
    const key = `${x.path}|${x.detail}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(x);
    }
  };
  for (const e of errors) {
    if (outer.some((o) => under(e.instancePath, o.instancePath))) continue;
    if (e.keyword === 'anyOf') continue;
    add(describe(e));
  }
  for (const u of outer) for (const x of explainUnion(ajv, u)) add({ ...x, path: u.instancePath + x.path });
  return out;
}

function explainUnion(ajv: Ajv, u: ErrorObject): Explained[] {
  const branches = u.schema as unknown[];
  const results: Explained[][] = [];
  for (const b of branches) {
    const fn = compileBranch(ajv, b);
    if (!fn) return [{ path: '', keyword: 'anyOf', detail: 'does not match any of the allowed forms' }];
    if (fn(u.data)) return []; // cannot happen for a failed anyOf; nothing to say
    results.push(explainErrors(ajv, fn.errors ?? []));
  }
  // Branches that reject the value's very type or literal: the author did not mean them.
  const wrongShape = (r: Explained[]) =>
    r.some((x) => x.path === '' && (x.keyword === 'type' || x.keyword === 'const' || x.keyword === 'enum'));
  if (results.every(wrongShape))
    return [{ path: '', keyword: 'enum', detail: `must be ${allowed(branches)}` }];
  let candidates = results.filter((r) => !wrongShape(r));
  // Branches whose literal tag (e.g. `"type": "json"`) differs from the value's.
  const tagOf = (r: Explained[]) => r.find((x) => x.keyword === 'const' && /^\/[^/]+$/.test(x.path));
  const matching = candidates.filter((r) => !tagOf(r));
  if (matching.length === 0) {
    const tags = candidates.map(tagOf);
    const path = tags[0]!.path;
    if (tags.every((t) => t!.path === path)) {
      const values = candidates.map((r) => r.find((x) => x.path === path && x.keyword === 'const')!.detail);
      return [
        {
          path,
          keyword: 'enum',
          detail: `must be one of ${values.map((v) => v.replace(/^must be /, '')).join(', ')}`,
        },
      ];
    }
  } else candidates = matching;
  // Every branch only misses its own property: say which properties would do.
  if (candidates.every((r) => r.every((x) => x.path === '' && x.keyword === 'required'))) {
    const options = candidates.map((r) => {
      const props = r.map((x) => x.detail.replace(/^missing property /, ''));
      return props.length === 1 ? `the property ${props[0]}` : `the properties ${props.join(' and ')}`;
    });
    return [{ path: '', keyword: 'required', detail: `needs ${options.join(', or ')}` }];
  }
  return candidates.reduce((best, r) => (r.length < best.length ? r : best));
}

function allowed(branches: unknown[]): string {
  const parts: string[] = [];
  for (const b of branches) {
    const s = (b ?? {}) as Record<string, unknown>;
    if (Array.isArray(s.anyOf)) parts.push(allowed(s.anyOf).replace(/^one of /, ''));
    else if ('const' in s) parts.push(JSON.stringify(s.const));
    else if (Array.isArray(s.enum)) parts.push(...s.enum.map((v) => JSON.stringify(v)));
    else if (typeof s.type === 'string') parts.push(article(s.type));
    else parts.push('another allowed form');
  }
  const unique = [...new Set(parts)];
  if (unique.length === 1) return unique[0]!;
  return unique.every((p) => p.startsWith('"') || /^[-\d]/.test(p))
    ? `one of ${unique.join(', ')}`
    : `${unique.slice(0, -1).join(', ')} or ${unique[unique.length - 1]}`;
}

function article(type: string): string {
  switch (type) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'integer':
      return 'a whole number';
    case 'boolean':
      return 'true or false';
    case 'object':
      return 'an object';
    case 'array':
      return 'an array';
    case 'null':
      return 'null';
    default:
      return type;
  }
}

/** The closest known name within two edits, for "did you mean". */
export function suggest(name: string, known: string[]): string | undefined {
  let best: string | undefined;
  let bestD = 3;
  for (const k of known) {
    const d = distance(name.toLowerCase(), k.toLowerCase(), bestD);
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  return best;
}

function distance(a: string, b: string, cap: number): number {
  if (Math.abs(a.length - b.length) >= cap) return cap;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

const COMPARISON: Record<string, string> = {
  '>=': 'at least',
  '<=': 'at most',
  '>': 'more than',
  '<': 'less than',
};

/** One Ajv error as a sentence. */
export function describe(e: ErrorObject): Explained {
  const params = e.params as Record<string, unknown>;
  const parent = (e.parentSchema ?? {}) as Record<string, unknown>;
  const at = (detail: string, path = e.instancePath): Explained => ({ path, keyword: e.keyword, detail });
  switch (e.keyword) {
    case 'required':
      return at(`missing property ${quote(params.missingProperty)}`);
    case 'additionalProperties': {
      const extra = String(params.additionalProperty);
      const path = `${e.instancePath}/${extra.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      const patterns = parent.patternProperties as Record<string, unknown> | undefined;
      if (patterns && !parent.properties)
        return at(
          `the name ${quote(extra)} is not allowed (must match ${Object.keys(patterns).join(' or ')})`,
          path,
        );
      const known = Object.keys((parent.properties as Record<string, unknown>) ?? {});
      const hint = suggest(extra, known);
      return at(`unknown property ${quote(extra)}${hint ? `; did you mean ${quote(hint)}?` : ''}`, path);
    }
    case 'type':
      return at(`must be ${String(params.type).split(',').map(article).join(' or ')}`);
    case 'const':
      return at(`must be ${JSON.stringify(params.allowedValue)}`);
    case 'enum':
      return at(
        `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
      );
    case 'minLength':
      return at(
        params.limit === 1 ? 'must not be empty' : `must be at least ${params.limit} characters long`,
      );
    case 'maxLength':
      return at(`must be at most ${params.limit} characters long`);
    case 'minimum':
    case 'exclusiveMinimum':
    case 'maximum':
    case 'exclusiveMaximum':
      return at(`must be ${COMPARISON[String(params.comparison)] ?? params.comparison} ${params.limit}`);
    case 'minItems':
      return at(`must have at least ${params.limit} items`);
    case 'maxItems':
      return at(`must have at most ${params.limit} items`);
    case 'pattern': {
      const desc = typeof parent.description === 'string' ? ` (${parent.description})` : '';
      return at(`does not match ${params.pattern}${desc}`);
    }
    case 'oneOf':
      return at('matches more than one of the allowed forms');
    default:
      return at(e.message ?? 'is not valid');
  }
}
