/**
 * Reads untrusted flow text. Size and depth are checked before `JSON.parse`, so a 50 MB file
 * or 10,000 levels of nesting are refused cheaply, and reserved keys are refused after it.
 */
import { type Problem, pointer, problem } from './codes.js';

export interface ParseLimits {
  /** Bytes (UTF-8). Default 8 MiB. */
  maxBytes?: number;
  /** Nesting depth of arrays and objects. Default 64. */
  maxDepth?: number;
}

export const DEFAULT_LIMITS = { maxBytes: 8 * 1024 * 1024, maxDepth: 64 } as const;

export type ParseResult =
  | { ok: true; value: unknown; warnings: Problem[] }
  | { ok: false; errors: Problem[]; warnings: Problem[] };

const RESERVED = new Set(['__proto__', 'constructor', 'prototype']);

/** Depth of bracket nesting, ignoring brackets inside strings. Linear, allocation-free. */
export function jsonDepth(text: string, stopAt: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > stopAt) return max;
      }
    } else if (c === 125 || c === 93) depth--;
  }
  return max;
}

/** Finds keys that could pollute prototypes when a document is later merged or spread. */
export function findReservedKeys(value: unknown, limit = 20): string[] {
  const found: string[] = [];
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length > 0 && found.length < limit) {
    const [v, path] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}/${i}`]);
      continue;
    }
    for (const k of Object.keys(v)) {
      const p = path + pointer(k);
      if (RESERVED.has(k)) found.push(p);
      stack.push([(v as Record<string, unknown>)[k], p]);
    }
  }
  return found;
}

export function parseFlowText(input: string | Uint8Array, limits: ParseLimits = {}): ParseResult {
  const maxBytes = limits.maxBytes ?? DEFAULT_LIMITS.maxBytes;
  const maxDepth = limits.maxDepth ?? DEFAULT_LIMITS.maxDepth;
  const warnings: Problem[] = [];
  const bytes = typeof input === 'string' ? input.length * 3 : input.byteLength; // upper bound for strings
  if (typeof input !== 'string' && bytes > maxBytes)
    return { ok: false, errors: [problem('too-large', '', `${bytes} bytes, limit ${maxBytes}`)], warnings };
  let text = typeof input === 'string' ? input : new TextDecoder('utf-8', { fatal: false }).decode(input);
  if (typeof input === 'string' && bytes > maxBytes) {
    const exact = new TextEncoder().encode(text).byteLength;
    if (exact > maxBytes)
      return { ok: false, errors: [problem('too-large', '', `${exact} bytes, limit ${maxBytes}`)], warnings };
  }
  if (text.charCodeAt(0) === 0xfeff) {
    text = text.slice(1);
    warnings.push(problem('bom', ''));
  }
  if (text.trim() === '') return { ok: false, errors: [problem('empty-document', '')], warnings };
  const depth = jsonDepth(text, maxDepth);
  if (depth > maxDepth)
    return { ok: false, errors: [problem('too-deep', '', `more than ${maxDepth} levels`)], warnings };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, errors: [problem('not-json', '', (e as Error).message)], warnings };
  }
  const reserved = findReservedKeys(value);
  if (reserved.length > 0)
    return {
      ok: false,
      errors: reserved.map((p) => problem('reserved-key', p, p.split('/').pop())),
      warnings,
    };
  return { ok: true, value, warnings };
}
