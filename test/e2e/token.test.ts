/**
 * The editor against a server in token mode, in Debian's Chromium: `switchboard serve` (the
 * real CLI, with SWITCHBOARD_TOKEN, so the token is required even on 127.0.0.1) prints the
 * editor's address with `?token=` once; opening it loads the editor, which keeps the token,
 * strips it from the address bar and uses it for REST, the run-event feed and the Yjs room: an
 * example flow runs and its events arrive. Opened without the token, the editor asks for it
 * with a form instead of showing a broken page; an open editor whose server restarts with a new
 * token stops retrying and asks for it, and the co-edit it made was saved across the restart.
 * The build served without the token holds no source map of server code.
 *
 * Waits are on conditions, never fixed sleeps.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artifact, launch, openFlowSettings, requireBuild, skipWelcome, watchErrors } from './harness.js';

const CLI = fileURLToPath(new URL('../crash/cli-main.ts', import.meta.url));
const RUNTIME = fileURLToPath(new URL('../../runtime/', import.meta.url));
const TOKEN = randomBytes(32).toString('hex');
const WAIT = { timeout: 60_000 };

let browser: Browser;
let child: ChildProcess;
let dataDir: string;
let output = '';
/** What `switchboard serve` printed as the editor's address, and its origin. */
let address = '';
let origin = '';
const contexts: BrowserContext[] = [];

