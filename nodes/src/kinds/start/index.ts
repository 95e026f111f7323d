import { Type } from '@sinclair/typebox';
import { defineKind } from '../../kind.js';
import { FLOW_OUT } from '../ports.js';
import { startBehavior } from './behavior.js';

export const StartConfig = Type.Object(
  {
    description: Type.Optional(
      Type.String({ description: 'What the run expects as input; shown to MCP clients.' }),
    ),
    inputSchema: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Schema of a structured input.' }),
    ),
  },
  { additionalProperties: false },
);

export const startKind = defineKind({
  kind: 'start',
  role: 'start',
  configSchema: StartConfig,
  defaults: () => ({}),
  ports: [FLOW_OUT],
  behavior: startBehavior,
  display: {
    label: 'Start',
    color: '#16a34a',
    icon: '▶',
    description: "Where a run's input enters.",
    category: 'flow',
  },
  summary: (c) => c.description ?? 'run input',
});
