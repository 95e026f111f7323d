/**
 * Names shown to models: `<toolNodeId>__<tool>`, sanitised to the OpenAI function-name pattern
 * ^[a-zA-Z0-9_-]{1,64}$. Names that collide after sanitising (or are too long) get a suffix
 * derived from a hash of the original pair, so the result depends only on the set of granted
 * tools, never on the order they were discovered in.
 */
import { createHash } from 'node:crypto';

export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX = 64;

function hash8(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 8);
}

export function sanitizeName(s: string): string {
  const clean = s.replace(/[^a-zA-Z0-9_-]/g, '_');
  return clean || '_';
}

function withSuffix(base: string, suffix: string): string {
  return `${base.slice(0, MAX - suffix.length - 1)}_${suffix}`;
}

export interface NameRequest {
  toolNodeId: string;
  remoteName: string;
}

/** One collision-free, pattern-valid name per request, in the same order. */
export function assignToolNames(reqs: readonly NameRequest[]): string[] {
  const bases = reqs.map((r) => {
    const b = sanitizeName(`${r.toolNodeId}__${r.remoteName}`);
    return b.length > MAX ? withSuffix(b, hash8(r.toolNodeId, r.remoteName)) : b;
  });
  const count = new Map<string, number>();
  for (const b of bases) count.set(b, (count.get(b) ?? 0) + 1);
  const names = bases.map((b, i) =>
    count.get(b)! > 1 ? withSuffix(b, hash8(reqs[i]!.toolNodeId, reqs[i]!.remoteName)) : b,
  );
  // A hashed name could still meet another name; settle it in a deterministic order.
  const order = reqs
    .map((r, i) => ({ i, key: `${r.toolNodeId}\0${r.remoteName}` }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const taken = new Set<string>();
  for (const { i } of order) {
    let n = names[i]!;
    for (let k = 2; taken.has(n); k++) n = withSuffix(names[i]!, String(k));
    taken.add(n);
    names[i] = n;
  }
  return names;
}
