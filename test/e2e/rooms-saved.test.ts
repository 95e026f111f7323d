/**
 * Co-edited rooms are saved, seen from the editor in Debian's Chromium against the real server:
 * the toolbar follows the server's save status (not on the server yet, saving, saved, not saved
 * while invalid), the catalog holds what was typed without anyone pressing Save, and the next
 * person to open the flow gets the saved version. Waits are on conditions, never fixed sleeps.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { browserTests, openFlowSettings, WAIT } from './harness.js';

/** The server of the running test (its getters), and the people on it. */
const srv = browserTests('rooms-saved');
const { serve, person } = srv;

const saveState = (page: Page, kind: string) =>
  page.locator(`[data-testid="save-state"][data-room-save="${kind}"]`).waitFor(WAIT);

describe('co-edited rooms are saved', { timeout: 180_000 }, () => {
  it('the toolbar follows the server’s saves; nobody presses Save; the next person opens the saved version', async () => {
    await serve();
    const stored = () => srv.server.store.catalog.data.flows['support-triage'];
    // A link to a flow the server does not have (it shows the example of that name until saved).
    const ada = await person('/?flow=support-triage');
    await ada.page
      .locator('[data-testid="presence"][data-room="support-triage"][data-status="live"]')
      .waitFor(WAIT);
    // Opening it stores nothing.
    await saveState(ada.page, 'new');
    expect(stored()).toBeUndefined();

    // A change is saved by itself, a moment later.
    await openFlowSettings(ada.page);
    await ada.page.getByTestId('flow-name').fill('Support triage, kept');
    await saveState(ada.page, 'saved');
    expect(stored()?.flow.name).toBe('Support triage, kept');
    expect(stored()?.rev).toBe(1);

    // Invalid mid-edit (a flow needs a name): not written, and the toolbar says why.
    await ada.page.getByTestId('flow-name').fill('');
    await saveState(ada.page, 'invalid');
    expect(await ada.page.getByTestId('save-state').textContent()).toBe('not saved: 1 problem');
    expect(stored()?.flow.name).toBe('Support triage, kept');
    expect(stored()?.rev).toBe(1);
    await ada.page.getByTestId('flow-name').fill('Support triage, final');
    await saveState(ada.page, 'saved');
    expect(stored()?.flow.name).toBe('Support triage, final');
    expect(stored()?.rev).toBe(2);
    expect(ada.errors).toEqual([]);
    await ada.context.close();

    // Bob opens the link later: the saved version, and he is told so.
    const bob = await person('/?flow=support-triage');
    await bob.page.getByTestId('collab-joined').waitFor(WAIT);
    expect(await bob.page.getByTestId('collab-joined').textContent()).toContain('as saved on the server');
    await expect
      .poll(() => bob.page.getByTestId('flow-title').textContent(), WAIT)
      .toBe('Support triage, final');
    await saveState(bob.page, 'saved');
    expect(bob.errors).toEqual([]);
  });
});
