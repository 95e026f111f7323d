/**
 * Regular expressions that come from flows (rules, guards) are data from a document, so they
 * are bounded: the pattern is length-limited and checked for nested quantifiers and
 * backreferences (the shapes behind catastrophic backtracking), and the input is cut to a
 * fixed length before matching. A refused pattern is an error that names it.
 */
export const MAX_PATTERN_LENGTH = 256;
export const MAX_MATCH_INPUT = 10_000;

const cache = new Map<string, RegExp>();

export class UnsafePatternError extends Error {
  override readonly name = 'UnsafePatternError';
}

/** True when a quantified group contains a quantifier itself, e.g. `(a+)+`, `(\w*)*`, `(a|aa){2,}`. */
function hasNestedQuantifier(p: string): boolean {
  // Stack of "does this open group contain a quantifier or alternation".
  const stack: boolean[] = [];
  let inClass = false;
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(') stack.push(false);
    else if (c === ')') {
      const inner = stack.pop() ?? false;
      const next = p[i + 1];
      const quantified = next === '*' || next === '+' || next === '{' || next === '?';
      if (inner && quantified && next !== '?') return true;
      if (stack.length > 0 && (inner || quantified)) stack[stack.length - 1] = true;
    } else if ((c === '*' || c === '+' || c === '{' || c === '|') && stack.length > 0) {
      stack[stack.length - 1] = true;
    }
  }
  return false;
}

/** Compiles a flow-supplied pattern once, refusing unsafe shapes. */
export function safeRegex(pattern: string, ignoreCase = false): RegExp {
  const key = (ignoreCase ? 'i:' : ':') + pattern;
  const hit = cache.get(key);
  if (hit) return hit;
  if (pattern.length > MAX_PATTERN_LENGTH)
    throw new UnsafePatternError(`pattern is longer than ${MAX_PATTERN_LENGTH} characters`);
  if (/\\[1-9]|\\k</.test(pattern))
    throw new UnsafePatternError(`pattern "${pattern}" uses a backreference, which is not allowed`);
  if (hasNestedQuantifier(pattern))
    throw new UnsafePatternError(
      `pattern "${pattern}" nests quantifiers, which can backtrack catastrophically`,
    );
  let re: RegExp;
  try {
    re = new RegExp(pattern, ignoreCase ? 'iu' : 'u');
  } catch (e) {
    throw new UnsafePatternError(
      `pattern "${pattern}" is not a valid regular expression: ${(e as Error).message}`,
    );
  }
  if (cache.size > 1000) cache.clear();
  cache.set(key, re);
  return re;
}

/** Tests a flow pattern against input cut to a bounded length. */
export function boundedTest(pattern: string, input: string, ignoreCase = false): boolean {
  return safeRegex(pattern, ignoreCase).test(
    input.length > MAX_MATCH_INPUT ? input.slice(0, MAX_MATCH_INPUT) : input,
  );
}
