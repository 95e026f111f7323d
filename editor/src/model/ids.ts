/** Readable, deterministic ids: `agent1`, `agent2`, `e1`… the smallest number not yet taken. */

/** Turns a kind name (`vendor/kind` allowed) into an id prefix the flow schema accepts. */
export function idPrefix(kind: string): string {
  const p = kind.replace(/[^A-Za-z0-9_.:-]/g, '-');
  return /^[A-Za-z0-9_]/.test(p) ? p : `n${p}`;
}

export function newId(prefix: string, taken: { has(id: string): boolean }): string {
  for (let i = 1; ; i++) {
    const id = `${prefix}${i}`;
    if (!taken.has(id)) return id;
  }
}
