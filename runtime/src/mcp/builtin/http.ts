/**
 * The `http` built-in: GET and POST to hosts on the flow's allow-list (`options.allowHosts`:
 * exact names or `*.suffix`; `["*"]` for any public host). Requests go through the one outbound
 * module, with the operator's policy deciding whether loopback or private addresses are allowed
 * — a flow can narrow where requests go, never widen it.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { outboundFetch } from '../../net/outbound.js';
import { hostAllowed } from '../../net/policy.js';
import { type BuiltinContext, optNumber, SERVER_VERSION } from './context.js';

export function createHttpServer(ctx: BuiltinContext): McpServer {
  const server = new McpServer({ name: 'switchboard-http', version: SERVER_VERSION });
  const allowHosts = Array.isArray(ctx.options.allowHosts)
    ? ctx.options.allowHosts.filter((h): h is string => typeof h === 'string')
    : [];
  const maxBytes = optNumber(ctx.options, 'maxResponseBytes', 256 * 1024);
  const timeoutMs = optNumber(ctx.options, 'timeoutMs', 20_000);
  const operator = ctx.outboundPolicy ?? {};

  async function request(
    method: 'GET' | 'POST',
    url: string,
    headers: Record<string, string> | undefined,
    body: string | undefined,
    signal: AbortSignal,
  ) {
    let host: string;
    try {
      host = new URL(url).hostname;
    } catch {
      throw new Error(`not a valid URL: ${url}`);
    }
    const anyHost = allowHosts.includes('*');
    if (!anyHost && !hostAllowed(host, allowHosts))
      throw new Error(`host ${host} is not on this tool's allow-list (${allowHosts.join(', ') || 'empty'})`);
    if (operator.allowHosts && !hostAllowed(host, operator.allowHosts))
      throw new Error(`host ${host} is not allowed by the operator's policy`);
    const res = await outboundFetch(url, {
      method,
      headers: headers ?? {},
      ...(body !== undefined ? { body } : {}),
      signal,
      policy: { ...operator, ...(anyHost ? {} : { allowHosts }) },
      timeoutMs,
      maxResponseBytes: maxBytes,
      maxRedirects: 3,
      ...(ctx.secrets ? { secrets: ctx.secrets } : {}),
    });
    const buf = Buffer.from(await res.arrayBuffer());
    const textBody = buf.toString('utf8');
    return {
      content: [{ type: 'text' as const, text: `HTTP ${res.status} ${res.statusText}\n\n${textBody}` }],
      isError: res.status >= 400,
      structuredContent: { status: res.status, contentType: res.headers.get('content-type') ?? '' },
    };
  }

  const headers = z.record(z.string(), z.string()).optional();
  server.registerTool(
    'http_get',
    {
      description: `GET a URL on an allowed host (${allowHosts.join(', ') || 'none'}); the body is capped at ${maxBytes} bytes.`,
      inputSchema: { url: z.string().max(4000), headers },
    },
    async ({ url, headers: h }, extra) => request('GET', url, h, undefined, extra.signal),
  );
  server.registerTool(
    'http_post',
    {
      description: `POST a body to a URL on an allowed host (${allowHosts.join(', ') || 'none'}).`,
      inputSchema: {
        url: z.string().max(4000),
        body: z.string().max(1024 * 1024),
        content_type: z.string().max(200).optional(),
        headers,
      },
    },
    async ({ url, body, content_type, headers: h }, extra) =>
      request('POST', url, { 'content-type': content_type ?? 'application/json', ...h }, body, extra.signal),
  );
  return server;
}
