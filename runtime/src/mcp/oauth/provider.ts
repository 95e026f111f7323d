/**
 * The SDK's `OAuthClientProvider` backed by the operator's store (`./store.ts`). The SDK does the
 * protocol — protected-resource and authorization-server discovery from `WWW-Authenticate`,
 * dynamic registration, PKCE, scopes and step-up, refresh; this class only keeps its state on
 * disk and decides what "send the user to the authorization page" means here:
 * - with an `authorize` function (the `mcp-login` CLI, the editor's Connect, the conformance
 *   harness) the page is opened and the code that comes back is held for `finishAuth`;
 * - without one (a headless run) it is a named error telling the operator how to log in, and no
 *   client is registered on the way.
 * `client_credentials` (operator-configured, never the flow) needs no person at all; its client
 * authenticates with a secret or, with a stored signing key, with `private_key_jwt` assertions.
 */
import { randomBytes } from 'node:crypto';
import type {
  AddClientAuthentication,
  OAuthClientProvider,
  OAuthDiscoveryState,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { createPrivateKeyJwtAuth } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { McpHostError } from '../errors.js';
import { canonicalServerUrl, type McpAuthStore, type StoredServerAuth } from './store.js';

/** Opens the authorization page and resolves with the code of the callback (state checked). */
export type Authorizer = (authorizationUrl: URL) => Promise<string>;

/** The loopback callback `mcp-login` listens on unless told otherwise. */
export const DEFAULT_REDIRECT_URL = 'http://127.0.0.1:33418/callback';

export interface StoredOAuthProviderOptions {
  serverUrl: string;
  store: McpAuthStore;
  /** Name for messages (the flow's server name). */
  label?: string;
  redirectUrl?: string;
  authorize?: Authorizer;
  clientName?: string;
  /** An https URL of a client metadata document (SEP-991), used when the server supports it. */
  clientMetadataUrl?: string;
}

export class StoredOAuthProvider implements OAuthClientProvider {
  private readonly url: string;
  private readonly o: StoredOAuthProviderOptions;
  private pendingCode: string | undefined;
  private expectedState: string | undefined;
  private cache: StoredServerAuth | undefined;
  readonly clientMetadataUrl: string | undefined;

  constructor(o: StoredOAuthProviderOptions) {
    this.o = o;
    this.url = canonicalServerUrl(o.serverUrl);
    this.clientMetadataUrl = o.clientMetadataUrl;
  }

  private cacheStamp = -1;

  /** The stored entry, read again when its file changed (a login made by the CLI or the editor). */
  private entry(): StoredServerAuth {
    const stamp = this.o.store.stamp(this.url);
    if (!this.cache || stamp !== this.cacheStamp) {
      this.cache = this.o.store.read(this.url) ?? { serverUrl: this.url };
      this.cacheStamp = stamp;
    }
    return this.cache;
  }

  private change(fn: (e: StoredServerAuth) => void): void {
    const e = { ...this.entry() };
    fn(e);
    const { serverUrl: _u, ...rest } = e;
    this.o.store.write(this.url, rest);
    this.cache = e;
    this.cacheStamp = this.o.store.stamp(this.url);
  }

  private get clientCredentials(): boolean {
    return this.entry().grant === 'client_credentials';
  }

  get redirectUrl(): string | undefined {
    if (this.clientCredentials) return undefined;
    if (this.o.redirectUrl) return this.o.redirectUrl;
    // Headless: nobody is sent anywhere, but the SDK wants the URL the client was registered with.
    const c = this.entry().client;
    const registered =
      c && 'redirect_uris' in c && Array.isArray(c.redirect_uris) ? c.redirect_uris[0] : undefined;
    return typeof registered === 'string' ? registered : DEFAULT_REDIRECT_URL;
  }

  get clientMetadata(): OAuthClientMetadata {
    const redirect = this.redirectUrl;
    return {
      client_name: this.o.clientName ?? 'Switchboard',
      redirect_uris: redirect ? [redirect] : [],
      grant_types: this.clientCredentials ? ['client_credentials'] : ['authorization_code', 'refresh_token'],
      response_types: this.clientCredentials ? [] : ['code'],
      ...(this.entry().signingKey ? { token_endpoint_auth_method: 'private_key_jwt' } : {}),
    };
  }

  private signer: { pem: string; alg: string; clientId: string; fn: AddClientAuthentication } | undefined;

  /**
   * With a stored signing key, every token request carries a fresh assertion signed by it (the
   * SDK asks for this property at each request, so a key changed on disk is used next time).
   */
  get addClientAuthentication(): AddClientAuthentication | undefined {
    const key = this.entry().signingKey;
    const clientId = this.entry().client?.client_id;
    if (!key || !clientId) return undefined;
    let s = this.signer;
    if (s?.pem !== key.pem || s.alg !== key.alg || s.clientId !== clientId) {
      s = {
        ...key,
        clientId,
        fn: createPrivateKeyJwtAuth({
          issuer: clientId,
          subject: clientId,
          privateKey: key.pem,
          alg: key.alg,
        }),
      };
      this.signer = s;
    }
    return s.fn;
  }

  state(): string {
    this.expectedState = randomBytes(16).toString('base64url');
    return this.expectedState;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const e = this.entry();
    const c = e.client;
    // A login whose callback differs from the one a client was registered for (another port)
    // cannot receive that client's code: it registers again. Headless runs use what is stored.
    const redirect = this.o.authorize ? this.redirectUrl : undefined;
    if (c && !e.preRegistered && redirect && 'redirect_uris' in c && Array.isArray(c.redirect_uris))
      if (!c.redirect_uris.includes(redirect)) return undefined;
    if (!c && !this.o.authorize && !this.clientCredentials) throw this.loginNeeded();
    return c;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.change((e) => {
      e.client = info;
    });
  }

  tokens(): OAuthTokens | undefined {
    return this.entry().tokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.change((e) => {
      e.tokens = tokens;
      e.tokensSavedAt = Date.now();
      delete e.codeVerifier;
    });
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    if (!this.o.authorize) throw this.loginNeeded();
    const code = await this.o.authorize(authorizationUrl);
    this.pendingCode = code;
  }

  /** The code the last authorization brought back, once (for `transport.finishAuth`). */
  takeAuthorizationCode(): string | undefined {
    const c = this.pendingCode;
    this.pendingCode = undefined;
    return c;
  }

  /** Whether a callback's `state` is the one this provider sent (a forged callback is refused). */
  stateMatches(state: string | null | undefined): boolean {
    return this.expectedState !== undefined && state === this.expectedState;
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.change((e) => {
      e.codeVerifier = codeVerifier;
    });
  }

  codeVerifier(): string {
    const v = this.entry().codeVerifier;
    if (!v)
      throw new McpHostError('mcp.auth-required', `${this.name}: no login in progress (no PKCE verifier)`);
    return v;
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    this.change((e) => {
      if ((scope === 'all' || scope === 'client') && !e.preRegistered) delete e.client;
      if (scope === 'all' || scope === 'tokens') {
        delete e.tokens;
        delete e.tokensSavedAt;
      }
      if (scope === 'all' || scope === 'verifier') delete e.codeVerifier;
      if (scope === 'all' || scope === 'discovery') delete e.discovery;
    });
  }

  prepareTokenRequest(): URLSearchParams | undefined {
    if (!this.clientCredentials) return undefined;
    const p = new URLSearchParams({ grant_type: 'client_credentials' });
    const scope = this.entry().scope;
    if (scope) p.set('scope', scope);
    return p;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.change((e) => {
      e.discovery = state;
    });
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.entry().discovery;
  }

  private get name(): string {
    return this.o.label ?? new URL(this.url).host;
  }

  private loginNeeded(): McpHostError {
    return new McpHostError(
      'mcp.auth-required',
      `${this.name}: the MCP server at ${this.url} needs authorization and no usable login is stored; the operator logs in with: switchboard mcp-login ${this.url}`,
    );
  }
}
