/**
 * Tool pinning: the description and input schema of a tool are hashed when it is approved; a
 * server that later presents a different description or schema for the same name has that tool
 * disabled until the operator re-approves it.
 */
import { createHash } from 'node:crypto';

/** JSON with object keys sorted, so that the hash does not depend on key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function toolPinHash(tool: { description?: string; inputSchema?: unknown }): string {
  return createHash('sha256')
    .update(canonicalJson({ description: tool.description ?? '', inputSchema: tool.inputSchema ?? {} }))
    .digest('hex');
}
