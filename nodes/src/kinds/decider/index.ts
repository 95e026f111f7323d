import { Type } from '@sinclair/typebox';
import { Condition } from '@switchboard/schemas/core';
import { defineKind } from '../../kind.js';
import { FLOW_IN, FLOW_OUT } from '../ports.js';
import { deciderBehavior } from './behavior.js';

export const DeciderRule = Type.Object(
  {
    when: Condition,
    to: Type.Union([Type.String(), Type.Array(Type.String())], {
      description: 'Outgoing edge id(s), or "done".',
    }),
    reason: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const DeciderConfig = Type.Object(
  {
    strategy: Type.Union([Type.Literal('llm'), Type.Literal('rules'), Type.Literal('roundRobin')], {
      default: 'rules',
    }),
    model: Type.Optional(Type.String({ description: 'The arbiter model for strategy "llm".' })),
    prompt: Type.Optional(Type.String({ description: 'Instructions for the arbiter.' })),
    rules: Type.Optional(Type.Array(DeciderRule, { description: 'Ordered; the first that holds wins.' })),
    default: Type.Optional(Type.String({ description: 'Edge id taken when no rule holds, or "done".' })),
    allowMultiple: Type.Optional(
      Type.Boolean({ description: 'The arbiter may pick several edges, run in parallel.' }),
    ),
    allowDone: Type.Optional(Type.Boolean({ description: 'The arbiter may answer "done" to end its team.' })),
    grantMic: Type.Optional(
      Type.Boolean({ description: 'The chosen agent receives the mic (see guard observers).' }),
    ),
    maxRetries: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 10, description: 'Re-asks after an invalid choice. Default 2.' }),
    ),
  },
  { additionalProperties: false },
);

export const deciderKind = defineKind({
  kind: 'decider',
  role: 'decider',
  configSchema: DeciderConfig,
  modelRefs: ['model'],
  defaults: () => ({ strategy: 'rules' as const, rules: [] }),
  ports: [FLOW_IN, FLOW_OUT],
  behavior: deciderBehavior,
  display: {
    label: 'Decider',
    color: '#ea580c',
    icon: '◇',
    description: 'Picks the next node among its outgoing edges.',
    category: 'control',
  },
  summary: (c) => c.strategy + (c.rules?.length ? ` · ${c.rules.length} rules` : ''),
});
