/**
 * A minimal MCP server over streamable HTTP (JSON responses), written by hand so that it can
 * expose tools with any name — `__proto__` included, which the SDK's own server cannot hold
 * (it keeps tools in a plain object). Answers initialize, tools/list, tools/call and ping.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface NamedToolsServer {
  url: string;
  /** Tool names called so far, in order. */
  calls: string[];
  close(): Promise<void>;
}

export async function startNamedToolsServer(names: readonly string[]): Promise<NamedToolsServer> {
  const calls: string[] = [];
  const answer = (msg: { id?: unknown; method?: string; params?: Record<string, unknown> }) => {
    switch (msg.method) {
      case 'initialize':
        return {
          protocolVersion: msg.params?.protocolVersion ?? '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'named-tools', version: '1.0.0' },
        };
      case 'tools/list':
        return {
          tools: names.map((name) => ({
            name,
            description: `Echoes, under the name ${name}.`,
            inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
          })),
        };
      case 'tools/call': {
        const name = String(msg.params?.name);
        calls.push(name);
        return { content: [{ type: 'text', text: `called ${name}` }] };
      }
      default:
        return {};
    }
  };
  const server = http.createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(req.method === 'DELETE' ? 200 : 405).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
      const list = (Array.isArray(body) ? body : [body]) as Array<{ id?: unknown; method?: string }>;
      const out = list
        .filter((m) => m.id !== undefined)
        .map((m) => ({ jsonrpc: '2.0', id: m.id, result: answer(m) }));
      if (out.length === 0) {
        res.writeHead(202).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(Array.isArray(body) ? out : out[0]));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
