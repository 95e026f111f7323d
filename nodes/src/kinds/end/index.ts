import { Type } from '@sinclair/typebox';
import { defineKind } from '../../kind.js';
import { FLOW_IN } from '../ports.js';
import { endBehavior } from './behavior.js';

export const EndConfig = Type.Object(
  {
    output: Type.Optional(
      Type.Union([Type.Literal('last'), Type.Literal('state'), Type.Literal('template')], {
        description: 'The answer: the last message, the JSON state, or a template.',
        default: 'last',
      }),
    ),
    template: Type.Optional(
      Type.String({ description: 'Used when output is "template"; may use {{last}} and {{state.x}}.' }),
    ),
  },
  { additionalProperties: false },
);

export const endKind = defineKind({
  kind: 'end',
  role: 'end',
  configSchema: EndConfig,
  defaults: () => ({ output: 'last' as const }),
  ports: [FLOW_IN],
  behavior: endBehavior,
  display: {
    label: 'End',
    color: '#dc2626',
    icon: '■',
    description: "Where a run's final answer leaves.",
    category: 'flow',
  },
  summary: (c) => `output: ${c.output ?? 'last'}`,
});
