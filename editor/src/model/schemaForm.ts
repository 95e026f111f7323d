/**
 * Reads a kind's TypeBox config schema (plain JSON Schema underneath) and decides which widget
 * edits each field, so that the inspector form follows any registered kind with no editor change.
 */

import { setOwn } from '@switchboard/schemas/core';
import { isTemplateField } from './templateVars.js';

export type JsonSchema = Record<string, unknown> & {
  type?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  const?: unknown;
  default?: unknown;
  minimum?: number;
  maximum?: number;
};

export type Widget =
  | { type: 'enum'; options: string[] }
  | { type: 'text'; multiline: boolean; template: boolean }
  | { type: 'number'; integer: boolean; min?: number; max?: number }
  | { type: 'boolean' }
  | { type: 'stringList' }
  | { type: 'objectList'; item: JsonSchema }
  | { type: 'object'; schema: JsonSchema }
  | { type: 'variant'; discriminator: string; variants: Array<{ tag: string; schema: JsonSchema }> }
  | { type: 'json'; jsonSchema: boolean };

function isLiteralUnion(s: JsonSchema): string[] | undefined {
  if (!Array.isArray(s.anyOf) || s.anyOf.length === 0) return undefined;
  const out: string[] = [];
  for (const a of s.anyOf) {
    if (typeof a.const !== 'string') return undefined;
    out.push(a.const);
  }
  return out;
}

/** A union of objects that share one property holding a distinct constant (`type: 'json'`). */
function discriminated(s: JsonSchema): Widget | undefined {
  if (!Array.isArray(s.anyOf) || s.anyOf.length < 2) return undefined;
  if (!s.anyOf.every((a) => a.type === 'object' && a.properties)) return undefined;
  const first = s.anyOf[0]!.properties!;
  for (const key of Object.keys(first)) {
    const tags = s.anyOf.map((a) => a.properties?.[key]?.const);
    if (tags.every((t) => typeof t === 'string') && new Set(tags).size === tags.length)
      return {
        type: 'variant',
        discriminator: key,
        variants: s.anyOf.map((a, i) => ({ tag: tags[i] as string, schema: a })),
      };
  }
  return undefined;
}

export function widgetFor(key: string, s: JsonSchema): Widget {
  const options = isLiteralUnion(s);
  if (options) return { type: 'enum', options };
  const variant = discriminated(s);
  if (variant) return variant;
  const jsonSchema = /JSON Schema/.test(s.description ?? '');
  switch (s.type) {
    case 'string': {
      const template = isTemplateField(key, s.description);
      const multiline = template || ['prompt', 'text', 'description'].includes(key);
      return { type: 'text', multiline, template };
    }
    case 'integer':
    case 'number':
      return { type: 'number', integer: s.type === 'integer', min: s.minimum, max: s.maximum };
    case 'boolean':
      return { type: 'boolean' };
    case 'array':
      if (s.items?.type === 'string' && !s.items.anyOf) return { type: 'stringList' };
      if (s.items?.type === 'object' && s.items.properties) return { type: 'objectList', item: s.items };
      return { type: 'json', jsonSchema: false };
    case 'object':
      if (s.properties && Object.keys(s.properties).length > 0 && !s.patternProperties)
        return { type: 'object', schema: s };
      return { type: 'json', jsonSchema };
    default:
      return { type: 'json', jsonSchema };
  }
}

/** Fields of an object schema in declaration order, with whether each is required. */
export function fieldsOf(s: JsonSchema): Array<{ key: string; schema: JsonSchema; required: boolean }> {
  const req = new Set(s.required ?? []);
  return Object.entries(s.properties ?? {}).map(([key, schema]) => ({ key, schema, required: req.has(key) }));
}

/** A starting value for a new field or list item of this schema. */
export function initialValue(s: JsonSchema): unknown {
  if (s.default !== undefined) return structuredClone(s.default);
  // A new condition is a row to fill in the builder, not an empty object the validator refuses.
  if (s.$id === 'Condition' || s.$ref === 'Condition')
    return { path: 'last.content', op: 'contains', value: '' };
  if (s.const !== undefined) return s.const;
  const options = isLiteralUnion(s);
  if (options) return options[0];
  const variant = discriminated(s);
  if (variant && variant.type === 'variant') return initialValue(variant.variants[0]!.schema);
  // Any other union starts as its first alternative (a route `to` is a string before a list).
  if (Array.isArray(s.anyOf) && s.anyOf.length > 0) return initialValue(s.anyOf[0]!);
  switch (s.type) {
    case 'string':
      return '';
    case 'integer':
    case 'number':
      return s.minimum ?? 0;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const f of fieldsOf(s)) if (f.required) setOwn(out, f.key, initialValue(f.schema));
      return out;
    }
    default:
      return {};
  }
}

const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

/** A light check that a value can serve as a JSON Schema (an object with sensible `type`s). */
export function jsonSchemaProblem(v: unknown): string | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'a JSON Schema is a JSON object';
  const t = (v as { type?: unknown }).type;
  const types = Array.isArray(t) ? t : t === undefined ? [] : [t];
  for (const x of types)
    if (typeof x !== 'string' || !JSON_TYPES.has(x)) return `"type" ${JSON.stringify(x)} is not a JSON type`;
  const props = (v as { properties?: unknown }).properties;
  if (props !== undefined && (props === null || typeof props !== 'object' || Array.isArray(props)))
    return '"properties" must be an object';
  return undefined;
}
