/**
 * Issue 17 in Chromium against the real server: the first visit's welcome gallery (pictures drawn
 * from each example, one-line purposes, "Use this" making a flow of one's own, remembered
 * afterwards, back under Open…), the hint on a new canvas, node faces (kind, name, one fact),
 * notes in sanitised Markdown that resize into the document, and a team that grows around a
 * member dropped across its border.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { centre, mouseDrag, ROOT, sharedServerBrowser, skipWelcome, WAIT, watchErrors } from './harness.js';

const FLOWS = join(ROOT, 'flows');
const EXAMPLES = readdirSync(FLOWS)
  .filter((f) => f.endsWith('.json') && !f.endsWith('.tests.json'))
  .map((f) => ({
    file: f.replace(/\.json$/, ''),
    flow: JSON.parse(readFileSync(join(FLOWS, f), 'utf8')) as Flow,
  }));

const shared = sharedServerBrowser('faces');

async function visit(path: string, firstVisit: boolean): Promise<{ page: Page; errors: string[] }> {
  const context = await shared.newContext({ viewport: { width: 1440, height: 900 } });
  if (!firstVisit) await skipWelcome(context);
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${shared.server.url}/${path}`);
  return { page, errors };
}

async function stored(id: string): Promise<Flow | undefined> {
  const r = await fetch(`${shared.server.url}/api/flows/${id}`);
  return r.ok ? ((await r.json()) as Flow) : undefined;
}

describe('first visit', { timeout: 120_000 }, () => {
  it('welcomes with the examples, makes a flow of one’s own from one, and does not nag again', async () => {
    const { page, errors } = await visit('', true);
    const welcome = page.getByTestId('welcome');
    await welcome.waitFor(WAIT);
    expect(await page.locator('.sb-card').count()).toBe(EXAMPLES.length);
    for (const { file, flow } of EXAMPLES) {
      const card = page.getByTestId(`card-${file}`);
      expect(await card.locator('.sb-card-name').textContent()).toBe(flow.name);
      // The picture is drawn from the example's own nodes and edges.
      const thumb = page.getByTestId(`thumb-${file}`);
      expect(await thumb.locator('rect').count()).toBe(flow.nodes.length);
      expect(await thumb.locator('line').count()).toBe(flow.edges.length);
      const purpose = (await card.locator('.sb-card-purpose').textContent()) ?? '';
      expect(purpose.length).toBeGreaterThan(10);
      expect(purpose.length).toBeLessThanOrEqual(120);
      expect(await card.getByRole('button', { name: `Use ${flow.name}` }).isEnabled()).toBe(true);
    }
    expect(await page.getByTestId('gallery-blank').isVisible()).toBe(true);
    expect(await page.getByTestId('gallery-import').isVisible()).toBe(true);

    // "Use this": a new flow of one's own, from the template, on the server.
    await page.getByTestId('template-support-triage').click();
    await expect.poll(() => welcome.count(), WAIT).toBe(0);
    await expect
      .poll(() => page.getByTestId('flow-title').textContent(), WAIT)
      .toBe(EXAMPLES.find((e) => e.file === 'support-triage')!.flow.name);
    await expect.poll(() => new URL(page.url()).searchParams.get('flow'), WAIT).toMatch(/^support-triage./);
    const id = new URL(page.url()).searchParams.get('flow')!;
    expect(await stored(id)).toBeDefined();

    // A later visit opens straight on the canvas; Open… brings the gallery back.
    await page.goto(`${shared.server.url}/`);
    await page.getByTestId('node-start').waitFor(WAIT);
    expect(await page.getByTestId('welcome').count()).toBe(0);
    await page.getByTestId('btn-templates').click();
    await page.getByTestId('gallery').waitFor();
    expect(await page.locator('.sb-card').count()).toBe(EXAMPLES.length);
    expect(errors).toEqual([]);
  });

  it('a blank flow shows what to do next; the hint goes once there is a flow', async () => {
    const { page } = await visit('', true);
    await page.getByTestId('welcome').waitFor(WAIT);
    // Keyboard: Escape closes the welcome and it stays closed.
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByTestId('welcome').count()).toBe(0);
    await page.getByTestId('btn-new').click();
    await page.getByTestId('canvas-hint').waitFor(WAIT);
    expect(await page.getByTestId('canvas-hint').textContent()).toMatch(/start/);
    await page.getByTestId('palette-agent').click();
    await page.getByTestId('node-agent1').waitFor(WAIT);
    await expect.poll(() => page.getByTestId('canvas-hint').count()).toBe(0);
    await page.reload();
    await page.getByTestId('node-start').waitFor(WAIT);
    expect(await page.getByTestId('welcome').count()).toBe(0);
  });
});

describe('faces, notes and teams', { timeout: 120_000 }, () => {
  const base = EXAMPLES.find((e) => e.file === 'support-triage')!.flow;
  const NOTE = [
    '# Read me',
    '**bold** and a [safe link](https://example.com/x) and a [bad one](javascript:window.__pwned=1).',
    '<img src=x onerror="window.__pwned=2"> <script>window.__pwned=3</script>',
    '',
    '- one',
    '- two',
  ].join('\n');

  async function openCopy(id: string): Promise<{ page: Page; errors: string[] }> {
    const flow = structuredClone(base);
    flow.id = id;
    const note = flow.nodes.find((n) => n.kind === 'note')!;
    note.config = { text: NOTE };
    const r = await fetch(`${shared.server.url}/api/flows`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(flow),
    });
    expect(r.status).toBe(201);
    const opened = await visit(`?flow=${id}`, false);
    await opened.page.getByTestId('node-start').waitFor(WAIT);
    await opened.page
      .locator(`[data-testid="presence"][data-room="${id}"][data-status="live"]`)
      .waitFor(WAIT);
    return opened;
  }

  it('faces show kind, name and one fact', async () => {
    const { page } = await openCopy('faces-facts');
    expect(await page.getByTestId('node-kind-triage').textContent()).toMatch(/decider/i);
    expect(await page.locator('[data-testid="node-triage"] .sb-node-title').textContent()).toBe('Triage');
    expect(await page.getByTestId('node-fact-triage').textContent()).toMatch(
      /^\d+ conditions? · \d+ rules?$/,
    );
    expect(await page.getByTestId('node-fact-billing').textContent()).toMatch(/handover/);
    expect(await page.getByTestId('node-fact-billing-agent').textContent()).toMatch(/^model: /);
  });

  it('a note renders sanitised Markdown and its new size goes into the flow', async () => {
    const { page, errors } = await openCopy('faces-note');
    const body = page.locator('[data-testid="node-readme"] [data-testid="note-body"]');
    await expect.poll(() => body.getAttribute('data-rendered'), WAIT).toBe('true');
    expect(await body.locator('h1').textContent()).toBe('Read me');
    expect(await body.locator('strong').textContent()).toBe('bold');
    expect(await body.locator('li').count()).toBe(2);
    const safe = body.locator('a[href="https://example.com/x"]');
    expect(await safe.getAttribute('target')).toBe('_blank');
    expect(await safe.getAttribute('rel')).toContain('noopener');
    // No script, no raw HTML, no javascript: link; the raw HTML shows as text.
    expect(await body.locator('a').count()).toBe(1);
    expect(await body.locator('img, script').count()).toBe(0);
    expect(await body.textContent()).toContain('<img src=x');
    expect(await page.evaluate(() => (window as { __pwned?: unknown }).__pwned)).toBeUndefined();

    // Resize from the bottom-right corner: the size is stored in the flow.
    await page.locator('[data-testid="node-readme"] .sb-node-kind').click();
    const handle = page.locator(
      '.react-flow__node[data-id="readme"] .react-flow__resize-control.bottom.right',
    );
    await handle.waitFor();
    const from = await centre(
      page,
      '.react-flow__node[data-id="readme"] .react-flow__resize-control.bottom.right',
    );
    await mouseDrag(page, from, { x: from.x + 120, y: from.y + 80 });
    await expect
      .poll(
        async () => (await stored('faces-note'))?.nodes.find((n) => n.id === 'readme')?.size?.width ?? 0,
        WAIT,
      )
      .toBeGreaterThan(300);
    const size = (await stored('faces-note'))!.nodes.find((n) => n.id === 'readme')!.size!;
    expect(size.height).toBeGreaterThan(180);
    const drawn = (await page.locator('.react-flow__node[data-id="readme"]').boundingBox())!;
    const zoom = await page.evaluate(
      () => new DOMMatrix(getComputedStyle(document.querySelector('.react-flow__viewport')!).transform).a,
    );
    expect(Math.abs(drawn.width / zoom - size.width)).toBeLessThan(3);
    expect(errors).toEqual([]);
  });

  it('a team grows to hold a member dropped across its border', async () => {
    const { page, errors } = await openCopy('faces-team');
    // The whole flow in view (Shift+F), so that both the team and the member are on screen.
    await page.locator('.react-flow__pane').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('Shift+F');
    await expect
      .poll(() =>
        page.evaluate(
          () => new DOMMatrix(getComputedStyle(document.querySelector('.react-flow__viewport')!).transform).a,
        ),
      )
      .toBeLessThan(0.9);
    await page.waitForTimeout(400);
    const zoom = await page.evaluate(
      () => new DOMMatrix(getComputedStyle(document.querySelector('.react-flow__viewport')!).transform).a,
    );
    const team = page.locator('.react-flow__node[data-id="tech"]');
    const node = page.locator('.react-flow__node[data-id="generalist"]');
    const before = (await team.boundingBox())!;
    const n = (await node.boundingBox())!;
    // Drop it so that its centre is just inside the team's bottom-right corner.
    const target = { x: before.x + before.width - 10, y: before.y + before.height - 10 };
    const from = { x: n.x + 20, y: n.y + 10 };
    await mouseDrag(page, from, {
      x: from.x + (target.x - (n.x + n.width / 2)),
      y: from.y + (target.y - (n.y + n.height / 2)),
    });
    await expect
      .poll(async () => (await stored('faces-team'))?.nodes.find((x) => x.id === 'generalist')?.parent, WAIT)
      .toBe('tech');
    const flow = (await stored('faces-team'))!;
    const tech = flow.nodes.find((x) => x.id === 'tech')!;
    const member = flow.nodes.find((x) => x.id === 'generalist')!;
    expect(tech.size!.width).toBeGreaterThan(600);
    expect(member.position.x + n.width / zoom).toBeLessThanOrEqual(tech.size!.width);
    expect(member.position.y + n.height / zoom).toBeLessThanOrEqual(tech.size!.height);
    // On the canvas too: the member's box is inside the team's.
    await expect
      .poll(async () => {
        const t = (await team.boundingBox())!;
        const m = (await node.boundingBox())!;
        return m.x >= t.x && m.y >= t.y && m.x + m.width <= t.x + t.width && m.y + m.height <= t.y + t.height;
      }, WAIT)
      .toBe(true);
    expect(errors).toEqual([]);
  });
});

describe('keyboard reach', { timeout: 120_000 }, () => {
  it('every toolbar action and every context-menu item is reached and run from the keyboard', async () => {
    const { page, errors } = await visit('?flow=support-triage', false);
    await page.getByTestId('node-start').waitFor(WAIT);
    await page
      .locator('[data-testid="presence"][data-room="support-triage"][data-status="live"]')
      .waitFor(WAIT);
    // Tab walks the toolbar: every button of it takes the focus in turn.
    const buttons = await page
      .locator('.sb-toolbar button:not(:disabled)')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-testid') ?? e.textContent));
    expect(buttons).toContain('btn-templates');
    await page.locator('.sb-brand').click();
    const reached = new Set<string | null>();
    for (let i = 0; i < 60 && reached.size < buttons.length; i++) {
      await page.keyboard.press('Tab');
      reached.add(
        await page.evaluate(() => {
          const a = document.activeElement;
          return a?.closest('.sb-toolbar') ? (a.getAttribute('data-testid') ?? a.textContent) : null;
        }),
      );
    }
    for (const b of buttons) expect(reached).toContain(b);
    // Enter on a focused toolbar button runs it: Open… opens the gallery, whose cards take focus too.
    await page.getByTestId('btn-templates').focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('gallery').waitFor();
    await page.getByTestId('template-support-triage').focus();
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe(
      'template-support-triage',
    );
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByTestId('gallery').count()).toBe(0);

    // The node menu from the keyboard: the arrows visit every item and come back round.
    await page.locator('.react-flow__node[data-id="triage"]').focus();
    await page.keyboard.press('Shift+F10');
    const menu = page.getByTestId('context-menu');
    await menu.waitFor();
    const items = await menu
      .locator('[role="menuitem"]:not(:disabled)')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')));
    expect(items.length).toBeGreaterThanOrEqual(4);
    const visited: Array<string | null | undefined> = [];
    for (let i = 0; i < items.length; i++) {
      visited.push(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')));
      await page.keyboard.press('ArrowDown');
    }
    expect(new Set(visited)).toEqual(new Set(items));
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe(items[0]);
    // Enter runs the focused item (duplicate adds a node).
    const count = await page.locator('.react-flow__node').count();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('.react-flow__node').count()).toBe(count + 1);
    expect(errors).toEqual([]);
  });
});
