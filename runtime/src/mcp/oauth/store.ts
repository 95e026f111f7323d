/**
 * The operator's OAuth credentials for remote MCP servers: one file per server in
 * `<dir>` (mode 0700), named by the SHA-256 of the server's canonical URL — the URL is hostile
 * data, so it never becomes a path component or an object key — written atomically with mode
 * 0600. A flow never holds any of it: flows name servers, the operator's store holds the keys.
 */
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { writeFileAtomicSync } from '../../store/atomic.js';
import { McpHostError } from '../errors.js';

/** What the operator stored for one server. */
export interface StoredServerAuth {
  /** The canonical URL this entry belongs to (checked on read: a file copied elsewhere is refused). */
  serverUrl: string;
  /** `client_credentials`: the operator's machine-to-machine client; otherwise a person logs in. */
  grant?: 'authorization_code' | 'client_credentials';
  /** Pre-registered or dynamically registered client (with its secret, if any). */
  client?: OAuthClientInformationMixed;
  /** The operator configured the client: an invalid_client error does not erase it. */
  preRegistered?: boolean;
  /**
   * `private_key_jwt`: the client authenticates to the token endpoint with assertions signed by
   * this key (signing-key.ts) instead of a secret.
   */
  signingKey?: { pem: string; alg: string };
  /** Scope the operator asks for with `client_credentials`. */
  scope?: string;
  tokens?: OAuthTokens;
  /** When the tokens were saved (ms since epoch): with `expires_in`, when they run out. */
  tokensSavedAt?: number;
  codeVerifier?: string;
  discovery?: OAuthDiscoveryState;
}

/** The canonical form of a server URL: parsed, without credentials or fragment. */
export function canonicalServerUrl(raw: string): string {
  if (!URL.canParse(raw))
    throw new McpHostError('mcp.bad-config', `not a valid server URL: ${raw.slice(0, 200)}`);
  const u = new URL(raw);
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw new McpHostError('mcp.bad-config', `an MCP server URL must be http(s): ${u.protocol}`);
  if (u.username || u.password)
    throw new McpHostError('mcp.bad-config', 'an MCP server URL must not carry credentials');
  u.hash = '';
  return u.href;
}

export class McpAuthStore {
  readonly dir: string;
  constructor(dir: string) {
    this.dir = dir;
  }

  /** File name of a server's entry: a hash, never the URL itself. */
  fileOf(serverUrl: string): string {
    const key = createHash('sha256').update(canonicalServerUrl(serverUrl)).digest('hex');
    return join(this.dir, `${key}.json`);
  }

  /** When the entry's file last changed (0 when there is none): a cheap "did someone log in?". */
  stamp(serverUrl: string): number {
    try {
      return statSync(this.fileOf(serverUrl)).mtimeMs;
    } catch {
      return 0;
    }
  }

  read(serverUrl: string): StoredServerAuth | undefined {
    const url = canonicalServerUrl(serverUrl);
    let text: string;
    try {
      text = readFileSync(this.fileOf(url), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new McpHostError(
        'mcp.bad-config',
        `${this.fileOf(url)}: not JSON; log in again (switchboard mcp-login)`,
      );
    }
    if (!parsed || typeof parsed !== 'object' || (parsed as StoredServerAuth).serverUrl !== url)
      return undefined;
    return parsed as StoredServerAuth;
  }

  write(serverUrl: string, entry: Omit<StoredServerAuth, 'serverUrl'>): void {
    const url = canonicalServerUrl(serverUrl);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    chmodSync(this.dir, 0o700);
    writeFileAtomicSync(this.fileOf(url), `${JSON.stringify({ ...entry, serverUrl: url }, null, 2)}\n`);
  }

  /** Changes an entry (creating it): `fn` gets a copy and returns the new one. */
  update(
    serverUrl: string,
    fn: (e: Omit<StoredServerAuth, 'serverUrl'>) => Omit<StoredServerAuth, 'serverUrl'>,
  ): void {
    const { serverUrl: _u, ...rest } = this.read(serverUrl) ?? { serverUrl: '' };
    this.write(serverUrl, fn(rest));
  }

  remove(serverUrl: string): boolean {
    try {
      unlinkSync(this.fileOf(serverUrl));
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw e;
    }
  }

  /** The servers with an entry, for `mcp-login --list` (never the secrets). */
  list(): { serverUrl: string; grant: string; hasTokens: boolean; expiresAt?: number }[] {
    let names: string[];
    try {
      names = readdirSync(this.dir).filter((n) => /^[0-9a-f]{64}\.json$/.test(n));
    } catch {
      return [];
    }
    const out: { serverUrl: string; grant: string; hasTokens: boolean; expiresAt?: number }[] = [];
    for (const n of names) {
      try {
        const e = JSON.parse(readFileSync(join(this.dir, n), 'utf8')) as StoredServerAuth;
        if (typeof e.serverUrl !== 'string') continue;
        const exp =
          e.tokens?.expires_in !== undefined && e.tokensSavedAt !== undefined
            ? e.tokensSavedAt + e.tokens.expires_in * 1000
            : undefined;
        out.push({
          serverUrl: e.serverUrl,
          grant: `${e.grant ?? 'authorization_code'}${e.signingKey ? ' (private_key_jwt)' : ''}`,
          hasTokens: !!e.tokens?.access_token,
          ...(exp !== undefined ? { expiresAt: exp } : {}),
        });
      } catch {
        // An unreadable entry is skipped in the listing; reading it for a run names the file.
      }
    }
    return out;
  }
}

/** `<data>/mcp-auth`: a server's logins live in its data directory. */
export function mcpAuthDir(base: string): string {
  return join(base, 'mcp-auth');
}

/** The operator's own store: `$SWITCHBOARD_HOME/mcp-auth`, else `~/.switchboard/mcp-auth`. */
export function defaultMcpAuthStore(env: Record<string, string | undefined> = process.env): McpAuthStore {
  return new McpAuthStore(mcpAuthDir(env.SWITCHBOARD_HOME || join(homedir(), '.switchboard')));
}
