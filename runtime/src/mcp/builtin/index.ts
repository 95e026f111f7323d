/** The registry of built-in MCP servers, by the name a flow uses in `{ "builtin": NAME }`. */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpHostError } from '../errors.js';
import type { BuiltinContext } from './context.js';
import { createDocumentsServer } from './documents.js';
import { createFilesystemServer } from './filesystem.js';
import { createHttpServer } from './http.js';
import { createShellServer } from './shell.js';
import { createStateServer } from './state.js';

export const BUILTIN_NAMES = ['documents', 'filesystem', 'shell', 'http', 'state'] as const;
export type BuiltinName = (typeof BUILTIN_NAMES)[number];

export interface BuiltinHostOptions {
  /** Absolute roots the operator lets `filesystem` use (a flow may only pick among them). */
  allowedRoots?: string[];
}

export function createBuiltinServer(
  name: string,
  ctx: BuiltinContext,
  host: BuiltinHostOptions = {},
): McpServer {
  switch (name) {
    case 'documents':
      return createDocumentsServer(ctx);
    case 'filesystem':
      return createFilesystemServer({ ...ctx, allowedRoots: host.allowedRoots ?? [] });
    case 'shell':
      return createShellServer(ctx);
    case 'http':
      return createHttpServer(ctx);
    case 'state':
      return createStateServer(ctx);
    default:
      throw new McpHostError(
        'mcp.bad-config',
        `unknown built-in server ${JSON.stringify(name)}; built-ins are ${BUILTIN_NAMES.join(', ')}`,
      );
  }
}

export type { BuiltinContext } from './context.js';
