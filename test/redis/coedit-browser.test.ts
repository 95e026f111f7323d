/**
 * Two people in Debian's Chromium, each on a different server instance of one Redis deployment
 * (a worker process runs the runs): they co-edit one flow live and both watch the run one of
 * them starts. Needs the editor's build (`pnpm build`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type SwitchboardServer } from '../../runtime/src/server/index.js';
import {
  DIST,
  launch,
  openFlowSettings,
  requireBuild,
  skipWelcome,
  WAIT,
  watchErrors,
} from '../e2e/harness.js';
import { simpleFlow, until } from '../server/helpers.js';
import { startWorker } from './cluster.js';
import { startRedis } from './redis-server.js';

const cleanups: Array<() => Promise<void> | void> = [];
let browser: Browser | undefined;
beforeAll(async () => {
  requireBuild();
  browser = await launch();
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await browser?.close();
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'sb-coedit-br-'));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
};

async function instance(url: string): Promise<SwitchboardServer & { base: string }> {
  const s = await createServer({
    dataDir: tmp(),
    host: '127.0.0.1',
    port: 0,
    editorDir: DIST,
    templatesDir: false,
    rooms: { saveDelayMs: 100, saveMaxDelayMs: 500 },
    redis: { url, rooms: { lockMs: 1500, tickMs: 250 } },
  });
  cleanups.push(() => s.close());
  const { url: base } = await s.listen();
  return Object.assign(s, { base });
}

async function person(base: string, path: string): Promise<{ page: Page; errors: string[] }> {
  const context = await browser!.newContext({ viewport: { width: 1400, height: 900 } });
  cleanups.push(() => context.close());
  await skipWelcome(context);
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${base}${path}`);
  await page.getByTestId('node-start').waitFor(WAIT);
  return { page, errors };
}

const phase = (page: Page, want: string) =>
  page.locator(`[data-testid="run-panel"][data-phase="${want}"]`).waitFor(WAIT);

describe('co-editing across server instances, in the browser', { timeout: 180_000 }, () => {
  it('two people on two instances co-edit one flow and watch one run', async () => {
    const redis = await startRedis();
    cleanups.push(() => redis.stop());
    const a = await instance(redis.url);
    const b = await instance(redis.url);
    const worker = await startWorker(redis.url, tmp(), join(tmp(), 'count.txt'));
    cleanups.push(() => worker.kill9());
    const flow = simpleFlow('shared-flow');
    const res = await fetch(`${a.base}/api/flows/shared-flow`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(flow),
    });
    expect(res.status).toBe(201);
    await until(() => b.store.catalog.data.flows['shared-flow'], 'B has the flow');

    const ada = await person(a.base, '/?flow=shared-flow');
    const bob = await person(b.base, '/?flow=shared-flow');
    for (const p of [ada.page, bob.page])
      await p.locator('[data-testid="presence"][data-room="shared-flow"][data-status="live"]').waitFor(WAIT);

    // Ada (on A) renames the flow; Bob (on B) sees it. Bob renames it back differently; Ada sees it.
    await openFlowSettings(ada.page);
    await ada.page.getByTestId('flow-name').fill('Renamed by Ada on A');
    await expect
      .poll(() => bob.page.getByTestId('flow-title').textContent(), WAIT)
      .toBe('Renamed by Ada on A');
    await openFlowSettings(bob.page);
    await bob.page.getByTestId('flow-name').fill('Renamed by Bob on B');
    await expect
      .poll(() => ada.page.getByTestId('flow-title').textContent(), WAIT)
      .toBe('Renamed by Bob on B');
    // Saved once, by the room's owner, and adopted by the other instance.
    await until(
      () =>
        a.store.catalog.data.flows['shared-flow']?.flow.name === 'Renamed by Bob on B' &&
        b.store.catalog.data.flows['shared-flow']?.flow.name === 'Renamed by Bob on B',
      'both catalogs hold the co-edited flow',
    );
    expect([a.relay!.owns('shared-flow'), b.relay!.owns('shared-flow')].filter(Boolean)).toHaveLength(1);

    // Bob runs (on B, the worker executes it); Ada's panel on A follows the same run.
    await bob.page.getByTestId('btn-run').click();
    await phase(bob.page, 'completed');
    await phase(ada.page, 'completed');
    const runOf = (p: Page) => p.getByTestId('run-panel').getAttribute('data-run-id');
    const runId = (await runOf(bob.page))!;
    expect(runId).toMatch(/^r_/);
    expect(await runOf(ada.page)).toBe(runId);
    await until(() => a.store.catalog.data.runs[runId]?.status === 'completed', 'A recorded the run');
    expect(a.store.catalog.data.runs[runId]!.flowName).toBe('Renamed by Bob on B');
    expect(ada.errors).toEqual([]);
    expect(bob.errors).toEqual([]);
  });
});
