/**
 * "Connect" for an OAuth-protected MCP server, in Debian's Chromium against the real server in
 * token mode (issue 19): a flow whose HTTP MCP server needs authorization fails its run with
 * `auth_required` and the run panel points to Connect; flow settings show "needs sign-in";
 * Connect opens the provider's page in a popup, the provider sends it back to the server's
 * callback, the chip turns "connected", the login is in the server's data dir (mode 0600), and
 * the next run calls the tool with it. No token is in the flow or on the page.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpAuthDir } from '../../runtime/src/mcp/oauth/store.js';
import { shutdownMcpPool } from '../../runtime/src/mcp/pool.js';
import type { SwitchboardServer } from '../../runtime/src/server/index.js';
import { type OAuthMcpServer, startOAuthMcpServer } from '../mcp/fixtures/oauth-server.js';
import { DIST, launch, openFlowSettings, requireBuild, skipWelcome, WAIT, watchErrors } from './harness.js';

const TOKEN = 'Zq8w_Lm3Pn6Rt9Vx2Yb5Cd8Fg1Hj4Kl7Mo0Qs3Tu6';

function flowFor(mcpUrl: string, server = 'oauth'): Flow {
  return {
    version: 1,
    id: 'oauth-connect',
    name: 'A tool behind a sign-in',
    models: {
      default: {
        provider: 'scripted',
        script: [
          { node: 'a1', toolCalls: [{ name: 't_o__whoami', args: { greeting: 'hello' } }] },
          { fallback: true, text: 'done' },
        ],
      },
    },
    mcpServers: { [server]: { url: mcpUrl } },
    nodes: [
      { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
      { id: 't_o', kind: 'tool', position: { x: 260, y: 200 }, config: { server } },
      {
        id: 'a1',
        kind: 'agent',
        position: { x: 260, y: 0 },
        config: { role: 'worker', model: 'default', prompt: [{ text: 'x' }] },
      },
      { id: 'end', kind: 'end', position: { x: 520, y: 0 }, config: {} },
    ],
    edges: [
      { id: 'e1', kind: 'handover', source: 'start', target: 'a1' },
      { id: 'g1', kind: 'tools', source: 't_o', target: 'a1' },
      { id: 'e2', kind: 'handover', source: 'a1', target: 'end' },
    ],
  };
}

let as: OAuthMcpServer;
let server: SwitchboardServer;
let base = '';
let dir = '';
let browser: Browser;
const auth = { authorization: `Bearer ${TOKEN}` };

beforeAll(async () => {
  requireBuild();
  as = await startOAuthMcpServer();
  dir = mkdtempSync(join(tmpdir(), 'sb-e2e-connect-'));
  const { createServer } = await import('../../runtime/src/server/index.js');
  server = await createServer({
    dataDir: dir,
    host: '127.0.0.1',
    port: 0,
    editorDir: DIST,
    token: TOKEN,
    allowOutbound: ['loopback'],
  });
  base = (await server.listen()).url.replace(/\/$/, '');
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await shutdownMcpPool();
  await as?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function runEvents(page: Page): Promise<Array<{ type: string; result?: string }>> {
  const runId = (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;
  const r = await fetch(`${base}/api/runs/${runId}/events`, { headers: auth });
  return ((await r.json()) as { events: Array<{ type: string; result?: string }> }).events;
}

/** Every token the provider issued: none may show up in the flow or on the page. */
const issued = () => [...as.provider.access.keys(), ...as.provider.refresh.keys()];

