import { Type } from '@sinclair/typebox';
import { defineKind } from '../../kind.js';

export const ToolConfig = Type.Object(
  {
    server: Type.String({ description: "An entry of the flow's mcpServers." }),
    include: Type.Optional(
      Type.Array(Type.String(), { description: 'Only these tools (names or * patterns).' }),
    ),
    exclude: Type.Optional(Type.Array(Type.String(), { description: 'Never these tools.' })),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1, description: 'Per call. Default 30000.' })),
  },
  { additionalProperties: false },
);

export const toolKind = defineKind({
  kind: 'tool',
  role: 'tool',
  configSchema: ToolConfig,
  serverRefs: ['server'],
  defaults: () => ({ server: '' }),
  ports: [{ id: 'grant', type: 'source', side: 'bottom', accepts: ['tools'], label: 'grant' }],
  display: {
    label: 'Tool',
    color: '#7c3aed',
    icon: '⚒',
    description: 'An MCP server whose tools agents may use through tools edges.',
    category: 'tools',
  },
  summary: (c) => c.server + (c.include ? ` (${c.include.length} tools)` : ''),
});
