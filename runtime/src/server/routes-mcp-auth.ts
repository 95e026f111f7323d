/**
 * The editor's "Connect" for MCP servers that need OAuth (issue 19): the login runs on the
 * server, into its store (`<data>/mcp-auth`), never in the flow or the browser.
 * - `POST /api/mcp-auth/connect {url}` → `{ authorizationUrl?, status }`: the page to open in a
 *   popup (none when the stored login or the operator's client credentials already work);
 * - `GET /api/mcp-auth/callback`: where the provider sends the browser back. It is public (the
 *   browser coming back from the provider does not carry the server's token): the single-use,
 *   expiring `state` that the login put in the authorization URL is what admits it;
 * - `GET /api/mcp-auth/status?url=` → `{ state: none | pending | connected | failed }`; with
 *   `none`, also `auth` (probe.ts): a login is stored, the server needs one, needs none, or unknown.
 */
import type { FastifyInstance } from 'fastify';
import { McpHostError } from '../mcp/errors.js';
import { PendingLogins } from '../mcp/oauth/connect.js';
import { probeAuthNeed } from '../mcp/oauth/probe.js';
import type { McpAuthStore } from '../mcp/oauth/store.js';
import { HttpError } from './errors.js';

const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const urlBody = {
  type: 'object',
  properties: { url: { type: 'string', minLength: 1, maxLength: 2000 } },
  required: ['url'],
  additionalProperties: false,
} as const;

export function registerMcpAuthRoutes(
  app: FastifyInstance,
  d: { store: McpAuthStore; fetch: typeof fetch },
): void {
  const logins = new PendingLogins({ store: d.store, fetch: d.fetch });
  const badUrl = (e: unknown): never => {
    if (e instanceof McpHostError && e.code === 'mcp.bad-config')
      throw new HttpError(400, 'bad-request', `url: ${e.message}`);
    throw e;
  };

  app.post<{ Body: { url: string } }>(
    '/api/mcp-auth/connect',
    {
      schema: {
        summary: "Log the server in to an MCP server that needs OAuth (the editor's Connect)",
        body: urlBody,
      },
    },
    async (req) => {
      // The Host header was checked by the gate: it names this server as the browser sees it.
      const callback = `${req.protocol}://${req.host}/api/mcp-auth/callback`;
      return logins.start(req.body.url, callback).catch(badUrl);
    },
  );

  app.get<{ Querystring: { url: string } }>(
    '/api/mcp-auth/status',
    { schema: { summary: 'Where a Connect login stands', querystring: urlBody } },
    async (req) => {
      let status: ReturnType<typeof logins.status>;
      try {
        status = logins.status(req.query.url);
      } catch (e) {
        return badUrl(e);
      }
      if (status.state !== 'none') return status;
      return { ...status, ...(await probeAuthNeed(req.query.url, d.store, d.fetch)) };
    },
  );

  app.get(
    '/api/mcp-auth/callback',
    { schema: { summary: "The OAuth provider's redirect back (public: admitted by its state)" } },
    async (req, reply) => {
      const q = req.url.indexOf('?');
      const r = logins.callback(new URLSearchParams(q >= 0 ? req.url.slice(q + 1) : ''));
      reply
        .code(r.ok ? 200 : 400)
        .header('content-type', 'text/html; charset=utf-8')
        .header('content-security-policy', "default-src 'none'; script-src 'unsafe-inline'")
        .header('cache-control', 'no-store');
      // The popup closes itself when it can; the editor polls the status.
      return `<!doctype html><meta charset="utf-8"><title>Switchboard</title><p>${esc(r.message)}</p>${r.ok ? '<script>window.close()</script>' : ''}`;
    },
  );
}
