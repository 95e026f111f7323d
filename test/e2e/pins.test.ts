/**
 * Pins in the editor, in Chromium against the real server: support-triage runs on its scripted
 * models; "Pin this output" in the refund writer's trace pins its turn; a badge naming the run
 * shows on the node for the person who pinned and for a collaborator; the next run started from
 * the editor takes the writer's output from the pin (no model call, a `node.pinned` event, the
 * trace says so); an edit of the writer's prompt marks the badge stale; a click on the badge
 * unpins.
 */
import type { RunEvent } from '@switchboard/schemas';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { artifact, browserTests, WAIT } from './harness.js';

const srv = browserTests('pins');
const { serve, person } = srv;

async function phase(page: Page, want: string): Promise<void> {
  await page.locator(`[data-testid="run-panel"][data-phase="${want}"]`).waitFor(WAIT);
}

/**
 * Selects a node wherever the viewport put it: a click event on its face (a pointer click may land
 * on the minimap or miss a node outside the viewport).
 */
async function select(page: Page, nodeId: string): Promise<void> {
  await page.getByTestId(`node-${nodeId}`).dispatchEvent('click');
}

async function runToEnd(page: Page, not?: string): Promise<string> {
  await page.getByTestId('btn-run').click();
  if (not) await page.locator(`[data-testid="run-panel"]:not([data-run-id="${not}"])`).waitFor(WAIT);
  await phase(page, 'waiting');
  await page.getByTestId('answer-option-yes').click();
  await phase(page, 'completed');
  return (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;
}

describe('pins, in the editor', { timeout: 180_000 }, () => {
  it('pins from the trace; the badge shows to everyone; the next run uses the pin; stale; unpin from the badge', async () => {
    await serve();
    const { page, errors } = await person('/?flow=support-triage');
    const other = await person('/?flow=support-triage');
    await page
      .locator('[data-testid="presence"][data-room="support-triage"][data-status="live"][data-peers="2"]')
      .waitFor(WAIT);
    const first = await runToEnd(page);

    await select(page, 'refund-writer');
    const trace = page.getByTestId('trace-panel');
    await trace.waitFor(WAIT);
    await trace.locator('[data-testid="trace-pin"][data-turn="1"]').click();
    const badge = page.getByTestId('node-pin-refund-writer');
    await badge.waitFor(WAIT);
    expect(await badge.getAttribute('data-from-run')).toBe(first);
    expect(await badge.getAttribute('data-stale')).toBeNull();
    await trace.getByTestId('trace-unpin').waitFor(WAIT);
    // The collaborator sees it too, without reloading.
    await other.page
      .locator(`[data-testid="node-pin-refund-writer"][data-from-run="${first}"]`)
      .waitFor(WAIT);
    await page.getByTestId('btn-fit').click();
    await page.screenshot({ path: artifact('pins-badge.png') });

    const second = await runToEnd(page, first);
    const events = (await (await fetch(`${srv.url}/api/runs/${second}/events`)).json()).events as RunEvent[];
    expect(events.filter((e) => e.type === 'node.pinned')).toEqual([
      expect.objectContaining({ nodeId: 'refund-writer', fromRun: first, fromTurn: 1 }),
    ]);
    expect(events.some((e) => e.type === 'model.request' && e.nodeId === 'refund-writer')).toBe(false);
    expect(events.some((e) => e.type === 'model.request' && e.nodeId === 'billing-agent')).toBe(true);
    await select(page, 'refund-writer');
    await trace.locator('[data-testid="trace-part"][data-kind="pinned"]').waitFor(WAIT);
    expect(await trace.locator('[data-testid="trace-part"][data-kind="pinned"]').textContent()).toContain(
      first,
    );

    // The collaborator edits the writer's prompt: the pin is stale, for both of them.
    await select(other.page, 'refund-writer');
    await other.page.getByTestId('cfg-prompt-0-text').click();
    await other.page.keyboard.press('Control+End');
    await other.page.keyboard.type(' Keep it short.');
    await page.locator('[data-testid="node-pin-refund-writer"][data-stale="true"]').waitFor(WAIT);
    await other.page.locator('[data-testid="node-pin-refund-writer"][data-stale="true"]').waitFor(WAIT);
    expect(await badge.getAttribute('title')).toContain('Stale: the node changed since that run');
    await page.screenshot({ path: artifact('pins-stale.png') });

    await badge.dispatchEvent('click');
    await badge.waitFor({ state: 'detached', ...WAIT });
    await other.page.getByTestId('node-pin-refund-writer').waitFor({ state: 'detached', ...WAIT });
    expect((await (await fetch(`${srv.url}/api/flows/support-triage/pins`)).json()).pins).toEqual([]);
    expect(errors).toEqual([]);
    expect(other.errors).toEqual([]);
  });
});
