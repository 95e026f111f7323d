/**
 * The README's screenshots, taken from the real thing: `switchboard serve` on 127.0.0.1 over a
 * fresh data directory with the editor's production build, driven by Chromium through
 * playwright-core at 1440×900. Run `pnpm screenshots` (it builds the editor first); the PNGs go
 * to docs/.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { createServer } from '../../runtime/src/server/index.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOCS = join(ROOT, 'docs');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const VIEW = { width: 1440, height: 900 };

async function page(browser: Browser, url: string, theme: 'light' | 'dark', returning = true): Promise<Page> {
  const context = await browser.newContext({ viewport: VIEW, deviceScaleFactor: 1 });
  await context.addInitScript(
    ({ theme, returning }) => {
      localStorage.setItem('switchboard:theme', theme);
      localStorage.setItem('switchboard:identity', JSON.stringify({ name: 'Ada', color: '#2563eb' }));
      if (returning) localStorage.setItem('switchboard:welcomed', 'screenshots');
    },
    { theme, returning },
  );
  const p = await context.newPage();
  await p.goto(url);
  return p;
}

/** Waits until the view and the edge labels have settled. */
async function settle(p: Page, room?: string): Promise<void> {
  if (room) {
    await p.getByTestId('node-start').waitFor({ timeout: 30_000 });
    await p
      .locator(`[data-testid="presence"][data-room="${room}"][data-status="live"]`)
      .waitFor({ timeout: 30_000 });
  }
  for (let i = 0; i < 50; i++) {
    if ((await p.locator('.sb-edge-label[data-placed="no"]').count()) === 0) break;
    await p.waitForTimeout(100);
  }
  await p.waitForTimeout(600);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-shots-'));
  const server = await createServer({
    dataDir: dir,
    host: '127.0.0.1',
    port: 0,
    editorDir: join(ROOT, 'editor', 'dist'),
  });
  const { url } = await server.listen();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  try {
    // First visit: the welcome gallery.
    const welcome = await page(browser, `${url}/`, 'light', false);
    await welcome.getByTestId('welcome').waitFor({ timeout: 30_000 });
    await welcome.waitForTimeout(600);
    await welcome.screenshot({ path: join(DOCS, 'welcome.png') });
    await welcome.context().close();

    // An example as it opens.
    const editor = await page(browser, `${url}/?flow=support-triage`, 'light');
    await settle(editor, 'support-triage');
    await editor.screenshot({ path: join(DOCS, 'editor.png') });
    await editor.context().close();

    // The dark theme, another example.
    const dark = await page(browser, `${url}/?flow=research-desk`, 'dark');
    await settle(dark, 'research-desk');
    await dark.screenshot({ path: join(DOCS, 'editor-dark.png') });
    await dark.context().close();

    // A run waiting for a person's answer.
    const run = await page(browser, `${url}/?flow=support-triage`, 'light');
    await settle(run, 'support-triage');
    await run.getByTestId('btn-run').click();
    await run
      .locator('[data-run-status="waiting"]')
      .first()
      .waitFor({ timeout: 30_000 })
      .catch(() => console.warn('the run did not reach a waiting node; taking the picture anyway'));
    await run.waitForTimeout(800);
    await run.screenshot({ path: join(DOCS, 'editor-run.png') });
    await run.context().close();
    console.log(`screenshots written to ${DOCS}: welcome.png, editor.png, editor-dark.png, editor-run.png`);
  } finally {
    await browser.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
