/**
 * A run's answer to an MCP server's elicitation request (form mode) made during a tool call,
 * by the operator's policy: decline, or accept the form's defaults. A form whose required
 * fields do not all have a default cannot be accepted as is and is declined.
 */
import type { ElicitationAnswer, ElicitationAsk } from '../tools/types.js';

type Value = string | number | boolean | string[];

function isValue(v: unknown): v is Value {
  return (
    typeof v === 'string' ||
    typeof v === 'number' ||
    typeof v === 'boolean' ||
    (Array.isArray(v) && v.every((x) => typeof x === 'string'))
  );
}

export function answerElicitation(
  ask: ElicitationAsk,
  policy: 'decline' | 'accept-defaults',
): ElicitationAnswer {
  if (policy !== 'accept-defaults') return { action: 'decline' };
  const props = ask.requestedSchema.properties;
  if (!props || typeof props !== 'object' || Array.isArray(props)) return { action: 'decline' };
  const required = Array.isArray(ask.requestedSchema.required) ? ask.requestedSchema.required : [];
  const content: Record<string, Value> = Object.create(null);
  for (const [key, def] of Object.entries(props as Record<string, unknown>)) {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') return { action: 'decline' };
    const d = (def as { default?: unknown } | null)?.default;
    if (isValue(d)) content[key] = d;
  }
  for (const r of required)
    if (typeof r !== 'string' || !Object.hasOwn(content, r)) return { action: 'decline' };
  return { action: 'accept', content };
}
