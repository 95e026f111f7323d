import { Type } from '@sinclair/typebox';
import { defineKind } from '../../kind.js';
import { FLOW_IN, FLOW_OUT } from '../ports.js';
import { humanBehavior } from './behavior.js';

export const HumanConfig = Type.Object(
  {
    mode: Type.Union([Type.Literal('ask'), Type.Literal('approve')], {
      description:
        '"ask" waits for an answer; "approve" gates: outgoing handovers marked approve/reject route the answer.',
      default: 'ask',
    }),
    question: Type.String({
      description: 'Shown to the person; may use {{last}}, {{task}} and {{state.x}}.',
    }),
    options: Type.Optional(Type.Array(Type.String(), { description: 'Suggested answers.' })),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);

export const humanKind = defineKind({
  kind: 'human',
  role: 'human',
  configSchema: HumanConfig,
  defaults: () => ({ mode: 'ask' as const, question: 'What should happen next?' }),
  ports: [FLOW_IN, FLOW_OUT],
  behavior: humanBehavior,
  display: {
    label: 'Human',
    color: '#0891b2',
    icon: '☺',
    description: 'A person in the loop: answers a question or approves.',
    category: 'actors',
  },
  summary: (c) => c.question,
});
