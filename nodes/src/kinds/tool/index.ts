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
    sampling: Type.Optional(
      Type.Object(
        {
          maxTokens: Type.Optional(
            Type.Integer({ minimum: 1, maximum: 100_000, description: 'Per answer. Default 1024.' }),
          ),
          maxRequests: Type.Optional(
            Type.Integer({ minimum: 1, maximum: 100, description: 'Per tool call. Default 3.' }),
          ),
        },
        {
          additionalProperties: false,
          description:
            "Lets this server ask the calling agent's model during a tool call (MCP sampling). Off when absent.",
        },
      ),
    ),
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
