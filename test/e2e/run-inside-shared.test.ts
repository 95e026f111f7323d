/**
 * Everything about a run is shared (issue 15, item 7), in two real browser contexts on one flow:
 * Ada starts runs; Bea, who joins later, sees the same history entries with who started them (a
 * name with markup in it shows as text), opens the same past run from the history, and the same
 * node's trace shows her what Ada sees.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { artifact, browserTests, selectNode, WAIT, watchErrors } from './harness.js';

const srv = browserTests('run-inside-shared');

/** A person with a display name of their own (the presence identity kept in their browser). */
async function named(
  name: string,
  path: string,
): Promise<{ page: Page; errors: string[]; context: BrowserContext }> {
  const context = await srv.newContext({ viewport: { width: 1400, height: 900 } });
  await context.addInitScript(
    (id) => window.localStorage.setItem('switchboard:identity', id),
    JSON.stringify({ name, color: '#2563eb' }),
  );
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${srv.url}${path}`);
  await page.getByTestId('node-start').waitFor(WAIT);
  return { page, errors, context };
}

async function phase(page: Page, want: string, runId?: string): Promise<void> {
  const run = runId ? `[data-run-id="${runId}"]` : '';
  await page.locator(`[data-testid="run-panel"][data-phase="${want}"]${run}`).waitFor(WAIT);
}

/** The texts of the selected node's trace: every message and every part title. */
async function traceText(page: Page): Promise<string[]> {
  const trace = page.getByTestId('trace-panel');
  await trace.waitFor(WAIT);
  return trace
    .locator('[data-testid="trace-message"], [data-testid="trace-part"] .sb-trace-toggle')
    .allTextContents();
}

describe('a run is the same for everyone on the flow', { timeout: 180_000 }, () => {
  it('the other person sees the history entry with who started it, opens the same run and the same trace', async () => {
    await srv.serve();
    const ADA = 'Ada <b>Lovelace</b>';
    const ada = await named(ADA, '/?flow=support-triage');
    await ada.page.getByTestId('run-pace').selectOption('0');
    // A billing run (answered), then a technical one.
    await ada.page.getByTestId('btn-run').click();
    await phase(ada.page, 'waiting');
    const billing = (await ada.page.getByTestId('run-panel').getAttribute('data-run-id'))!;
    await ada.page.getByTestId('answer-option-yes').click();
    await phase(ada.page, 'completed', billing);
    await ada.page.getByTestId('run-input').fill('The app crashes on start since yesterday');
    await ada.page.getByTestId('btn-run').click();
    await ada.page
      .locator(`[data-testid="run-panel"][data-phase="completed"]:not([data-run-id="${billing}"])`)
      .waitFor(WAIT);
    const tech = (await ada.page.getByTestId('run-panel').getAttribute('data-run-id'))!;
    // The server recorded who started them, from the name Ada's editor sent.
    await srv.server.runs.settled(tech);
    expect(srv.server.store.catalog.data.runs[billing]!.startedBy).toBe(ADA);

    // Bea opens the flow afterwards, in a browser of her own.
    const bea = await named('Bea', '/?flow=support-triage');
    await phase(bea.page, 'completed', tech);
    await bea.page.getByTestId('btn-history').click();
    for (const id of [billing, tech]) {
      const row = bea.page.locator(`[data-testid="history-run"][data-run-id="${id}"]`);
      await row.waitFor(WAIT);
      const who = row.getByTestId('history-who');
      expect(await who.textContent()).toBe(ADA);
      expect(await who.getAttribute('data-named')).toBe('true');
      // The markup in the name is text: no element was made of it.
      expect(await who.locator('b').count()).toBe(0);
      expect(await row.getByTestId('history-path').textContent()).toContain('triage');
    }
    const billingRow = bea.page.locator(`[data-testid="history-run"][data-run-id="${billing}"]`);
    expect(await billingRow.getByTestId('history-path').textContent()).toContain('refund-writer');
    // Ada's history lists the same runs, in the same order, with the same names.
    await ada.page.getByTestId('btn-history').click();
    const rows = async (p: Page) =>
      p
        .getByTestId('history-run')
        .evaluateAll((els) =>
          els.map(
            (e) =>
              `${e.getAttribute('data-run-id')} ${e.querySelector('[data-testid="history-who"]')?.textContent}`,
          ),
        );
    await expect.poll(() => rows(ada.page), WAIT).toEqual(await rows(bea.page));

    // Both open the billing run from the history: the same path on both canvases.
    await billingRow.getByTestId('history-open').click();
    await ada.page
      .locator(`[data-testid="history-run"][data-run-id="${billing}"]`)
      .getByTestId('history-open')
      .click();
    for (const p of [ada.page, bea.page]) {
      await phase(p, 'completed', billing);
      await p.locator('[data-testid="run-opened"][data-how="history"]').waitFor(WAIT);
      for (const id of ['triage', 'billing-agent', 'refund-writer', 'sender'])
        await p.locator(`[data-testid="node-${id}"][data-run-status="completed"]`).waitFor(WAIT);
      expect(await p.getByTestId('node-diagnoser').getAttribute('data-run-status')).toBe('idle');
      await p.getByTestId('btn-history').click();
    }
    // The same node's trace, the same on both.
    await selectNode(ada.page, 'refund-writer');
    await selectNode(bea.page, 'refund-writer');
    const seenByAda = await traceText(ada.page);
    const seenByBea = await traceText(bea.page);
    expect(seenByAda.length).toBeGreaterThan(2);
    expect(seenByBea).toEqual(seenByAda);
    expect(seenByBea.join('\n')).toContain('refund');
    expect(
      await bea.page
        .getByTestId('trace-panel')
        .locator('[data-testid="trace-message"][data-role="system"]')
        .count(),
    ).toBeGreaterThan(0);
    await bea.page.screenshot({ path: artifact('run-inside-shared.png') });
    expect(ada.errors).toEqual([]);
    expect(bea.errors).toEqual([]);
  });
});
