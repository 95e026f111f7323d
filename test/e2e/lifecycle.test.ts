/**
 * The flow lifecycle and presence in Debian's Chromium against the real server: a delete with two
 * editors in the room tells both who deleted it and lets the other save a copy; the deleted id
 * reopened a second later shows the delete, never the content; "New from template" always starts
 * from the shipped example under an id of its own; "Save as" moves you and the address bar;
 * people name themselves, see each other's labelled cursors in distinct colours, and follow a
 * view. Waits are on conditions (attributes the editor sets), never fixed sleeps.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { browserTests, openFlowSettings, ROOT, WAIT } from './harness.js';

const TRIAGE = JSON.parse(readFileSync(join(ROOT, 'flows', 'support-triage.json'), 'utf8')) as Flow;

const srv = browserTests('lifecycle');
const { serve, person } = srv;

const stored = (id: string) => srv.server.store.catalog.data.flows[id];

async function inRoom(page: Page, room: string, peers = 1): Promise<void> {
  await page
    .locator(`[data-testid="presence"][data-room="${room}"][data-status="live"][data-peers="${peers}"]`)
    .waitFor(WAIT);
}

/** Sets this person's display name through their own presence chip. */
async function nameMyself(page: Page, name: string): Promise<void> {
  await page.getByTestId('peer-self').click();
  await page.getByTestId('my-name').fill(name);
  await page.getByTestId('my-name-save').click();
  await page.locator(`[data-testid="peer-self"][data-name="${name}"]`).waitFor(WAIT);
}

/** A flow on the server copied from the support-triage example (REST), as a room to meet in. */
async function triageOnServer(): Promise<string> {
  const r = await fetch(`${srv.url}/api/flows/from-template/support-triage`, {
    method: 'POST',
    headers: { origin: srv.url },
  });
  expect(r.status).toBe(201);
  return ((await r.json()) as { id: string }).id;
}

const flowParam = (page: Page) => new URL(page.url()).searchParams.get('flow');

