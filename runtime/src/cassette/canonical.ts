/**
 * What makes two model requests "the same" for a cassette: the flow's model name, the call's
 * parameters (the model id, temperature, token cap), the messages, the tools offered and the
 * response format, as canonical JSON (sorted keys, no undefined). Node ids, endpoints and keys
 * are left out: the same prompt from a moved node, or against another server, finds its reply.
 */
import { createHash } from 'node:crypto';
import type { ModelConfigT } from '@switchboard/schemas';
import { canonicalJson } from '../mcp/pins.js';
import type { ModelRequest } from '../models/types.js';

export interface CanonicalRequest {
  model: string;
  params: { model: string; temperature?: number; maxTokens?: number };
  messages: ModelRequest['messages'];
  tools?: ModelRequest['tools'];
  jsonSchema?: ModelRequest['jsonSchema'];
}

export function canonicalRequest(name: string, config: ModelConfigT, req: ModelRequest): CanonicalRequest {
  const params: CanonicalRequest['params'] = { model: config.model ?? name };
  if (config.temperature !== undefined) params.temperature = config.temperature;
  if (config.maxTokens !== undefined) params.maxTokens = config.maxTokens;
  const c: CanonicalRequest = { model: name, params, messages: req.messages };
  if (req.tools && req.tools.length > 0) c.tools = req.tools;
  if (req.jsonSchema) c.jsonSchema = req.jsonSchema;
  // A deep copy: the agent keeps appending to its message array during a turn.
  return JSON.parse(canonicalJson(c)) as CanonicalRequest;
}

export const hashOf = (value: unknown): string =>
  createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 32);

export function toolKey(tool: string, args: unknown): string {
  return hashOf({ tool, args });
}

export interface Difference {
  /** Where the values first differ, e.g. `messages[0].content`. */
  path: string;
  recorded: string;
  requested: string;
}

const clip = (s: string, at: number): string => {
  const from = Math.max(0, at - 40);
  const to = Math.min(s.length, at + 60);
  return `${from > 0 ? '…' : ''}${s.slice(from, to)}${to < s.length ? '…' : ''}`;
};

const brief = (v: unknown): string => {
  const s = v === undefined ? '(absent)' : JSON.stringify(v);
  return s.length > 120 ? `${s.slice(0, 120)}…` : s;
};

/** The first place where `requested` differs from `recorded` (depth first, in key order), or undefined. */
export function firstDifference(recorded: unknown, requested: unknown, path = ''): Difference | undefined {
  if (typeof recorded === 'string' && typeof requested === 'string') {
    if (recorded === requested) return undefined;
    let i = 0;
    while (i < recorded.length && i < requested.length && recorded[i] === requested[i]) i++;
    return {
      path: path || '(value)',
      recorded: JSON.stringify(clip(recorded, i)),
      requested: JSON.stringify(clip(requested, i)),
    };
  }
  if (Array.isArray(recorded) && Array.isArray(requested)) {
    const n = Math.max(recorded.length, requested.length);
    for (let i = 0; i < n; i++) {
      const d = firstDifference(recorded[i], requested[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  const isObj = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (isObj(recorded) && isObj(requested)) {
    const a = recorded as Record<string, unknown>;
    const b = requested as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const k of keys) {
      const d = firstDifference(a[k], b[k], path ? `${path}.${k}` : k);
      if (d) return d;
    }
    return undefined;
  }
  if (canonicalJson(recorded) === canonicalJson(requested)) return undefined;
  return { path: path || '(value)', recorded: brief(recorded), requested: brief(requested) };
}

/** How alike two requests are: the number of leading messages they share, then whether the rest matches. */
export function likeness(a: CanonicalRequest, b: CanonicalRequest): number {
  let same = 0;
  const n = Math.min(a.messages.length, b.messages.length);
  while (same < n && canonicalJson(a.messages[same]) === canonicalJson(b.messages[same])) same++;
  const rest = canonicalJson({ ...a, messages: [] }) === canonicalJson({ ...b, messages: [] }) ? 0.5 : 0;
  return same + rest;
}
