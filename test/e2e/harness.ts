/**
 * Browser test harness: serves the production build of the editor (editor/dist) from a tiny
 * static server or from the real Switchboard server on 127.0.0.1, and drives Debian's Chromium
 * through playwright-core.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  chromium,
  type Page,
} from 'playwright-core';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { serveStatic } from '../../editor/bench/static.js';
import type { SwitchboardServer } from '../../runtime/src/server/index.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const DIST = join(ROOT, 'editor', 'dist');
export const ARTIFACTS = join(ROOT, 'test', 'artifacts');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Fails with the command to run when the editor has not been built. */
export function requireBuild(): void {
  if (!existsSync(join(DIST, 'index.html')))
    throw new Error(
      `The editor's production build is missing (${DIST}). Build it first: pnpm --filter @switchboard/editor build (pnpm test does this)`,
    );
}

export { serveStatic };

export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `Chromium is missing at ${CHROMIUM}; run: node scripts/ensure-services.mjs (as root it installs Debian's package)`,
    );
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** Collects page errors so that a test can fail on any uncaught exception in the editor. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    // A failed request's message does not name the resource: its location does.
    if (m.type() === 'error') errors.push(m.location().url ? `${m.text()} [${m.location().url}]` : m.text());
  });
  return errors;
}

export function artifact(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return join(ARTIFACTS, name);
}

/** Centre of an element on the page. */
export async function centre(page: Page, selector: string): Promise<{ x: number; y: number }> {
  const box = await page.locator(selector).first().boundingBox();
  if (!box) throw new Error(`${selector} is not visible`);
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

/** Drags with the mouse in steps, as a person does (React Flow needs intermediate moves). */
export async function mouseDrag(
  page: Page,
  from: { x: number; y: number },
  to: { x: number; y: number },
  steps = 12,
) {
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  await page.mouse.move(from.x + 3, from.y + 3, { steps: 2 });
  await page.mouse.move(to.x, to.y, { steps });
  await page.mouse.up();
}

/**
 * `switchboard serve` as the README starts it, on 127.0.0.1 and a free port, over a fresh data
 * directory, serving the editor's production build. `close` stops it and removes the data.
 */
export async function startServer(): Promise<{
  server: SwitchboardServer;
  url: string;
  dir: string;
  close(): Promise<void>;
}> {
  requireBuild();
  // Loaded here: the static-only tests need none of the server.
  const { createServer } = await import('../../runtime/src/server/index.js');
  const dir = mkdtempSync(join(tmpdir(), 'sb-e2e-'));
  const server = await createServer({ dataDir: dir, host: '127.0.0.1', port: 0, editorDir: DIST });
  const { url } = await server.listen();
  return {
    server,
    url,
    dir,
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A first visit opens the welcome gallery (a modal dialog). Tests that are not about it start
 * as a returning visitor, so the editor opens straight on the canvas.
 */
export async function skipWelcome(context: BrowserContext): Promise<void> {
  await context.addInitScript(() => {
    if (!window.localStorage.getItem('switchboard:welcomed'))
      window.localStorage.setItem('switchboard:welcomed', 'test');
  });
}

/** How long a browser test waits for a condition on the page. */
export const WAIT = { timeout: 60_000 };

/**
 * Browser tests against the real server, for the file that calls this: one Chromium for the
 * file; `serve()` starts a fresh server for the running test and `person(path)` opens the editor
 * on it in a browser context of its own (own storage). After each test, the pages of a failed
 * one are kept as screenshots `failed-<name>-<test>-<i>.png` in test/artifacts, and its contexts
 * and server are closed.
 */
export function browserTests(name: string) {
  let browser: Browser | undefined;
  let current: Awaited<ReturnType<typeof startServer>> | undefined;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    requireBuild();
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail') {
      const test = ctx.task.name.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 50);
      for (const [i, c] of contexts.entries())
        await c
          .pages()[0]
          ?.screenshot({ path: artifact(`failed-${name}-${test}-${i}.png`) })
          .catch(() => {});
    }
    for (const c of contexts.splice(0)) await c.close().catch(() => {});
    const s = current;
    current = undefined;
    await s?.close();
  });

  const running = () => {
    if (!current) throw new Error('No server for this test: call serve() first');
    return current;
  };
  /** A browser context closed after the test (and screenshotted if it fails). */
  async function newContext(options: BrowserContextOptions = {}): Promise<BrowserContext> {
    if (!browser) throw new Error('The browser is not launched (browserTests registers beforeAll)');
    const context = await browser.newContext(options);
    await skipWelcome(context);
    contexts.push(context);
    return context;
  }

  return {
    /** The server of the running test. */
    get server(): SwitchboardServer {
      return running().server;
    },
    get url(): string {
      return running().url;
    },
    async serve(): Promise<void> {
      current = await startServer();
    },
    newContext,
    /** A person: a browser context of their own, one page on `path` of the server, the editor shown. */
    async person(path: string): Promise<{ page: Page; errors: string[]; context: BrowserContext }> {
      const context = await newContext({ viewport: { width: 1400, height: 900 } });
      const page = await context.newPage();
      const errors = watchErrors(page);
      await page.goto(`${running().url}${path}`);
      await page.getByTestId('node-start').waitFor(WAIT);
      return { page, errors, context };
    },
  };
}