describe('flow lifecycle in the editor', { timeout: 180_000 }, () => {
  it('a delete with two editors in the room: both are told who deleted it; the other saves a copy and moves to it', async () => {
    await serve();
    const id = await triageOnServer();
    const ada = await person(`/?flow=${id}`);
    await nameMyself(ada.page, 'Ada');
    const bob = await person(`/?flow=${id}`);
    await nameMyself(bob.page, 'Bob');
    await inRoom(ada.page, id, 2);
    await openFlowSettings(bob.page);
    await bob.page.getByTestId('flow-name').fill('Triage, as Bob left it');
    await expect.poll(() => stored(id)?.flow.name, WAIT).toBe('Triage, as Bob left it');
    expect(stored(id)!.updatedBy).toBe('Bob');

    await ada.page.getByTestId('btn-delete').click();
    await ada.page.getByTestId('delete-confirm').click();
    for (const p of [ada.page, bob.page])
      await p.locator('[data-testid="room-closed"][data-deleted-by="Ada"]').waitFor(WAIT);
    expect(await bob.page.getByTestId('room-closed').textContent()).toContain(`${id} was deleted by Ada.`);
    expect(await ada.page.getByTestId('room-closed').textContent()).toContain('deleted by Ada (you)');
    // The toolbar no longer says "saved" for what is on screen.
    await bob.page.locator('[data-testid="save-state"][data-room-save="closed"]').waitFor(WAIT);
    expect(stored(id)).toBeUndefined();

    // Bob keeps typing: nothing reaches the server, nothing is recreated.
    await bob.page.getByTestId('flow-name').fill('Typed after the delete');
    await expect.poll(() => srv.server.rooms.docOf(id), { timeout: 1000 }).toBeUndefined();
    expect(stored(id)).toBeUndefined();
    // Save (Ctrl+S by habit) would bring the deleted id back: it points to the copy instead.
    await bob.page.getByTestId('btn-save').click();
    await bob.page.getByTestId('save-error').waitFor(WAIT);
    expect(await bob.page.getByTestId('save-error').textContent()).toContain('Save as a copy');
    expect(stored(id)).toBeUndefined();

    // Bob saves what he sees as a copy and moves there, address bar included.
    await bob.page.getByTestId('save-copy').click();
    await bob.page.getByTestId('save-as-id').fill(`${id}-bob`);
    await bob.page.getByTestId('save-as-name').fill('Bob’s triage');
    await bob.page.getByTestId('save-as-confirm').click();
    await inRoom(bob.page, `${id}-bob`);
    expect(flowParam(bob.page)).toBe(`${id}-bob`);
    await expect.poll(() => bob.page.getByTestId('room-closed').count(), WAIT).toBe(0);
    expect(stored(`${id}-bob`)!.flow.name).toBe('Bob’s triage');
    expect(stored(`${id}-bob`)!.updatedBy).toBe('Bob');
    expect(stored(id)).toBeUndefined();

    // Someone opening the deleted id a second later sees the delete, not the content.
    const carol = await person(`/?flow=${id}`);
    await carol.page.locator('[data-testid="room-closed"][data-deleted-by="Ada"]').waitFor(WAIT);
    expect(await carol.page.getByTestId('flow-title').textContent()).not.toBe('Triage, as Bob left it');
    expect(stored(id)).toBeUndefined();
    for (const p of [ada, bob, carol]) expect(p.errors.filter((e) => !/WebSocket/.test(e))).toEqual([]);
  });

  it('a template opened and edited; "New from template" again starts from the shipped example', async () => {
    await serve();
    const ada = await person('/');
    await ada.page.getByTestId('btn-templates').click();
    await ada.page.getByTestId('template-support-triage').click();
    const first = ada.page.locator(
      '[data-testid="presence"][data-room^="support-triage-"][data-status="live"]',
    );
    await first.waitFor(WAIT);
    const a = (await first.getAttribute('data-room'))!;
    expect(flowParam(ada.page)).toBe(a);
    await openFlowSettings(ada.page);
    await ada.page.getByTestId('flow-name').fill('Edited copy');
    await expect.poll(() => stored(a)?.flow.name, WAIT).toBe('Edited copy');

    await ada.page.getByTestId('btn-templates').click();
    await ada.page.getByTestId('template-support-triage').click();
    const second = ada.page.locator(
      `[data-testid="presence"][data-room^="support-triage-"]:not([data-room="${a}"])[data-status="live"]`,
    );
    await second.waitFor(WAIT);
    const b = (await second.getAttribute('data-room'))!;
    expect(flowParam(ada.page)).toBe(b);
    expect(await ada.page.getByTestId('flow-title').textContent()).toBe(TRIAGE.name);
    expect(stored(b)!.flow).toEqual({ ...TRIAGE, id: b });
    expect(stored(a)!.flow.name).toBe('Edited copy');
    expect(stored('support-triage')).toBeUndefined();

    // Open… lists both, with ids, last change and author; search and delete from the list.
    await ada.page.getByTestId('btn-templates').click();
    await ada.page.getByTestId(`flow-row-${a}`).waitFor(WAIT);
    const rowB = ada.page.getByTestId(`flow-row-${b}`);
    expect(await rowB.textContent()).toContain(b);
    expect(await rowB.getByTestId('flow-changed').textContent()).toMatch(/by Guest \w+/);
    await ada.page.getByTestId('flow-search').fill('edited');
    await expect.poll(() => ada.page.locator('[data-testid^="flow-row-"]').count(), WAIT).toBe(1);
    await ada.page.getByTestId('flow-search').fill('');
    await ada.page.getByTestId(`delete-flow-${a}`).click();
    await ada.page.getByTestId(`confirm-delete-${a}`).click();
    await expect.poll(() => ada.page.getByTestId(`flow-row-${a}`).count(), WAIT).toBe(0);
    expect(stored(a)).toBeUndefined();
    expect(ada.errors).toEqual([]);
  });

  it('"Save as" and Save with a changed id take you and the address bar to the new flow', async () => {
    await serve();
    const id = await triageOnServer();
    const ada = await person(`/?flow=${id}`);
    await inRoom(ada.page, id);
    await ada.page.getByTestId('btn-save-as').click();
    await ada.page.getByTestId('save-as-id').fill('triage-v2');
    await ada.page.getByTestId('save-as-confirm').click();
    await inRoom(ada.page, 'triage-v2');
    expect(flowParam(ada.page)).toBe('triage-v2');
    // Later edits reach the copy without pressing Save; the original is untouched.
    await openFlowSettings(ada.page);
    await ada.page.getByTestId('flow-name').fill('Version two');
    await expect.poll(() => stored('triage-v2')?.flow.name, WAIT).toBe('Version two');
    expect(stored(id)!.flow.name).toBe(TRIAGE.name);

    // The older way: change the id in Flow settings, then Save.
    await ada.page.getByTestId('flow-id').fill('triage-v3');
    await ada.page.getByTestId('btn-save').click();
    await inRoom(ada.page, 'triage-v3');
    expect(flowParam(ada.page)).toBe('triage-v3');
    expect(stored('triage-v3')!.flow.name).toBe('Version two');
    // The flow left behind keeps its id (and so stays saved as it was).
    await expect.poll(() => stored('triage-v2')?.flow.id, WAIT).toBe('triage-v2');
    await ada.page.getByTestId('flow-name').fill('Version three');
    await expect.poll(() => stored('triage-v3')?.flow.name, WAIT).toBe('Version three');
    expect(stored('triage-v2')!.flow.name).toBe('Version two');
    expect(ada.errors).toEqual([]);
  });
});