describe('Connect an OAuth MCP server from the editor', { timeout: 180_000 }, () => {
  it('needs sign-in → Connect in a popup → connected; the run then calls the tool', async () => {
    const flow = flowFor(as.url);
    const put = await fetch(`${base}/api/flows/${flow.id}`, {
      method: 'PUT',
      headers: { ...auth, origin: base, 'content-type': 'application/json' },
      body: JSON.stringify(flow),
    });
    expect(put.status).toBeLessThan(300);

    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    await skipWelcome(context);
    const requested: string[] = [];
    context.on('request', (r) => requested.push(r.url()));
    const page = await context.newPage();
    const errors = watchErrors(page);
    await page.goto(`${base}/?flow=${flow.id}&token=${TOKEN}`);
    await page.getByTestId('node-start').waitFor(WAIT);

    // Without a login the run fails by name, and the panel says where to connect the server.
    await page.getByTestId('btn-run').click();
    await page.locator('[data-testid="run-panel"][data-phase="failed"]').waitFor(WAIT);
    expect(await page.getByTestId('run-error').textContent()).toContain('auth_required');
    const hint = await page.getByTestId('run-auth-hint').textContent();
    expect(hint).toContain('"oauth"');
    expect(hint).toContain('Connect it in Flow settings');

    await openFlowSettings(page);
    const chip = page.getByTestId('server-oauth-auth-chip');
    await page.locator('[data-testid="server-oauth-auth-chip"][data-state="needs-sign-in"]').waitFor(WAIT);
    expect(await chip.textContent()).toBe('needs sign-in');

    // Connect: the popup goes to the provider, which approves and sends it to the callback;
    // the callback page closes itself.
    const popupOpened = page.waitForEvent('popup');
    await page.getByTestId('server-oauth-connect').click();
    const popup = await popupOpened;
    await page.locator('[data-testid="server-oauth-auth-chip"][data-state="connected"]').waitFor(WAIT);
    expect(await chip.textContent()).toBe('connected');
    const authorize = requested.find((u) => u.startsWith(new URL('/authorize', as.url).href));
    expect(authorize, requested.join('\n')).toBeDefined();
    expect(new URL(authorize!).searchParams.get('redirect_uri')).toBe(`${base}/api/mcp-auth/callback`);
    expect(requested.some((u) => u.startsWith(`${base}/api/mcp-auth/callback?`))).toBe(true);
    await expect.poll(() => popup.isClosed(), WAIT).toBe(true);
    expect(await page.getByTestId('server-oauth-connect').count()).toBe(0);

    // The login is on the server, per operator: its data dir, mode 0600; the status says so.
    const status = await fetch(`${base}/api/mcp-auth/status?url=${encodeURIComponent(as.url)}`, {
      headers: auth,
    });
    expect(await status.json()).toEqual({ state: 'connected', tools: 1 });
    const files = readdirSync(mcpAuthDir(dir));
    expect(files).toHaveLength(1);
    expect(statSync(join(mcpAuthDir(dir), files[0]!)).mode & 0o777).toBe(0o600);

    // The run now calls the tool with the stored login.
    await page.getByTestId('btn-run').click();
    await page.locator('[data-testid="run-panel"][data-phase="completed"]').waitFor(WAIT);
    const result = (await runEvents(page)).find((e) => e.type === 'tool.result');
    expect(result?.result).toContain('hello, ');
    expect(as.seen.length).toBeGreaterThan(0);

    // Nothing token-like in the flow (as stored, and as the editor holds it) or on the page.
    const stored = await (await fetch(`${base}/api/flows/${flow.id}`, { headers: auth })).text();
    const html = await page.content();
    expect(issued().length).toBeGreaterThan(0);
    for (const t of issued()) {
      expect(stored).not.toContain(t);
      expect(html).not.toContain(t);
    }
    expect(errors).toEqual([]);
    await context.close();
  });

  it('a blocked popup leaves a link to click; a server that cannot be reached says why', async () => {
    const second = await startOAuthMcpServer();
    const gone = createNetServer();
    await new Promise<void>((r) => gone.listen(0, '127.0.0.1', () => r()));
    const deadUrl = `http://127.0.0.1:${(gone.address() as AddressInfo).port}/mcp`;
    await new Promise<void>((r) => gone.close(() => r()));
    try {
      const flow: Flow = {
        ...flowFor(second.url, 'second'),
        id: 'oauth-blocked',
        mcpServers: { second: { url: second.url }, dead: { url: deadUrl } },
      };
      const put = await fetch(`${base}/api/flows/${flow.id}`, {
        method: 'PUT',
        headers: { ...auth, origin: base, 'content-type': 'application/json' },
        body: JSON.stringify(flow),
      });
      expect(put.status).toBeLessThan(300);
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      await skipWelcome(context);
      // A popup blocker: window.open gives nothing.
      await context.addInitScript(() => {
        window.open = () => null;
      });
      const page = await context.newPage();
      const errors = watchErrors(page);
      await page.goto(`${base}/?flow=${flow.id}&token=${TOKEN}`);
      await page.getByTestId('node-start').waitFor(WAIT);
      await openFlowSettings(page);

      await page.locator('[data-testid="server-second-auth-chip"][data-state="needs-sign-in"]').waitFor(WAIT);
      await page.getByTestId('server-second-connect').click();
      const link = page.getByTestId('server-second-connect-link');
      await link.waitFor(WAIT);
      expect(await link.getAttribute('href')).toContain(new URL('/authorize', second.url).href);
      const tab = context.waitForEvent('page');
      await link.click();
      // The provider approves, the callback page closes its tab.
      const opened = await tab;
      await expect.poll(() => opened.isClosed(), WAIT).toBe(true);
      await page.locator('[data-testid="server-second-auth-chip"][data-state="connected"]').waitFor(WAIT);
      expect(await link.count()).toBe(0);

      // Nobody answers at the dead server: the chip cannot tell, and Connect says why.
      const dead = page.locator('[data-testid="server-dead-auth-chip"][data-state="unknown"]');
      await dead.waitFor(WAIT);
      expect(await dead.getAttribute('title')).toContain('Could not ask the MCP server');
      await page.getByTestId('server-dead-connect').click();
      const why = page.getByTestId('server-dead-connect-error');
      await why.waitFor(WAIT);
      expect(await why.textContent()).toMatch(/^Sign-in failed: .+/);
      expect(await why.textContent()).toContain('ECONNREFUSED');
      expect(await dead.getAttribute('title')).toContain('Could not ask the MCP server');
      expect(errors).toEqual([]);
      await context.close();
    } finally {
      await second.close();
    }
  });
});