/**
 * Shows the flow's settings (name, id, models, servers). With nothing selected the side panel is a
 * narrow rail so that the canvas gets the room; its button opens the settings, which stay open.
 */
export async function openFlowSettings(page: Page): Promise<void> {
  if (await page.getByTestId('flow-settings').isVisible()) return;
  if ((await page.getByTestId('btn-flow-settings').count()) === 0) await page.keyboard.press('Escape');
  await page.getByTestId('btn-flow-settings').click();
  await page.getByTestId('flow-settings').waitFor(WAIT);
}

/**
 * One server and one Chromium for a whole file of tests that only read, and one browser context
 * per test: screenshotted as `failed-<name>-<test>.png` when the test fails, closed after it.
 */
export function sharedServerBrowser(name: string) {
  let browser: Browser | undefined;
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let context: BrowserContext | undefined;
  beforeAll(async () => {
    server = await startServer();
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  afterEach(async (ctx) => {
    const page = context?.pages()[0];
    if (page && ctx.task.result?.state === 'fail')
      await page
        .screenshot({
          path: artifact(`failed-${name}-${ctx.task.name.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 60)}.png`),
        })
        .catch(() => {});
    await context?.close();
    context = undefined;
  });
  return {
    get server(): Awaited<ReturnType<typeof startServer>> {
      if (!server) throw new Error('The server is not started (sharedServerBrowser registers beforeAll)');
      return server;
    },
    /** The running test's context (the one before it is closed first). */
    async newContext(options: BrowserContextOptions = {}): Promise<BrowserContext> {
      if (!browser) throw new Error('The browser is not launched (sharedServerBrowser registers beforeAll)');
      await context?.close();
      context = await browser.newContext(options);
      return context;
    },
  };
}

/**
 * Selects a node as a person does, by clicking it, once the open's fit has placed the view: on
 * a loaded machine a click that lands while the view still moves hits the pane, so it is tried
 * again until the node is selected.
 */
export async function selectNode(page: Page, id: string): Promise<void> {
  await page.locator('[data-testid="canvas"][data-fits]').waitFor(WAIT);
  const selected = page.locator(`.react-flow__node[data-id="${id}"].selected`);
  const end = Date.now() + 30_000;
  for (;;) {
    await page.getByTestId(`node-${id}`).click();
    try {
      await selected.waitFor({ timeout: 2000 });
      return;
    } catch (e) {
      if (Date.now() > end) throw new Error(`node ${id} is not selected after clicking it: ${String(e)}`);
    }
  }
}
