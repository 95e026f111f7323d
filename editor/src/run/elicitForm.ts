/**
 * An MCP server's elicitation form (a flat JSON Schema object, asked during a tool call) as fields
 * a person can fill, and their answer as the text the run's `answer` command takes: the content
 * as JSON, or `decline` / `cancel`. The schema comes from a server the flow reaches, so it is read
 * as hostile data: only the primitive shapes MCP allows are shown, keys that would touch an
 * object's prototype are refused, and values are kept in a Map.
 */

export type FieldKind = 'text' | 'number' | 'integer' | 'boolean' | 'choice' | 'choices';

export interface FormField {
  key: string;
  title: string;
  description?: string;
  kind: FieldKind;
  required: boolean;
  options?: Array<{ value: string; label: string }>;
  default?: string | number | boolean | string[];
  min?: number;
  max?: number;
  minLength?: number;
  maxLength?: number;
  /** `email`, `uri`, `date`, `date-time`: the input type that fits. */
  format?: string;
}

export type FormValue = string | number | boolean | string[] | undefined;

const RESERVED = new Set(['__proto__', 'constructor', 'prototype']);
const MAX_FIELDS = 50;

const rec = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** `enum` (+ legacy `enumNames`), or `oneOf`/`anyOf` of `{const, title}`. */
function optionsOf(s: Record<string, unknown>): FormField['options'] {
  if (Array.isArray(s.enum) && s.enum.every((x) => typeof x === 'string')) {
    const names = Array.isArray(s.enumNames) ? s.enumNames : [];
    return (s.enum as string[]).map((v, i) => ({ value: v, label: str(names[i]) ?? v }));
  }
  const alts = Array.isArray(s.oneOf) ? s.oneOf : Array.isArray(s.anyOf) ? s.anyOf : undefined;
  if (!alts) return undefined;
  const out: Array<{ value: string; label: string }> = [];
  for (const a of alts) {
    const r = rec(a);
    const c = str(r?.const);
    if (c === undefined) return undefined;
    out.push({ value: c, label: str(r?.title) ?? c });
  }
  return out;
}

/** The fields of a form, or why it cannot be shown (it can then only be declined). */
export function formFields(schema: unknown): { fields: FormField[] } | { error: string } {
  const s = rec(schema);
  const props = rec(s?.properties);
  if (!s || !props) return { error: 'the form has no properties' };
  const required = new Set(Array.isArray(s.required) ? s.required.filter((x) => typeof x === 'string') : []);
  const keys = Object.keys(props);
  if (keys.length > MAX_FIELDS)
    return { error: `the form has ${keys.length} fields (at most ${MAX_FIELDS})` };
  const fields: FormField[] = [];
  for (const key of keys) {
    if (RESERVED.has(key)) return { error: `the form names a field "${key}"` };
    const p = rec(props[key]);
    if (!p) return { error: `field "${key}" has no schema` };
    const base = {
      key,
      title: str(p.title) ?? key,
      description: str(p.description),
      required: required.has(key),
    };
    const options = optionsOf(p);
    if (p.type === 'array') {
      const items = rec(p.items);
      const choices = items ? optionsOf(items) : undefined;
      if (!choices) return { error: `field "${key}" is a list of something other than choices` };
      const d = Array.isArray(p.default)
        ? p.default.filter((x): x is string => typeof x === 'string')
        : undefined;
      fields.push({
        ...base,
        kind: 'choices',
        options: choices,
        default: d,
        min: num(p.minItems),
        max: num(p.maxItems),
      });
    } else if (p.type === 'string' && options) {
      fields.push({ ...base, kind: 'choice', options, default: str(p.default) });
    } else if (p.type === 'string') {
      fields.push({
        ...base,
        kind: 'text',
        default: str(p.default),
        minLength: num(p.minLength),
        maxLength: num(p.maxLength),
        format: str(p.format),
      });
    } else if (p.type === 'number' || p.type === 'integer') {
      fields.push({
        ...base,
        kind: p.type,
        default: num(p.default),
        min: num(p.minimum),
        max: num(p.maximum),
      });
    } else if (p.type === 'boolean') {
      fields.push({
        ...base,
        kind: 'boolean',
        default: typeof p.default === 'boolean' ? p.default : undefined,
      });
    } else return { error: `field "${key}" has type ${JSON.stringify(p.type)}` };
  }
  return { fields };
}

/** The values a form starts with: its defaults (a checkbox without one starts unchecked). */
export function initialValues(fields: FormField[]): Map<string, FormValue> {
  const m = new Map<string, FormValue>();
  for (const f of fields)
    m.set(f.key, f.default ?? (f.kind === 'boolean' ? false : f.kind === 'choices' ? [] : undefined));
  return m;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** What is wrong with a field's value, or undefined. */
export function fieldProblem(f: FormField, v: FormValue): string | undefined {
  const empty = v === undefined || v === '' || (Array.isArray(v) && v.length === 0);
  if (empty) return f.required && f.kind !== 'boolean' ? 'required' : undefined;
  switch (f.kind) {
    case 'number':
    case 'integer': {
      if (typeof v !== 'number' || !Number.isFinite(v)) return 'a number';
      if (f.kind === 'integer' && !Number.isInteger(v)) return 'a whole number';
      if (f.min !== undefined && v < f.min) return `at least ${f.min}`;
      if (f.max !== undefined && v > f.max) return `at most ${f.max}`;
      return undefined;
    }
    case 'text': {
      const t = String(v);
      if (f.minLength !== undefined && t.length < f.minLength) return `at least ${f.minLength} characters`;
      if (f.maxLength !== undefined && t.length > f.maxLength) return `at most ${f.maxLength} characters`;
      if (f.format === 'email' && !EMAIL.test(t)) return 'an email address';
      if (f.format === 'uri' && !URL.canParse(t)) return 'an address (URI)';
      return undefined;
    }
    case 'choice':
      return f.options?.some((o) => o.value === v) ? undefined : 'one of the choices';
    case 'choices': {
      const list = v as string[];
      if (f.min !== undefined && list.length < f.min) return `at least ${f.min} choices`;
      if (f.max !== undefined && list.length > f.max) return `at most ${f.max} choices`;
      return undefined;
    }
    default:
      return undefined;
  }
}

/** The answer to send on accept: the content as JSON text, or the problems by field. */
export function acceptAnswer(
  fields: FormField[],
  values: ReadonlyMap<string, FormValue>,
): { text: string } | { problems: Map<string, string> } {
  const problems = new Map<string, string>();
  const entries: Array<[string, FormValue]> = [];
  for (const f of fields) {
    const v = values.get(f.key);
    const why = fieldProblem(f, v);
    if (why) problems.set(f.key, why);
    else if (v !== undefined && v !== '') entries.push([f.key, v]);
  }
  if (problems.size > 0) return { problems };
  // Keys were checked against the reserved names when the fields were read.
  return { text: JSON.stringify(Object.fromEntries(entries)) };
}