/** Starts `switchboard serve` with `token` on `port` over the test's data directory. */
async function serve(token: string, port: number): Promise<void> {
  output = '';
  child = spawn(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', CLI, 'serve', '--port', String(port), '--data', dataDir],
    {
      cwd: RUNTIME,
      env: { ...process.env, SWITCHBOARD_TOKEN: token, SWITCHBOARD_DURABILITY: 'os' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout!.on('data', (d) => {
    output += d;
  });
  child.stderr!.on('data', (d) => {
    output += d;
  });
  address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${output}`)), 90_000);
    child.stdout!.on('data', () => {
      const m = /open the editor at (http:\/\/\S+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (c) => reject(new Error(`serve exited ${c}:\n${output}`)));
  });
  origin = new URL(address).origin;
}

/** Stops the server as an operator does (SIGTERM: rooms are saved on the way out). */
async function stopServe(): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

beforeAll(async () => {
  requireBuild();
  dataDir = mkdtempSync(join(tmpdir(), 'sb-e2e-token-'));
  await serve(TOKEN, 0);
  browser = await launch();
}, 120_000);

afterAll(async () => {
  for (const c of contexts.splice(0)) await c.close().catch(() => {});
  await browser?.close();
  await stopServe();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A person with a browser of their own (own storage), optionally with a token kept from before. */
async function person(kept?: string): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  await skipWelcome(context);
  contexts.push(context);
  if (kept) await context.addInitScript((t) => window.localStorage.setItem('switchboard:token', t), kept);
  const page = await context.newPage();
  return { page, errors: watchErrors(page) };
}

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: artifact(name) }).catch(() => {});
}

/** Console noise a refused request leaves in Chromium (the page handles the refusal itself). */
const unexpected = (errors: string[]) =>
  errors.filter((e) => !/status of 40[13]|status of 429|WebSocket/i.test(e));

describe('the editor in token mode', { timeout: 240_000 }, () => {
  it('prints the address with the token once; the address opens the editor, which strips the token and runs a flow with its events', async () => {
    expect(address).toBe(`${origin}/?token=${TOKEN}`);
    expect(output).toContain('API clients send Authorization: Bearer $SWITCHBOARD_TOKEN');
    // Without the token the API refuses; the build is served.
    expect((await fetch(`${origin}/api/flows`)).status).toBe(401);
    const index = await fetch(`${origin}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('referrer-policy')).toBe('no-referrer');

    const { page, errors } = await person();
    await page.goto(address);
    await page.getByTestId('node-start').waitFor(WAIT);
    // The token left the address bar (and the history entry) at once, and is kept.
    expect(page.url()).not.toContain('token');
    expect(page.url()).not.toContain(TOKEN);
    expect(await page.evaluate(() => window.localStorage.getItem('switchboard:token'))).toBe(TOKEN);

    // The Yjs room (a WebSocket with the token as subprotocol) goes live.
    await page.getByTestId('btn-templates').click();
    await page.getByTestId('template-support-triage').click();
    // (A new flow from the template: created over REST with the token, then its room.)
    const presence = page.locator(
      '[data-testid="presence"][data-room^="support-triage-"][data-status="live"]',
    );
    await presence.waitFor(WAIT);
    // The shared link names the flow, never the token.
    expect(new URL(page.url()).search).toBe(`?flow=${await presence.getAttribute('data-room')}`);

    // REST starts the run; its events arrive over /api/ws (the same token) and light the canvas.
    await page.getByTestId('run-pace').selectOption('0');
    await page.getByTestId('btn-run').click();
    await page.locator('[data-testid="run-panel"][data-phase="waiting"]').waitFor(WAIT);
    expect(await page.getByTestId('node-approval').getAttribute('data-run-status')).toBe('waiting');
    await page.getByTestId('answer-option-yes').click();
    await page.locator('[data-testid="run-panel"][data-phase="completed"]').waitFor(WAIT);
    const events = Number(await page.getByTestId('run-panel').getAttribute('data-events'));
    expect(events).toBeGreaterThan(10);
    expect(await page.getByTestId('node-end').getAttribute('data-run-status')).toBe('completed');
    await shoot(page, 'token-run-completed.png');

    // Reloading the shared link needs no token in the address: it was kept.
    await page.goto(`${origin}/?flow=support-triage`);
    await page
      .locator('[data-testid="presence"][data-room="support-triage"][data-status="live"]')
      .waitFor(WAIT);
    expect(unexpected(errors)).toEqual([]);

    // The token was printed once and never logged, though the page asked for `/?token=…`.
    expect(output.split(TOKEN).length - 1).toBe(1);
    expect(output).toContain('token=[redacted]');
  });

  it('without the token the editor asks for it; a wrong one is refused; the printed address is accepted', async () => {
    const { page, errors } = await person();
    await page.goto(`${origin}/?flow=support-triage`);
    const prompt = page.getByTestId('token-prompt');
    await prompt.waitFor(WAIT);
    expect(await prompt.getAttribute('data-reason')).toBe('missing');
    expect(await page.getByTestId('token-reason').textContent()).toContain('needs its access token');
    // Not a half-loaded editor behind it.
    expect(await page.getByTestId('editor').count()).toBe(0);
    await shoot(page, 'token-prompt.png');

    await page.getByTestId('token-input').fill('not-the-token-0123456789abcdef');
    await page.getByTestId('token-submit').click();
    await page.getByTestId('token-error').waitFor(WAIT);
    expect(await page.getByTestId('token-error').textContent()).toContain('did not accept');
    expect(await page.evaluate(() => window.localStorage.getItem('switchboard:token'))).toBeNull();

    // Pasting the whole address the server printed works; the flow in the address is kept.
    await page.getByTestId('token-input').fill(address);
    await page.getByTestId('token-submit').click();
    await page
      .locator('[data-testid="presence"][data-room="support-triage"][data-status="live"]')
      .waitFor(WAIT);
    expect(page.url()).not.toContain('token');
    expect(unexpected(errors)).toEqual([]);
  });

  it('a token kept from an earlier server is reported as refused, not as missing', async () => {
    const { page } = await person(randomBytes(32).toString('hex'));
    await page.goto(`${origin}/`);
    await page.getByTestId('token-prompt').waitFor(WAIT);
    expect(await page.getByTestId('token-prompt').getAttribute('data-reason')).toBe('refused');
  });

  it('the build served without the token carries no source map of server code', async () => {
    const html = await (await fetch(`${origin}/`)).text();
    const scripts = [...html.matchAll(/src="(\/assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    for (const js of scripts) {
      const map = await fetch(`${origin}${js}.map`);
      if (map.status !== 200) continue;
      const sources = ((await map.json()) as { sources: string[] }).sources;
      expect(sources.length).toBeGreaterThan(0);
      // Our own sources in the map are the browser packages only (libraries come from node_modules).
      const ours = sources
        .map((s) => posix.normalize(posix.join('editor/dist/assets', s)))
        .filter((s) => !s.includes('node_modules/'));
      expect(ours.length).toBeGreaterThan(0);
      expect(ours.filter((s) => !/^(editor|schemas|nodes)\/src\//.test(s))).toEqual([]);
    }
    // Nothing from the server's own folders is reachable by path.
    for (const p of [
      '/runtime/src/server/security.ts',
      '/runtime/dist/server/security.js.map',
      '/.switchboard/catalog.json',
    ]) {
      const r = await fetch(`${origin}${p}`);
      expect(await r.text()).toBe(html);
    }
  });
  it('the server restarts with a new token: the open editor stops retrying and asks for it; the co-edit was kept', async () => {
    const { page, errors } = await person();
    await page.goto(address);
    await page.getByTestId('node-start').waitFor(WAIT);
    await page.getByTestId('btn-templates').click();
    await page.getByTestId('template-support-triage').click();
    const presence = page.locator(
      '[data-testid="presence"][data-room^="support-triage-"][data-status="live"]',
    );
    await presence.waitFor(WAIT);
    const room = (await presence.getAttribute('data-room'))!;
    await openFlowSettings(page);
    await page.getByTestId('flow-name').fill('Kept across restarts');
    await page.locator('[data-testid="save-state"][data-room-save="saved"]').waitFor(WAIT);

    const port = Number(new URL(address).port);
    await stopServe();
    const next = randomBytes(32).toString('hex');
    await serve(next, port);
    expect(address).toBe(`${origin}/?token=${next}`);
    // Its sockets are refused now: the editor notices, stops, and asks (instead of retrying on).
    const prompt = page.getByTestId('token-prompt');
    await prompt.waitFor(WAIT);
    expect(await prompt.getAttribute('data-reason')).toBe('refused');
    await page.getByTestId('token-input').fill(next);
    await page.getByTestId('token-submit').click();
    await page.locator(`[data-testid="presence"][data-room="${room}"][data-status="live"]`).waitFor(WAIT);
    await expect.poll(() => page.getByTestId('flow-title').textContent(), WAIT).toBe('Kept across restarts');
    // Never locked out on the way: the new server answered no request with 429.
    expect(output).toContain('"statusCode":401');
    expect(output).not.toContain('"statusCode":429');
    // (While the server was down, the checks found nobody there: refused, or reset when one was
    // in flight as the old process stopped.)
    const downErrors = /ERR_CONNECTION_(REFUSED|RESET)/;
    expect(unexpected(errors).filter((e) => !downErrors.test(e))).toEqual([]);
  });
});
