/**
 * The server side of the editor's "Connect" (`PendingLogins`) against the real local
 * authorization server: start gives the provider's page, the browser's return (the callback's
 * query) completes the login into the server's store; a forged or replayed state is refused.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PendingLogins } from '../../runtime/src/mcp/oauth/connect.js';
import { probeAuthNeed } from '../../runtime/src/mcp/oauth/probe.js';
import { McpAuthStore, mcpAuthDir } from '../../runtime/src/mcp/oauth/store.js';
import { createGuardedFetch } from '../../runtime/src/net/outbound.js';
import { tempDir } from '../fixtures/mcp/helpers.js';
import { testServer } from '../server/helpers.js';
import { type OAuthMcpServer, startOAuthMcpServer } from './fixtures/oauth-server.js';

const CALLBACK = 'http://127.0.0.1:5170/api/mcp-auth/callback';
let as: OAuthMcpServer;
let tmp: ReturnType<typeof tempDir>;
beforeEach(async () => {
  as = await startOAuthMcpServer();
  tmp = tempDir('sb-mcp-connect-');
});
afterEach(async () => {
  await as.close();
  tmp.cleanup();
});

async function until(f: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 25));
}

describe('Connect: a login the server runs for its editor', () => {
  it('page → callback → tokens in the server’s store; forged and replayed states refused', async () => {
    const store = new McpAuthStore(mcpAuthDir(tmp.dir));
    const logins = new PendingLogins({
      store,
      fetch: createGuardedFetch({ allowLoopback: true }),
      redirectUrl: CALLBACK,
    });
    const started = await logins.start(as.url);
    expect(started.status).toEqual({ state: 'pending' });
    const page = new URL(started.authorizationUrl!);
    expect(page.searchParams.get('code_challenge_method')).toBe('S256');
    expect(page.searchParams.get('redirect_uri')).toBe(CALLBACK);

    // The popup: the provider approves and sends the browser back to the server's callback.
    const res = await fetch(page, { redirect: 'manual' });
    const back = new URL(res.headers.get('location')!);
    expect(back.origin + back.pathname).toBe(CALLBACK);

    const forged = new URLSearchParams(back.search);
    forged.set('state', 'guessed');
    expect(logins.callback(forged).ok).toBe(false);
    expect(logins.callback(back.searchParams)).toEqual({
      ok: true,
      message: expect.stringContaining('authorized'),
    });
    expect(logins.callback(back.searchParams).ok).toBe(false); // used once

    await until(() => logins.status(as.url).state !== 'pending');
    expect(logins.status(as.url)).toEqual({ state: 'connected', tools: 1 });
    const [file] = readdirSync(mcpAuthDir(tmp.dir));
    expect(statSync(join(mcpAuthDir(tmp.dir), file!)).mode & 0o777).toBe(0o600);
    expect(store.read(as.url)?.tokens?.access_token).toBe(as.seen.at(-1));

    // Connected already: a second Connect needs no page.
    const again = await logins.start(as.url);
    expect(again.authorizationUrl).toBeUndefined();
    expect(again.status).toEqual({ state: 'connected', tools: 1 });
  });

  it('a refusal on the provider’s page ends the login by name', async () => {
    const store = new McpAuthStore(mcpAuthDir(tmp.dir));
    const logins = new PendingLogins({
      store,
      fetch: createGuardedFetch({ allowLoopback: true }),
      redirectUrl: CALLBACK,
    });
    const started = await logins.start(as.url);
    const state = new URL(started.authorizationUrl!).searchParams.get('state')!;
    const r = logins.callback(new URLSearchParams({ state, error: 'access_denied' }));
    expect(r).toEqual({ ok: false, message: 'authorization refused: access_denied' });
    await until(() => logins.status(as.url).state !== 'pending');
    expect(logins.status(as.url)).toMatchObject({
      state: 'failed',
      message: expect.stringContaining('access_denied'),
    });
  });

  it('over the server’s routes: connect needs the token, the callback is admitted by its state alone, tokens land in the data dir', async () => {
    const TOKEN = 'k3Jx9_vQ2mZr8Lw4Tn6Yb1Hc5Fd7Gs0Pa2Ue4Io6';
    const s = await testServer({ port: 0, token: TOKEN, allowOutbound: ['loopback'] });
    try {
      const { port } = await s.listen();
      const base = `http://127.0.0.1:${port}`;
      const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      const denied = await fetch(`${base}/api/mcp-auth/connect`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: as.url }),
      });
      expect(denied.status).toBe(401);
      const bad = await fetch(`${base}/api/mcp-auth/connect`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ url: 'file:///etc/passwd' }),
      });
      expect(bad.status).toBe(400);
      expect(await bad.text()).toContain('url:');

      const statusUrl = `${base}/api/mcp-auth/status?url=${encodeURIComponent(as.url)}`;
      const getStatus = async () =>
        (await (await fetch(statusUrl, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as {
          state: string;
        };
      // Before any Connect, the status asks the MCP server whether it turns away a caller.
      expect(await getStatus()).toEqual({ state: 'none', auth: 'required' });
      const unauth = await fetch(statusUrl);
      expect(unauth.status).toBe(401);
      const r = await fetch(`${base}/api/mcp-auth/connect`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ url: as.url }),
      });
      expect(r.status).toBe(200);
      const { authorizationUrl } = (await r.json()) as { authorizationUrl: string };
      expect(new URL(authorizationUrl).searchParams.get('redirect_uri')).toBe(
        `${base}/api/mcp-auth/callback`,
      );

      // The popup: the provider sends the browser back to the server, without the server token.
      const page = await fetch(authorizationUrl, { redirect: 'manual' });
      const back = page.headers.get('location')!;
      const forged = new URL(back);
      forged.searchParams.set('state', 'x<script>');
      const refused = await fetch(forged);
      expect(refused.status).toBe(400);
      expect(await refused.text()).not.toContain('<script>alert');
      const done = await fetch(back);
      expect(done.status).toBe(200);
      expect(await done.text()).toContain('authorized');

      let status: { state: string } = { state: 'pending' };
      for (let i = 0; i < 200 && status.state === 'pending'; i++) {
        await new Promise((res) => setTimeout(res, 25));
        status = await getStatus();
      }
      expect(status).toEqual({ state: 'connected', tools: 1 });
      expect(JSON.stringify(status)).not.toContain(as.seen.at(-1)!);
      const files = readdirSync(mcpAuthDir(s.dir));
      expect(files).toHaveLength(1);
      expect(statSync(join(mcpAuthDir(s.dir), files[0]!)).mode & 0o777).toBe(0o600);
    } finally {
      await s.close();
    }
  }, 60_000);

  it('the status probe: a stored login, a server that needs one, one that needs none, a refused destination', async () => {
    const store = new McpAuthStore(mcpAuthDir(tmp.dir));
    const loopback = createGuardedFetch({ allowLoopback: true });
    expect(await probeAuthNeed(as.url, store, loopback)).toEqual({ auth: 'required' });
    // The authorization server's metadata answers without a login: a server that needs none.
    const open = new URL('/.well-known/oauth-authorization-server', as.url).href;
    expect(await probeAuthNeed(open, store, loopback)).toEqual({ auth: 'open' });
    const refused = await probeAuthNeed(as.url, store, createGuardedFetch({}));
    expect(refused).toMatchObject({ auth: 'unknown', message: expect.stringContaining('loopback') });
    store.write(as.url, { tokens: { access_token: 'stored-one', token_type: 'bearer' } });
    const before = as.seen.length;
    expect(await probeAuthNeed(as.url, store, loopback)).toEqual({ auth: 'stored' });
    expect(as.seen.length).toBe(before); // the stored token is never sent by the probe
  });
});