describe('presence', { timeout: 180_000 }, () => {
  it('two people see each other’s named cursor in distinct colours, names are remembered, and one follows the other', async () => {
    await serve();
    const id = await triageOnServer();
    const ada = await person(`/?flow=${id}`);
    await nameMyself(ada.page, 'Ada Lovelace');
    const bob = await person(`/?flow=${id}`);
    await nameMyself(bob.page, 'Bob');
    await inRoom(ada.page, id, 2);
    await inRoom(bob.page, id, 2);

    const canvas = async (page: Page) => (await page.getByTestId('canvas').boundingBox())!;
    const a = await canvas(ada.page);
    await ada.page.mouse.move(a.x + 300, a.y + 200);
    await ada.page.mouse.move(a.x + 320, a.y + 220, { steps: 4 });
    await bob.page.locator('[data-testid="cursor"][data-name="Ada Lovelace"]').waitFor(WAIT);
    const b = await canvas(bob.page);
    await bob.page.mouse.move(b.x + 500, b.y + 300);
    await bob.page.mouse.move(b.x + 520, b.y + 310, { steps: 4 });
    await ada.page.locator('[data-testid="cursor"][data-name="Bob"]').waitFor(WAIT);
    expect(await ada.page.locator('[data-testid="cursor"]').count()).toBe(1);
    // The cursor is drawn where Ada's pointer is (same flow point, same window size and view).
    const onBob = (await bob.page.locator('[data-testid="cursor"]').boundingBox())!;
    expect(Math.abs(onBob.x - (a.x + 320))).toBeLessThan(40);
    expect(Math.abs(onBob.y - (a.y + 220))).toBeLessThan(40);
    // Colours differ, and both browsers agree on them.
    const colourOf = (page: Page, who: string) =>
      page.locator(`[data-testid^="peer"][data-name="${who}"]`).getAttribute('data-color');
    expect(await colourOf(ada.page, 'Ada Lovelace')).not.toBe(await colourOf(ada.page, 'Bob'));
    expect(await colourOf(bob.page, 'Ada Lovelace')).toBe(await colourOf(ada.page, 'Ada Lovelace'));
    expect(await bob.page.locator('[data-testid="cursor"]').getAttribute('data-color')).toBe(
      await colourOf(bob.page, 'Ada Lovelace'),
    );

    // Bob follows Ada; Ada zooms in; Bob's view goes with her.
    await bob.page.locator('[data-testid="peer"][data-name="Ada Lovelace"]').click();
    await bob.page.locator('[data-testid="presence"][data-following="Ada Lovelace"]').waitFor(WAIT);
    await ada.page.mouse.move(a.x + 200, a.y + 150);
    for (let i = 0; i < 4; i++) await ada.page.mouse.wheel(0, -200);
    const view = async (page: Page) => {
      const t = await page
        .locator('.react-flow__viewport')
        .evaluate((el) => (el as HTMLElement).style.transform);
      return (t.match(/-?[\d.]+/g) ?? []).map(Number);
    };
    const sameView = async () => {
      const [x1, y1, z1] = await view(ada.page);
      const [x2, y2, z2] = await view(bob.page);
      return z1! > 1.05 && Math.abs(z1! - z2!) < 0.01 && Math.abs(x1! - x2!) < 3 && Math.abs(y1! - y2!) < 3;
    };
    await expect.poll(sameView, WAIT).toBe(true);

    // Bob's name stays with his browser.
    await bob.page.reload();
    await bob.page.getByTestId('node-start').waitFor(WAIT);
    await bob.page.locator('[data-testid="peer-self"][data-name="Bob"]').waitFor(WAIT);
    expect(ada.errors).toEqual([]);
    expect(bob.errors).toEqual([]);
  });
});
