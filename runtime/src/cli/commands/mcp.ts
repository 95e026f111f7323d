/**
 * `switchboard mcp FLOW [--http PORT] [--trust NAME]…`: serves one flow as an MCP server — over
 * stdio (stdout carries the protocol; messages go to stderr), or over streamable HTTP on
 * 127.0.0.1 with DNS-rebinding protection. Stdin is the protocol, so nobody can be asked for
 * consent: commands the flow needs must already be approved (`switchboard trust FLOW`) or named
 * with --trust.
 */
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { type CliContext, EXIT } from '../context.js';
import { addOperatorFlags, type OperatorFlags, operatorPolicyOf } from '../operator-flags.js';
import { readValidFlow } from '../read-flow.js';

interface McpCliOptions extends OperatorFlags {
  http?: string;
  trust?: string[];
}

export function registerMcp(program: Command, ctx: CliContext): void {
  const collect = (v: string, prev: string[] = []) => [...prev, v];
  const cmd = program
    .command('mcp')
    .description('Serve a flow as an MCP server with one tool (stdio, or --http PORT on 127.0.0.1).')
    .argument('<flow>', 'flow JSON file')
    .option('--http <port>', 'serve streamable HTTP on 127.0.0.1:PORT instead of stdio (0 picks a free port)')
    .option(
      '--trust <name>',
      'approve a stdio command by its mcpServers key, agent id or fingerprint',
      collect,
    );
  addOperatorFlags(cmd).action(async (file: string, opts: McpCliOptions) => {
    const flow = await readValidFlow('mcp', file, ctx);
    if (!flow) return;
    let port: number | undefined;
    if (opts.http !== undefined) {
      port = Number(opts.http);
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        ctx.err(`switchboard mcp: --http needs a port number, got ${opts.http}\n`);
        ctx.setExit(EXIT.usage);
        return;
      }
    }
    const { ensureConsent } = await import('../../mcp/consent.js');
    const consent = await ensureConsent(flow, {
      interactive: false,
      trustArgs: opts.trust ?? [],
      flowFile: file,
    });
    if (!consent.ok) {
      ctx.err(`${consent.message}\n`);
      ctx.setExit(EXIT.usage);
      return;
    }
    let policy: Awaited<ReturnType<typeof operatorPolicyOf>>;
    try {
      policy = await operatorPolicyOf(opts);
    } catch (e) {
      ctx.err(`switchboard mcp: ${(e as Error).message}\n`);
      ctx.setExit(EXIT.usage);
      return;
    }
    const { createMcpToolHost } = await import('../../tools/mcp-host.js');
    const { shutdownMcpPool } = await import('../../mcp/pool.js');
    const { runFlow } = await import('../../engine/index.js');
    const { createFlowMcpServer, serveFlowHttp, flowToolInfo } = await import('../../mcp/flow-server.js');
    const baseDir = dirname(resolve(file));
    const host = createMcpToolHost(flow, {
      baseDir,
      flowRef: file,
      outboundPolicy: policy.outbound,
      secrets: policy.secrets,
    });
    const serverOptions = {
      runFlow,
      runOptions: () => ({
        baseDir,
        tools: host,
        outbound: policy.outbound,
        secrets: policy.secrets,
      }),
      afterRun: (runId: string) => host.release(runId),
      onRunEnd: (r: { runId: string; status: string; error?: { message: string } }) =>
        ctx.err(`switchboard mcp: run ${r.runId} ${r.status}${r.error ? `: ${r.error.message}` : ''}\n`),
    };
    const info = flowToolInfo(flow);
    if (port === undefined) {
      const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
      const transport = new StdioServerTransport();
      const closed = new Promise<void>((res) => {
        transport.onclose = () => res();
        process.stdin.once('end', () => res());
      });
      const server = createFlowMcpServer(flow, serverOptions);
      await server.connect(transport);
      ctx.err(`switchboard mcp: serving ${file} as tool "${info.name}" on stdio\n`);
      await closed;
      await server.close().catch(() => {});
    } else {
      const served = await serveFlowHttp(flow, serverOptions, port);
      ctx.err(`switchboard mcp: serving ${file} as tool "${info.name}" at ${served.url}\n`);
      await new Promise<void>((res) => {
        process.once('SIGINT', res);
        process.once('SIGTERM', res);
      });
      await served.close();
    }
    await shutdownMcpPool();
  });
}
