/**
 * Evaluates declarative conditions (see `schemas/src/condition.ts`): operators over paths into
 * a small context, never code. Unknown paths read as undefined; a bad regex is an error that
 * names the pattern. Depth is bounded so a hostile document cannot recurse without end.
 */
import type { ComparisonT, ConditionT } from '@switchboard/schemas';
import type { ConditionContext } from '../runtime-api.js';
import { asText, getPath } from './path.js';
import { boundedTest } from './regex.js';

const MAX_DEPTH = 32;

/** Reads a condition path: `last.content`, `last.json.x`, `state.x`, `counters.failures.n`, `turn.toolCalls`, `input`. */
export function readPath(ctx: ConditionContext, path: string): unknown {
  const parts = path.split('.');
  const head = parts[0];
  const rest = parts.slice(1);
  switch (head) {
    case 'last':
      // `json` may be computed on read (parsed lazily by the host), so it is read as a property.
      if (rest[0] === 'json') return getPath(ctx.last?.json, rest.slice(1));
      return getPath(ctx.last, rest);
    case 'state':
      return getPath(ctx.state, rest);
    case 'counters':
      return getPath(ctx.counters, rest);
    case 'turn':
      return getPath(ctx.turn, rest);
    case 'input':
      return getPath(ctx.input, rest);
    default:
      return undefined;
  }
}

function num(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return undefined;
}

function compare(c: ComparisonT, ctx: ConditionContext): boolean {
  const v = readPath(ctx, c.path);
  const ic = c.ignoreCase === true;
  const norm = (s: string) => (ic ? s.toLowerCase() : s);
  switch (c.op) {
    case 'exists':
      return v !== undefined && v !== null;
    case 'empty':
      return (
        v === undefined ||
        v === null ||
        v === '' ||
        (Array.isArray(v) && v.length === 0) ||
        (typeof v === 'object' && Object.keys(v as object).length === 0)
      );
    case 'eq':
    case 'ne': {
      let same: boolean;
      if (typeof v === 'string' && typeof c.value === 'string') same = norm(v) === norm(c.value);
      else if (typeof c.value === 'number' && num(v) !== undefined) same = num(v) === c.value;
      else same = asText(v) === asText(c.value);
      return c.op === 'eq' ? same : !same;
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const a = num(v);
      const b = num(c.value);
      if (a === undefined || b === undefined) return false;
      return c.op === 'gt' ? a > b : c.op === 'gte' ? a >= b : c.op === 'lt' ? a < b : a <= b;
    }
    case 'contains':
    case 'notContains': {
      let has: boolean;
      if (Array.isArray(v)) has = v.some((x) => asText(x) === asText(c.value));
      else has = norm(asText(v)).includes(norm(asText(c.value)));
      return c.op === 'contains' ? has : !has;
    }
    case 'regex':
      return boundedTest(asText(c.value), asText(v), ic);
  }
}

export function evaluateCondition(cond: ConditionT | undefined, ctx: ConditionContext, depth = 0): boolean {
  if (cond === undefined) return true;
  if (depth > MAX_DEPTH) throw new Error(`condition nested deeper than ${MAX_DEPTH}`);
  if ('always' in cond) return true;
  if ('all' in cond) return cond.all.every((c) => evaluateCondition(c, ctx, depth + 1));
  if ('any' in cond) return cond.any.some((c) => evaluateCondition(c, ctx, depth + 1));
  if ('not' in cond) return !evaluateCondition(cond.not, ctx, depth + 1);
  return compare(cond, ctx);
}
