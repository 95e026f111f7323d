/**
 * `{{…}}` templates: placeholders are paths into a context (`task`, `summary`, `inbox`, `last`,
 * `state.key`, `input.x`), substituted as text. There are no expressions, helpers or loops, and
 * a placeholder that names nothing renders empty. Parsed templates are cached.
 */
import { asText, getPath } from './path.js';

type Part = string | { path: string[] };
const cache = new Map<string, Part[]>();
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;

function parse(template: string): Part[] {
  let parts = cache.get(template);
  if (parts) return parts;
  parts = [];
  let at = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    if (m.index > at) parts.push(template.slice(at, m.index));
    parts.push({ path: m[1]!.split('.') });
    at = m.index + m[0].length;
  }
  if (at < template.length) parts.push(template.slice(at));
  if (cache.size > 5000) cache.clear();
  cache.set(template, parts);
  return parts;
}

/** Renders a template against a plain context object. */
export function renderTemplate(template: string, ctx: Record<string, unknown>): string {
  if (!template.includes('{{')) return template;
  let out = '';
  const parts = parse(template);
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    out += typeof p === 'string' ? p : asText(getPath(ctx, p.path));
  }
  return out;
}

/** The placeholders a template uses (the editor shows them; tests check them). */
export function templateFields(template: string): string[] {
  return parse(template).flatMap((p) => (typeof p === 'string' ? [] : [p.path.join('.')]));
}
