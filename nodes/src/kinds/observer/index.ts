import { Type } from '@sinclair/typebox';
import { Condition } from '@switchboard/schemas/core';
import { defineKind } from '../../kind.js';
import { observerBehavior } from './behavior.js';

export const ObserverConfig = Type.Object(
  {
    type: Type.Union([Type.Literal('summarizer'), Type.Literal('guard'), Type.Literal('reflection')]),
    when: Type.Optional(
      Type.Union([Type.Literal('before'), Type.Literal('after'), Type.Literal('both')], {
        default: 'after',
        description:
          "before or after each turn of what it observes. A guard `after` checks the message the turn produced; `before` checks the turn before the model is called (mic, rate) against what the agent is about to read, and its 'retry' acts as 'block'; `both` (guards only) checks the speaker (mic, rate) before the model is called and the message (length, patterns, schema) after it.",
      }),
    ),
    // summarizer
    every: Type.Optional(
      Type.Integer({ minimum: 1, description: 'summarizer: summarize after this many new messages.' }),
    ),
    model: Type.Optional(Type.String({ description: 'summarizer: the model that writes summaries.' })),
    prompt: Type.Optional(Type.String()),
    // guard
    schema: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: 'guard: messages must be JSON matching it.',
      }),
    ),
    allow: Type.Optional(
      Type.Array(Type.String(), { description: 'guard: a message must match one of these patterns.' }),
    ),
    deny: Type.Optional(
      Type.Array(Type.String(), { description: 'guard: a message must match none of these patterns.' }),
    ),
    maxLength: Type.Optional(Type.Integer({ minimum: 1 })),
    ratePerMinute: Type.Optional(
      Type.Integer({ minimum: 1, description: 'guard: messages per agent per minute.' }),
    ),
    micGrant: Type.Optional(
      Type.Boolean({ description: 'guard: only the agent a decider granted the mic may speak.' }),
    ),
    onViolation: Type.Optional(
      Type.Union([Type.Literal('retry'), Type.Literal('block'), Type.Literal('escalate')], {
        default: 'retry',
      }),
    ),
    maxRetries: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
    escalateTo: Type.Optional(Type.String({ description: 'guard: the node that receives an escalation.' })),
    // reflection
    rule: Type.Optional(Condition),
    message: Type.Optional(
      Type.String({ description: "reflection: the reminder put in the agent's inbox." }),
    ),
  },
  { additionalProperties: false },
);

export const observerKind = defineKind({
  kind: 'observer',
  role: 'observer',
  configSchema: ObserverConfig,
  modelRefs: ['model'],
  nodeRefs: ['escalateTo'],
  defaults: () => ({ type: 'summarizer' as const, when: 'after' as const, every: 6 }),
  ports: [{ id: 'observe', type: 'source', side: 'bottom', accepts: ['observe'], label: 'observes' }],
  behavior: observerBehavior,
  display: {
    label: 'Observer',
    color: '#db2777',
    icon: '◉',
    description: 'Runs before or after turns: summarizer, guard or reflection.',
    category: 'control',
  },
  summary: (c) => `${c.type} · ${c.when ?? 'after'}`,
});
