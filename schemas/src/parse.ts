/**
 * Reads untrusted flow text. Size and depth are checked before `JSON.parse`, so a 50 MB file
 * or 10,000 levels of nesting are refused cheaply; bytes must be UTF-8 (a leading BOM is
 * ignored with a warning, as RFC 8259 allows); reserved keys are refused after parsing.
 */
import { type Problem, pointer, problem, sanitize } from './codes.js';
import { findJsonSyntaxError } from './json-syntax.js';
import { MAX_FLOW_BYTES } from './limits.js';

export interface ParseLimits {
  /** Bytes (UTF-8). Default `MAX_FLOW_BYTES` (8 MiB). */
  maxBytes?: number;
  /** Nesting depth of arrays and objects. Default 64. */
  maxDepth?: number;
  /** Values in the document (objects given by code may share subtrees). Default 2,000,000. */
  maxValues?: number;
}

export const DEFAULT_LIMITS = { maxBytes: MAX_FLOW_BYTES, maxDepth: 64, maxValues: 2_000_000 } as const;

export type ParseResult =
  | { ok: true; value: unknown; warnings: Problem[] }
  | { ok: false; errors: Problem[]; warnings: Problem[] };

const RESERVED = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Depth of bracket nesting, ignoring brackets inside strings; stops counting past `stopAt`.
 * Linear: a native regex finds the next bracket or quote, and a string is skipped to its closing
 * quote with `indexOf`, so long prompts cost almost nothing.
 */
export function jsonDepth(text: string, stopAt: number): number {
  const token = /["[\]{}]/g;
  let depth = 0;
  let max = 0;
  for (let m = token.exec(text); m !== null; m = token.exec(text)) {
    const c = text.charCodeAt(m.index);
    if (c === 34 /* " */) {
      // Find the closing quote: one preceded by an even number of backslashes.
      let end = m.index;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end === -1) return max; // unterminated string: JSON.parse reports it
        let slashes = 0;
        for (let k = end - 1; text.charCodeAt(k) === 92; k--) slashes++;
        if (slashes % 2 === 0) break;
      }
      token.lastIndex = end + 1;
    } else if (c === 123 || c === 91) {
      if (++depth > max) {
        max = depth;
        if (max > stopAt) return max;
      }
    } else depth--;
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

function decode(bytes: Uint8Array): { text: string } | { error: Problem } {
  if (
    bytes.length >= 2 &&
    ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff))
  )
    return { error: problem('not-utf8', '', 'it is UTF-16; save it as UTF-8') };
  try {
    return { text: new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes) };
  } catch {
    return { error: problem('not-utf8', '', `invalid byte sequence at byte ${firstInvalidUtf8(bytes)}`) };
  }
}

/** Offset of the first byte that is not part of well-formed UTF-8 (RFC 3629), for the message. */
export function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    let n = 0;
    let min = 0;
    if (c < 0x80) {
      i++;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
      min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      min = 0x10000;
    } else return i;
    let cp = c & (0x3f >> n);
    for (let k = 1; k <= n; k++) {
      const d = b[i + k];
      if (d === undefined || (d & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n + 1;
  }
  return -1;
}

/** Where and why the text is not JSON, the same on every Node version. */
function jsonErrorDetail(e: unknown, text: string): string {
  const found = findJsonSyntaxError(text);
  if (found) return `${found.reason} (line ${found.line}, column ${found.column})`;
  return sanitize(String(e instanceof Error ? e.message : e).slice(0, 200));
}

/** Bounded `JSON.parse` without the reserved-key pass (the validator does that in its own walk). */
export function parseJsonBounded(input: string | Uint8Array, limits: ParseLimits = {}): ParseResult {
  const maxBytes = limits.maxBytes ?? DEFAULT_LIMITS.maxBytes;
  const maxDepth = limits.maxDepth ?? DEFAULT_LIMITS.maxDepth;
  const warnings: Problem[] = [];
  const tooLarge = (n: number): ParseResult => ({
    ok: false,
    errors: [problem('too-large', '', `${n} bytes, limit ${maxBytes}`)],
    warnings,
  });
  let text: string;
  if (typeof input === 'string') {
    // Every character is at least one byte and at most three, so most cases need no encoding.
    if (input.length > maxBytes) return tooLarge(input.length);
    if (input.length * 3 > maxBytes) {
      const exact = new TextEncoder().encode(input).byteLength;
      if (exact > maxBytes) return tooLarge(exact);
    }
    text = input;
  } else {
    if (input.byteLength > maxBytes) return tooLarge(input.byteLength);
    const d = decode(input);
    if ('error' in d) return { ok: false, errors: [d.error], warnings };
    text = d.text;
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
    return { ok: false, errors: [problem('not-json', '', jsonErrorDetail(e, text))], warnings };
  }
  return { ok: true, value, warnings };
}

/** Reads untrusted text into a JSON value within the limits, refusing prototype-polluting keys. */
export function parseFlowText(input: string | Uint8Array, limits: ParseLimits = {}): ParseResult {
  const r = parseJsonBounded(input, limits);
  if (!r.ok) return r;
  const reserved = findReservedKeys(r.value);
  if (reserved.length > 0)
    return {
      ok: false,
      errors: reserved.map((p) => problem('reserved-key', p, `"${p.split('/').pop()}"`)),
      warnings: r.warnings,
    };
  return r;
}
