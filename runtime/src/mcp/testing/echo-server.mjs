#!/usr/bin/env node
// A minimal stdio MCP server for unit tests of the pool: one `echo` tool; prints one stderr line.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const server = new Server({ name: 'echo', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: 'echo',
      description: 'Echo.',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
    },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (req) => ({
  content: [{ type: 'text', text: `${process.pid}:${req.params.arguments?.text ?? ''}` }],
}));
await server.connect(new StdioServerTransport());
process.stderr.write('echo server ready\n');
