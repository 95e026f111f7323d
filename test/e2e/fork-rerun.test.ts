/**
 * "Re-run from here", in Chromium against the real server: support-triage runs on its scripted
 * models; in the refund writer's trace, "Re-run from here" on its first turn starts a fork of
 * that run over REST, which the canvas follows (the approval after the writer is asked again),
 * and the run history lists the fork under its parent.
 */
import type { RunEvent } from '@switchboard/schemas';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { artifact, browserTests, selectNode, WAIT } from './harness.js';

const srv = browserTests('fork-rerun');
const { serve, person } = srv;

async function phase(page: Page, want: string): Promise<void> {
  await page.locator(`[data-testid="run-panel"][data-phase="${want}"]`).waitFor(WAIT);
}

describe('re-run from a node, in the editor', { timeout: 180_000 }, () => {
  it('forks the shown run at a turn of the selected node; the history shows the fork under its parent', async () => {
    await serve();
    const { page, errors } = await person('/?flow=support-triage');
    await page
      .locator('[data-testid="presence"][data-room="support-triage"][data-status="live"][data-peers="1"]')
      .waitFor(WAIT);
    await page.getByTestId('btn-run').click();
    await phase(page, 'waiting');
    await page.getByTestId('answer-option-yes').click();
    await phase(page, 'completed');
    const parentId = (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;

    await selectNode(page, 'refund-writer');
    const trace = page.getByTestId('trace-panel');
    await trace.waitFor(WAIT);
    await trace.locator('[data-testid="trace-rerun"][data-turn="1"]').click();
    await page.locator(`[data-testid="run-panel"]:not([data-run-id="${parentId}"])`).waitFor(WAIT);
    const forkId = (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;
    expect(forkId).not.toBe(parentId);
    // The approval comes after the writer: the fork asks it again, live.
    await phase(page, 'waiting');
    await page.getByTestId('answer-option-yes').click();
    await phase(page, 'completed');

    const rec = (await (await fetch(`${srv.url}/api/runs/${forkId}`)).json()).run;
    expect(rec).toMatchObject({ parentRunId: parentId, forkedAt: { nodeId: 'refund-writer', turn: 1 } });
    const events = (await (await fetch(`${srv.url}/api/runs/${forkId}/events`)).json()).events as RunEvent[];
    expect(events[0]).toMatchObject({
      type: 'run.started',
      forkedFrom: { runId: parentId, nodeId: 'refund-writer', turn: 1 },
    });

    await page.getByTestId('btn-history').click();
    const rows = page.getByTestId('history-run');
    await page.locator(`[data-testid="history-run"][data-run-id="${forkId}"]`).waitFor(WAIT);
    const ids = await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-run-id')));
    expect(ids.indexOf(forkId)).toBe(ids.indexOf(parentId) + 1);
    const row = page.locator(`[data-testid="history-run"][data-run-id="${forkId}"]`);
    expect(await row.getAttribute('data-parent')).toBe(parentId);
    expect(await row.getAttribute('data-depth')).toBe('1');
    expect(await row.getByTestId('history-fork').textContent()).toContain('refund-writer:1');
    await page.screenshot({ path: artifact('fork-rerun-history.png') });
    expect(errors).toEqual([]);
  });
});
