/**
 * A run's answer to an MCP server's elicitation request (form mode) made during a tool call,
 * by the operator's policy: decline, or accept the form's defaults. A form whose required
 * fields do not all have a default cannot be accepted as is and is declined.
 */
import { dict } from '@switchboard/schemas/core';
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

/**
 * A person's answer to a form, as text (an answers file, the `answer` command, a served flow's
 * caller): `decline` or `cancel`; a JSON object, the content; any other text, the value of the
 * form's only field (declined when the form has more than one).
 */
export function elicitationFromText(ask: ElicitationAsk, text: string): ElicitationAnswer {
  const t = text.trim();
  if (t === 'decline' || t === 'cancel') return { action: t };
  if (t.startsWith('{')) {
    try {
      const v = JSON.parse(t) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) {
        const content = dict<Value>();
        for (const [k, x] of Object.entries(v)) {
          if (k === '__proto__' || k === 'constructor' || k === 'prototype') return { action: 'decline' };
          if (isValue(x)) content[k] = x;
        }
        return { action: 'accept', content };
      }
    } catch {
      // Not JSON: plain text below.
    }
  }
  const props = ask.requestedSchema.properties;
  const keys = props && typeof props === 'object' && !Array.isArray(props) ? Object.keys(props) : [];
  if (keys.length !== 1) return { action: 'decline' };
  const key = keys[0]!;
  if (key === '__proto__' || key === 'constructor' || key === 'prototype') return { action: 'decline' };
  const content = dict<Value>();
  content[key] = text;
  return { action: 'accept', content };
}

export function answerElicitation(
  ask: ElicitationAsk,
  policy: 'decline' | 'accept-defaults',
): ElicitationAnswer {
  if (policy !== 'accept-defaults') return { action: 'decline' };
  const props = ask.requestedSchema.properties;
  if (!props || typeof props !== 'object' || Array.isArray(props)) return { action: 'decline' };
  const required = Array.isArray(ask.requestedSchema.required) ? ask.requestedSchema.required : [];
  const content = dict<Value>();
  for (const [key, def] of Object.entries(props as Record<string, unknown>)) {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') return { action: 'decline' };
    const d = (def as { default?: unknown } | null)?.default;
    if (isValue(d)) content[key] = d;
  }
  for (const r of required)
    if (typeof r !== 'string' || !Object.hasOwn(content, r)) return { action: 'decline' };
  return { action: 'accept', content };
}
