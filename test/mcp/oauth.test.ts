/**
 * OAuth for remote MCP servers against a real local authorization server (the SDK's server auth
 * helpers, `fixtures/oauth-server.ts`) over real HTTP: a headless run without a login fails by
 * name and registers nothing; `switchboard mcp-login` (a real process) prints the authorization
 * URL, takes the callback on its loopback port and stores the tokens with mode 0600 under a
 * hashed name; a run then uses them, and refreshes them once the server stops taking them.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { operatorRefusal } from '../../runtime/src/engine/error-info.js';
import { McpConnection } from '../../runtime/src/mcp/connection.js';
import { McpHostError } from '../../runtime/src/mcp/errors.js';
import { StoredOAuthProvider } from '../../runtime/src/mcp/oauth/provider.js';
import { McpAuthStore, mcpAuthDir } from '../../runtime/src/mcp/oauth/store.js';
import { McpPool } from '../../runtime/src/mcp/pool.js';
import { TrustStore } from '../../runtime/src/mcp/trust.js';
import { createGuardedFetch } from '../../runtime/src/net/outbound.js';
import { createMcpToolHost } from '../../runtime/src/tools/mcp-host.js';
import { FIXTURES, never, REPO, runContext, tempDir, toolFlow } from '../fixtures/mcp/helpers.js';
import { type OAuthMcpServer, startOAuthMcpServer } from './fixtures/oauth-server.js';

/** The CLI from its TypeScript sources, workspace packages included (no build needed). */
const CLI_SRC = [
  '--conditions=source',
  '--import',
  join(REPO, 'node_modules/tsx/dist/loader.mjs'),
  join(FIXTURES, 'cli-entry.ts'),
];

let as: OAuthMcpServer;
let tmp: ReturnType<typeof tempDir>;
const conns: McpConnection[] = [];
const children: ChildProcess[] = [];
beforeEach(async () => {
  as = await startOAuthMcpServer();
  tmp = tempDir('sb-mcp-oauth-');
});
afterEach(async () => {
  for (const c of conns.splice(0)) await c.close();
  for (const ch of children.splice(0)) ch.kill('SIGKILL');
  await as.close();
  tmp.cleanup();
});

/** A flow's HTTP server entry as a headless run connects it: stored login, no browser. */
function headless(store: McpAuthStore): McpConnection {
  const c = new McpConnection({
    kind: 'http',
    key: 'k',
    label: 'remote',
    url: as.url,
    headers: {},
    fetch: createGuardedFetch({ allowLoopback: true }),
    auth: new StoredOAuthProvider({ serverUrl: as.url, store, label: 'remote' }),
  });
  conns.push(c);
  return c;
}

const call = (c: McpConnection) =>
  c.callTool('whoami', { greeting: 'hello' }, { signal: new AbortController().signal, timeoutMs: 10_000 });

/** `switchboard mcp-login URL --data DIR`, with a "browser" that follows the printed URL. */
async function login(dataDir: string): Promise<{ code: number | null; out: string; err: string }> {
  const ch = spawn(
    process.execPath,
    [...CLI_SRC, 'mcp-login', as.url, '--data', dataDir, '--port', '0', '--allow-outbound', 'loopback'],
    { env: { PATH: process.env.PATH ?? '', HOME: tmp.dir, SWITCHBOARD_HOME: join(tmp.dir, 'sbhome') } },
  );
  children.push(ch);
  let out = '';
  let err = '';
  let browsed = false;
  ch.stdout.on('data', (b: Buffer) => {
    out += b.toString();
  });
  ch.stderr.on('data', (b: Buffer) => {
    err += b.toString();
    const m = /^\s+(http:\/\/127\.0\.0\.1:\d+\/authorize\S+)$/m.exec(err);
    if (m && !browsed) {
      browsed = true;
      void (async () => {
        // The person opens the page; the authorization server sends the browser to the callback.
        const page = await fetch(m[1]!, { redirect: 'manual' });
        const back = page.headers.get('location')!;
        expect(new URL(back).hostname).toBe('127.0.0.1');
        const done = await fetch(back);
        expect(await done.text()).toContain('Authorized');
      })();
    }
  });
  const code = await new Promise<number | null>((r) => ch.on('close', r));
  return { code, out, err };
}

/** `switchboard mcp-login …` run to its end with no browser. */
async function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const ch = spawn(process.execPath, [...CLI_SRC, 'mcp-login', ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: tmp.dir, SWITCHBOARD_HOME: join(tmp.dir, 'sbhome') },
  });
  children.push(ch);
  let out = '';
  let err = '';
  ch.stdout.on('data', (b: Buffer) => {
    out += b.toString();
  });
  ch.stderr.on('data', (b: Buffer) => {
    err += b.toString();
  });
  const code = await new Promise<number | null>((r) => ch.on('close', r));
  return { code, out, err };
}

