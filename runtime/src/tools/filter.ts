/** Tool filters: `include` / `exclude` of a tool node and `allow` of a tools edge, with `*` wildcards. */

/** True when `name` matches `pattern`, where `*` stands for any run of characters. */
export function matchesPattern(name: string, pattern: string): boolean {
  const parts = pattern.split('*');
  if (parts.length === 1) return name === pattern;
  if (!name.startsWith(parts[0]!)) return false;
  let pos = parts[0]!.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const at = name.indexOf(parts[i]!, pos);
    if (at < 0) return false;
    pos = at + parts[i]!.length;
  }
  const last = parts[parts.length - 1]!;
  return name.length - last.length >= pos && name.endsWith(last);
}

export interface ToolFilter {
  include?: string[];
  exclude?: string[];
  /** The edge's narrowing. */
  allow?: string[];
}

export function passesFilter(name: string, f: ToolFilter): boolean {
  if (f.include && !f.include.some((p) => matchesPattern(name, p))) return false;
  if (f.exclude?.some((p) => matchesPattern(name, p))) return false;
  if (f.allow && !f.allow.some((p) => matchesPattern(name, p))) return false;
  return true;
}
