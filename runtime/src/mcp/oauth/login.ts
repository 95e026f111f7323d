/**
 * Logging the operator in to a remote MCP server: a loopback callback server on 127.0.0.1, the
 * authorization URL handed to `onUrl` (printed by the CLI, opened in a popup by the editor), the
 * code taken from the callback once its `state` matches, then the SDK's exchange (PKCE) — all by
 * connecting with Switchboard's own client, so a login proves the server answers `tools/list`.
 * With `client_credentials` configured, no person and no callback are involved.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpConnection } from '../connection.js';
import { McpHostError } from '../errors.js';
import { StoredOAuthProvider } from './provider.js';
import type { McpAuthStore } from './store.js';

export interface LoginOptions {
  serverUrl: string;
  store: McpAuthStore;
  /** The guarded fetch (the operator's outbound policy). */
  fetch: typeof fetch;
  /** Port of the loopback callback; 0 picks a free one. Default 33418. */
  port?: number;
  /** Receives the page the person must open. */
  onUrl: (authorizationUrl: URL) => void;
  /** How long to wait for the person. Default 5 minutes. */
  timeoutMs?: number;
}

const PAGE_OK = '<!doctype html><title>Switchboard</title><p>Authorized. You can close this window.</p>';
const PAGE_BAD = '<!doctype html><title>Switchboard</title><p>Authorization failed: see the terminal.</p>';

/** Logs in and returns the server's tool names; the tokens are in the store afterwards. */
export async function loginToServer(o: LoginOptions): Promise<{ tools: string[]; file: string }> {
  const grant = o.store.read(o.serverUrl)?.grant;
  let callback: Server | undefined;
  let waiting:
    | { resolve: (code: string) => void; reject: (e: Error) => void; state: string | null }
    | undefined;
  let redirectUrl: string | undefined;
  if (grant !== 'client_credentials') {
    callback = createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (u.pathname !== '/callback' || !waiting) {
        res.writeHead(404).end();
        return;
      }
      const w = waiting;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      if (u.searchParams.get('state') !== w.state) {
        res.end(PAGE_BAD);
        // A callback with another state is someone else's (or forged): keep waiting for ours.
        return;
      }
      const code = u.searchParams.get('code');
      res.end(code ? PAGE_OK : PAGE_BAD);
      waiting = undefined;
      if (code) w.resolve(code);
      else
        w.reject(
          new McpHostError(
            'mcp.auth-required',
            `the authorization server refused: ${(u.searchParams.get('error') ?? 'no code').slice(0, 100)} ${(u.searchParams.get('error_description') ?? '').slice(0, 300)}`,
          ),
        );
    });
    await new Promise<void>((resolve, reject) => {
      callback!.once('error', reject);
      callback!.listen(o.port ?? 33418, '127.0.0.1', () => resolve());
    });
    redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
  }
  const auth = new StoredOAuthProvider({
    serverUrl: o.serverUrl,
    store: o.store,
    label: 'mcp-login',
    ...(redirectUrl ? { redirectUrl } : {}),
    authorize: (authorizationUrl) =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new McpHostError('mcp.auth-required', 'no authorization arrived in time')),
          o.timeoutMs ?? 300_000,
        );
        waiting = {
          resolve: (c) => {
            clearTimeout(timer);
            resolve(c);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
          state: authorizationUrl.searchParams.get('state'),
        };
        o.onUrl(authorizationUrl);
      }),
  });
  const conn = new McpConnection({
    kind: 'http',
    key: 'mcp-login',
    label: 'mcp-login',
    url: o.serverUrl,
    headers: {},
    fetch: o.fetch,
    auth,
  });
  try {
    const tools = await conn.listTools();
    return { tools: tools.map((t) => t.name), file: o.store.fileOf(o.serverUrl) };
  } finally {
    await conn.close();
    if (callback) {
      const c = callback;
      await new Promise<void>((r) => {
        c.close(() => r());
        c.closeAllConnections();
      });
    }
  }
}