describe('OAuth for remote MCP servers', () => {
  it('mcp-login --private-key keeps the key (PKCS#8, its algorithm, mode 0600) for private_key_jwt and never prints it; a bad key is refused by name and nothing is stored', async () => {
    const data = join(tmp.dir, 'data');
    const keyFile = join(tmp.dir, 'client.pem');
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      .privateKey.export({ type: 'sec1', format: 'pem' })
      .toString();
    writeFileSync(keyFile, key, { mode: 0o600 });
    const base = [as.url, '--data', data, '--allow-outbound', 'loopback', '--client-id', 'svc'];

    const bad = join(tmp.dir, 'bad.pem');
    writeFileSync(bad, 'not a key');
    const refused = await cli([...base, '--client-credentials', '--private-key', bad]);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain(`--private-key ${bad}: not a PEM private key`);
    const wrongAlg = await cli([
      ...base,
      '--client-credentials',
      '--private-key',
      keyFile,
      '--signing-alg',
      'RS256',
    ]);
    expect(wrongAlg.err).toContain('this ec key signs with ES256, not RS256');
    expect((await cli([...base, '--private-key', keyFile, '--client-secret-env', 'X'])).err).toContain(
      'choose one',
    );
    expect(existsSync(mcpAuthDir(data)) && readdirSync(mcpAuthDir(data)).length > 0).toBe(false);

    // The fixture's authorization server takes no client_credentials: the login fails, the key stays.
    const r = await cli([...base, '--client-credentials', '--private-key', keyFile]);
    expect(r.out + r.err).not.toContain('PRIVATE KEY');
    const dir = mcpAuthDir(data);
    const [file] = readdirSync(dir);
    expect(statSync(join(dir, file!)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(join(dir, file!), 'utf8'));
    expect(stored).toMatchObject({ grant: 'client_credentials', client: { client_id: 'svc' } });
    expect(stored.signingKey.alg).toBe('ES256');
    expect(stored.signingKey.pem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const listed = await cli(['--list', '--data', data]);
    expect(listed.out).toContain('client_credentials (private_key_jwt)');
    expect(listed.out).not.toContain('PRIVATE KEY');
  }, 90_000);

  it('a headless run without a stored login fails by name, tells the operator what to run, registers nothing', async () => {
    const store = new McpAuthStore(mcpAuthDir(tmp.dir));
    const err = await headless(store)
      .listTools()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(McpHostError);
    expect((err as McpHostError).code).toBe('mcp.auth-required');
    expect((err as Error).message).toContain(`switchboard mcp-login ${as.url}`);
    expect(as.provider.clients.size).toBe(0);
  });

  it('mcp-login stores the tokens (0600, hashed name); runs use them and refresh them', async () => {
    const data = join(tmp.dir, 'data');
    const r = await login(data);
    expect(r.err).not.toContain('switchboard mcp-login:');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/logged in to .*: 1 tools/);
    // Registered once (dynamic registration), with the loopback callback as its redirect URI.
    expect(as.provider.clients.size).toBe(1);
    const [client] = [...as.provider.clients.values()];
    expect(client!.redirect_uris[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);

    const dir = mcpAuthDir(data);
    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^[0-9a-f]{64}\.json$/);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, files[0]!)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(join(dir, files[0]!), 'utf8'));
    expect(stored.serverUrl).toBe(as.url);
    const token = stored.tokens.access_token as string;
    // The token is the operator's: never printed.
    expect(r.out + r.err).not.toContain(token);
    expect(r.out + r.err).not.toContain(stored.tokens.refresh_token);

    // A headless run (no browser) with that store: the stored token is sent.
    const store = new McpAuthStore(dir);
    const conn = headless(store);
    const first = await call(conn);
    expect(first.content).toEqual([{ type: 'text', text: `hello, ${client!.client_id}` }]);
    expect(as.seen.at(-1)).toBe(token);

    // The server stops taking the token: the SDK refreshes it with the stored refresh token.
    as.expireAccessTokens();
    const again = await call(conn);
    expect(again.isError).toBeFalsy();
    expect(as.provider.refreshes).toBe(1);
    const refreshed = JSON.parse(readFileSync(join(dir, files[0]!), 'utf8'));
    expect(refreshed.tokens.access_token).not.toBe(token);
    expect(as.seen.at(-1)).toBe(refreshed.tokens.access_token);
    expect(statSync(join(dir, files[0]!)).mode & 0o777).toBe(0o600);
  }, 90_000);

  it('a login stored while a run is connected is picked up without a restart', async () => {
    const data = join(tmp.dir, 'data');
    const store = new McpAuthStore(mcpAuthDir(data));
    const conn = headless(store);
    await expect(conn.listTools()).rejects.toMatchObject({ code: 'mcp.auth-required' });
    expect((await login(data)).code).toBe(0);
    expect((await call(conn)).isError).toBeFalsy();
  }, 90_000);

  it('a flow naming the server: the run’s tool node fails by name (auth_required, not retried) until the operator logs in', async () => {
    const data = join(tmp.dir, 'data');
    const pool = new McpPool();
    try {
      const host = createMcpToolHost(toolFlow({ remote: { url: as.url } }), {
        pool,
        trust: new TrustStore(join(tmp.dir, 'trust.json')),
        outboundPolicy: { allowLoopback: true },
        mcpAuth: new McpAuthStore(mcpAuthDir(data)),
      });
      const err = await host.toolsFor('a1', runContext('r1').ctx).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as McpHostError).code).toBe('mcp.auth-required');
      const refusal = operatorRefusal(err);
      expect(refusal).toMatchObject({ code: 'auth_required', retryable: false });
      expect(refusal?.message).toContain('switchboard mcp-login');

      expect((await login(data)).code).toBe(0);
      const tools = await host.toolsFor('a1', runContext('r2').ctx);
      expect(tools.map((t) => t.name)).toEqual(['t_remote__whoami']);
      const r = await tools[0]!.call({ greeting: 'hi' }, { signal: never });
      expect(r).toMatchObject({ isError: false });
      expect(r.content).toMatch(/^hi, /);
    } finally {
      await pool.close();
    }
  }, 90_000);
});
