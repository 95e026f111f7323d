/**
 * Logins that a server starts for its editor ("Connect" on a server node that needs
 * authorization): `start` returns the provider's authorization page for a popup, the server's
 * own callback route hands the redirect's query to `callback`, and the tokens land in the
 * server's store (`<data>/mcp-auth`), never in the flow or the browser. A callback is matched to
 * its login by the `state` the SDK put in the authorization URL (random, single use, expiring),
 * so the callback route can be reachable without the server token — the browser coming back
 * from the provider does not carry it. `status` tells the editor when to stop waiting.
 */
import { McpConnection } from '../connection.js';
import { errorText, McpHostError } from '../errors.js';
import { StoredOAuthProvider } from './provider.js';
import { canonicalServerUrl, type McpAuthStore } from './store.js';

export type LoginStatus =
  | { state: 'none' }
  | { state: 'pending' }
  | { state: 'connected'; tools: number }
  | { state: 'failed'; message: string };

interface Waiting {
  serverUrl: string;
  resolve: (code: string) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export interface PendingLoginsOptions {
  store: McpAuthStore;
  /** The guarded fetch (the server's outbound policy). */
  fetch: typeof fetch;
  /** The server's callback route, e.g. `https://switchboard.example/api/mcp-auth/callback` (or per start). */
  redirectUrl?: string;
  /** How long a person has to finish on the provider's page. Default 10 minutes. */
  ttlMs?: number;
}

export class PendingLogins {
  private readonly byState = new Map<string, Waiting>();
  private readonly statusOf = new Map<string, LoginStatus>();
  constructor(private readonly o: PendingLoginsOptions) {}

  /**
   * Starts (or restarts) the login to `serverUrl`. Resolves with the page to open, or with no
   * page when the stored login (refreshed if need be) or the operator's client credentials
   * were enough.
   */
  async start(
    serverUrl: string,
    redirectUrl: string | undefined = this.o.redirectUrl,
  ): Promise<{ authorizationUrl?: string; status: LoginStatus }> {
    const url = canonicalServerUrl(serverUrl);
    if (!redirectUrl) throw new McpHostError('mcp.bad-config', 'a Connect login needs the callback URL');
    for (const [state, w] of this.byState)
      if (w.serverUrl === url) {
        clearTimeout(w.timer);
        this.byState.delete(state);
        w.reject(new McpHostError('mcp.auth-required', 'replaced by a newer login'));
      }
    this.statusOf.set(url, { state: 'pending' });
    let announce!: (u: URL) => void;
    const page = new Promise<URL>((r) => {
      announce = r;
    });
    const auth = new StoredOAuthProvider({
      serverUrl: url,
      store: this.o.store,
      label: 'connect',
      redirectUrl,
      authorize: (authorizationUrl) =>
        new Promise<string>((resolve, reject) => {
          const state = authorizationUrl.searchParams.get('state');
          if (!state)
            return reject(new McpHostError('mcp.auth-required', 'the authorization URL carries no state'));
          const timer = setTimeout(() => {
            this.byState.delete(state);
            reject(new McpHostError('mcp.auth-required', 'nobody finished the authorization in time'));
          }, this.o.ttlMs ?? 600_000);
          timer.unref();
          this.byState.set(state, { serverUrl: url, resolve, reject, timer });
          announce(authorizationUrl);
        }),
    });
    const conn = new McpConnection({
      kind: 'http',
      key: `connect:${url}`,
      label: 'connect',
      url,
      headers: {},
      fetch: this.o.fetch,
      auth,
    });
    const done = conn
      .listTools()
      .then(
        (tools) => this.statusOf.set(url, { state: 'connected', tools: tools.length }),
        (e: unknown) => this.statusOf.set(url, { state: 'failed', message: errorText(e).slice(0, 500) }),
      )
      .finally(() => conn.close());
    const first = await Promise.race([page, done.then(() => undefined)]);
    const status = this.status(url);
    return first ? { authorizationUrl: first.href, status } : { status };
  }

  /** The callback route's query. Refuses unknown or used states; never says which tokens came. */
  callback(query: URLSearchParams): { ok: boolean; message: string } {
    const state = query.get('state') ?? '';
    const w = this.byState.get(state);
    if (!w)
      return { ok: false, message: 'no login is waiting for this callback (unknown, used or expired state)' };
    this.byState.delete(state);
    clearTimeout(w.timer);
    const code = query.get('code');
    if (!code) {
      const why = `${query.get('error') ?? 'no code'} ${query.get('error_description') ?? ''}`
        .trim()
        .slice(0, 300);
      w.reject(new McpHostError('mcp.auth-required', `the authorization server refused: ${why}`));
      return { ok: false, message: `authorization refused: ${why}` };
    }
    w.resolve(code);
    return { ok: true, message: 'authorized; you can close this window' };
  }

  status(serverUrl: string): LoginStatus {
    return this.statusOf.get(canonicalServerUrl(serverUrl)) ?? { state: 'none' };
  }
}
