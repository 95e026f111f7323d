/**
 * Dotted-path reads over plain data (`state.plan.steps.0`). Own properties only, so a path
 * from a flow can never reach a prototype (`__proto__`, `constructor`).
 */
const MAX_PATH_PARTS = 32;

export function getPath(root: unknown, path: string | readonly string[]): unknown {
  const parts = typeof path === 'string' ? (path === '' ? [] : path.split('.')) : path;
  if (parts.length > MAX_PATH_PARTS) return undefined;
  let v: unknown = root;
  // Indexed: templates read paths every turn, often in code V8 has not optimised (a for-of
  // there allocates an iterator and a result per part).
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (v === null || typeof v !== 'object') return undefined;
    if (!Object.hasOwn(v as object, p)) return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

/** Text form of a value for templates and comparisons: strings as they are, the rest as JSON. */
export function asText(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}
