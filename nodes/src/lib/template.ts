/**
 * `{{…}}` templates: placeholders are paths into a context (`task`, `summary`, `inbox`, `last`,
 * `state.key`, `input.x`), substituted as text. There are no expressions, helpers or loops, and
 * a placeholder that names nothing renders empty. Parsed templates are cached.
 */
import { asText, getPath } from './path.js';

type Part = string | { path: string[] };
/** A parsed template: its parts, and the first segment of each placeholder's path. */
interface Parsed {
  parts: Part[];
  heads: string[];
}
const cache = new Map<string, Parsed>();
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;

function parse(template: string): Parsed {
  let parsed = cache.get(template);
  if (parsed) return parsed;
  const parts: Part[] = [];
  const heads: string[] = [];
  let at = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    if (m.index > at) parts.push(template.slice(at, m.index));
    const path = m[1]!.split('.');
    parts.push({ path });
    if (!heads.includes(path[0]!)) heads.push(path[0]!);
    at = m.index + m[0].length;
  }
  if (at < template.length) parts.push(template.slice(at));
  if (cache.size > 5000) cache.clear();
  parsed = { parts, heads };
  cache.set(template, parsed);
  return parsed;
}

/** Renders a template against a plain context object. */
export function renderTemplate(template: string, ctx: Record<string, unknown>): string {
  if (!template.includes('{{')) return template;
  let out = '';
  const parts = parse(template).parts;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    out += typeof p === 'string' ? p : asText(getPath(ctx, p.path));
  }
  return out;
}

/** The placeholders a template uses (the editor shows them; tests check them). */
export function templateFields(template: string): string[] {
  return parse(template).parts.flatMap((p) => (typeof p === 'string' ? [] : [p.path.join('.')]));
}

/** The context fields a template reads: the first name of each placeholder, once each. */
export function templateHeads(template: string): readonly string[] {
  return parse(template).heads;
}
