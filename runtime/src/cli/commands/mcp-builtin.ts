/**
 * `switchboard mcp-builtin NAME`: serves one built-in MCP server (documents, filesystem, shell,
 * http, state) over stdio, so other MCP clients can use it. The operator starts it, so the shell
 * built-in needs no further consent here; it still needs `--options '{"enabled":true,…}'`.
 */
import type { Command } from 'commander';
import { type CliContext, EXIT } from '../context.js';

export function registerMcpBuiltin(program: Command, ctx: CliContext): void {
  program
    .command('mcp-builtin')
    .description('Serve a built-in MCP server over stdio: documents, filesystem, shell, http or state.')
    .argument('<name>', 'built-in server name')
    .option('--data-dir <dir>', 'the directory its files live under (default: the current directory)')
    .option('--options <json>', "the server's options, as in a flow's mcpServers entry", '{}')
    .option('--allow-root <dir...>', 'absolute roots the filesystem server may use')
    .option('--allow-loopback', 'let the http server reach loopback addresses')
    .option('--allow-private', 'let the http server reach private addresses')
    .action(
      async (
        name: string,
        opts: {
          dataDir?: string;
          options: string;
          allowRoot?: string[];
          allowLoopback?: boolean;
          allowPrivate?: boolean;
        },
      ) => {
        const { BUILTIN_NAMES, createBuiltinServer } = await import('../../mcp/builtin/index.js');
        const { memoryState } = await import('../../mcp/builtin/state.js');
        const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
        const { resolve } = await import('node:path');
        if (!(BUILTIN_NAMES as readonly string[]).includes(name)) {
          ctx.err(`switchboard mcp-builtin: unknown server ${name}; one of ${BUILTIN_NAMES.join(', ')}\n`);
          ctx.setExit(EXIT.usage);
          return;
        }
        let options: Record<string, unknown>;
        try {
          const parsed = JSON.parse(opts.options) as unknown;
          if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
            throw new Error('not an object');
          options = parsed as Record<string, unknown>;
        } catch (e) {
          ctx.err(`switchboard mcp-builtin: --options must be a JSON object (${(e as Error).message})\n`);
          ctx.setExit(EXIT.usage);
          return;
        }
        let server: ReturnType<typeof createBuiltinServer>;
        try {
          server = createBuiltinServer(
            name,
            {
              dataDir: resolve(opts.dataDir ?? process.cwd()),
              options,
              state: memoryState(),
              outboundPolicy: {
                allowLoopback: opts.allowLoopback === true,
                allowPrivate: opts.allowPrivate === true,
              },
            },
            { allowedRoots: (opts.allowRoot ?? []).map((r) => resolve(r)) },
          );
        } catch (e) {
          ctx.err(`switchboard mcp-builtin: ${(e as Error).message}\n`);
          ctx.setExit(EXIT.failed);
          return;
        }
        const transport = new StdioServerTransport();
        const closed = new Promise<void>((res) => {
          transport.onclose = () => res();
          process.stdin.once('end', () => res());
        });
        await server.connect(transport);
        ctx.err(`switchboard mcp-builtin: ${name} serving on stdio\n`);
        await closed;
        await server.close().catch(() => {});
      },
    );
}
