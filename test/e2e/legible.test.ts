/**
 * The editor reads at a glance (issue 17), in Chromium against the real server, at 1440×900 and
 * 1280×720, for every shipped example: after open the zoom keeps 12 px titles at 11 px or more
 * (measured from the rendered title box and the viewport transform), a flow larger than the
 * screen is centred on its start node, the canvas gets at least 70 % of a 1440×900 window with
 * nothing selected and no run shown, the minimap does not cover the start node and the run bar is
 * one row. Then the palette's search, its visible descriptions and click-to-add, a `.json`
 * file dropped on the canvas (a good one opens, a bad one shows the problems), and the context
 * menu on nodes and edges, by mouse and by keyboard.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import {
  artifact,
  ROOT,
  selectNode,
  sharedServerBrowser,
  skipWelcome,
  WAIT,
  watchErrors,
} from './harness.js';

const FLOWS = join(ROOT, 'flows');
const EXAMPLES = readdirSync(FLOWS)
  .filter((f) => f.endsWith('.json') && !f.endsWith('.tests.json'))
  .map((f) => ({ file: f, flow: JSON.parse(readFileSync(join(FLOWS, f), 'utf8')) as Flow }));
const SIZES = [
  { width: 1440, height: 900 },
  { width: 1280, height: 720 },
];

const shared = sharedServerBrowser('legible');

async function open(
  path: string,
  viewport = SIZES[0]!,
  permissions: string[] = [],
  firstVisit = false,
): Promise<{ page: Page; errors: string[] }> {
  const context = await shared.newContext({ viewport, permissions });
  if (!firstVisit) await skipWelcome(context);
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${shared.server.url}/${path}`);
  if (!firstVisit) await page.getByTestId('node-start').waitFor(WAIT);
  return { page, errors };
}

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}
const overlap = (a: Box, b: Box) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

/** What a person sees once the view has settled. */
async function measure(page: Page) {
  // The fit waits for the nodes to be measured: poll until the viewport stops changing.
  let last = '';
  for (let i = 0; i < 40; i++) {
    const now = await page.locator('.react-flow__viewport').getAttribute('style');
    if (now === last && now?.includes('scale')) break;
    last = now ?? '';
    await page.waitForTimeout(100);
  }
  return page.evaluate(() => {
    const rect = (el: Element | null) => {
      const r = el?.getBoundingClientRect();
      return r ? { x: r.x, y: r.y, width: r.width, height: r.height } : undefined;
    };
    const vp = document.querySelector('.react-flow__viewport') as HTMLElement;
    const zoom = new DOMMatrix(getComputedStyle(vp).transform).a;
    const title = document.querySelector('[data-testid="node-start"] .sb-node-title') as HTMLElement;
    const cssPx = Number.parseFloat(getComputedStyle(title).fontSize);
    // The rendered size two ways: the CSS size times the viewport's scale, and the title's box
    // on screen against its unscaled layout height (the ratio is the scale it is drawn at).
    const drawnScale = title.getBoundingClientRect().height / title.offsetHeight;
    const bar = document.querySelector('.sb-run-bar') as HTMLElement;
    const run = document.querySelector('[data-testid="btn-run"]') as HTMLElement;
    const runTop = run.getBoundingClientRect().top;
    const barRows = new Set(
      Array.from(bar.children)
        .filter((c) => (c as HTMLElement).offsetParent && c.getBoundingClientRect().width > 0)
        .map((c) => {
          const r = c.getBoundingClientRect();
          return Math.round((r.top + r.height / 2 - runTop - run.offsetHeight / 2) / 8);
        }),
    ).size;
    return {
      zoom,
      titlePx: cssPx * zoom,
      drawnPx: cssPx * drawnScale,
      canvas: rect(document.querySelector('[data-testid="canvas"]'))!,
      start: rect(document.querySelector('[data-testid="node-start"]'))!,
      minimap: rect(document.querySelector('.react-flow__minimap')),
      bar: rect(bar)!,
      runButton: rect(run)!,
      barRows,
      window: { width: innerWidth, height: innerHeight },
    };
  });
}

/**
 * The view once it has settled: the open fits after the nodes are measured, and again when a
 * panel settles a moment later (the fit follows the canvas's size until someone moves it), so a
 * loaded machine may see an intermediate frame. Two equal reads 250 ms apart count as settled.
 */
async function settled(page: Page) {
  await expect.poll(() => page.getByTestId('canvas').getAttribute('data-fits'), WAIT).not.toBeNull();
  let prev = '';
  const end = Date.now() + 15_000;
  for (;;) {
    const m = await measure(page);
    const key = JSON.stringify([m.zoom, m.start, m.canvas]);
    if (key === prev || Date.now() > end) return m;
    prev = key;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Every edge label's box and every node's box (a team: its head), on screen. */
function labelBoxes(page: Page) {
  return page.evaluate(() => {
    const box = (id: string, el: Element) => {
      const r = el.getBoundingClientRect();
      return { id, x: r.x, y: r.y, width: r.width, height: r.height };
    };
    const labels = Array.from(document.querySelectorAll('.sb-edge-label')).map((el) =>
      box(el.getAttribute('data-testid')!, el),
    );
    const nodes = Array.from(document.querySelectorAll('.react-flow__node')).map((el) => {
      const id = el.getAttribute('data-id')!;
      const head = el.classList.contains('react-flow__node-group') ? el.querySelector('.sb-node-head') : el;
      return box(id, head ?? el);
    });
    return { labels, nodes };
  });
}

describe('legible on open, room for the canvas', { timeout: 120_000 }, () => {
  for (const { file, flow } of EXAMPLES)
    for (const size of SIZES)
      it(`${file} at ${size.width}×${size.height}`, async () => {
        const { page, errors } = await open(`?flow=${flow.id}`, size);
        await expect.poll(() => page.locator('.react-flow__node').count(), WAIT).toBe(flow.nodes.length);
        const m = await settled(page);
        const share = (m.canvas.width * m.canvas.height) / (m.window.width * m.window.height);
        console.log(
          `${file} ${size.width}×${size.height}: zoom ${m.zoom.toFixed(3)}, title ${m.titlePx.toFixed(2)} px (drawn ${m.drawnPx.toFixed(2)} px), canvas ${(share * 100).toFixed(1)} %, run bar ${m.bar.height.toFixed(0)} px in ${m.barRows} row(s)`,
        );
        // Titles at 11 px or more, measured both ways.
        expect(m.titlePx).toBeGreaterThanOrEqual(11);
        expect(m.drawnPx).toBeGreaterThanOrEqual(10.9);
        // The start node is on the canvas, whole.
        expect(m.start.x).toBeGreaterThanOrEqual(m.canvas.x);
        expect(m.start.y).toBeGreaterThanOrEqual(m.canvas.y);
        expect(m.start.x + m.start.width).toBeLessThanOrEqual(m.canvas.x + m.canvas.width);
        expect(m.start.y + m.start.height).toBeLessThanOrEqual(m.canvas.y + m.canvas.height);
        // A flow that does not fit is centred on its start node.
        const fitsWhole = await page.evaluate(() => {
          const c = document.querySelector('[data-testid="canvas"]')!.getBoundingClientRect();
          return Array.from(document.querySelectorAll('.react-flow__node')).every((n) => {
            const r = n.getBoundingClientRect();
            return r.left >= c.left && r.top >= c.top && r.right <= c.right && r.bottom <= c.bottom;
          });
        });
        if (!fitsWhole) {
          expect(m.zoom).toBeCloseTo(0.92, 2);
          expect(Math.abs(m.start.x + m.start.width / 2 - (m.canvas.x + m.canvas.width / 2))).toBeLessThan(2);
          expect(Math.abs(m.start.y + m.start.height / 2 - (m.canvas.y + m.canvas.height / 2))).toBeLessThan(
            2,
          );
        }
        // The minimap is small, shown, and not over the start node.
        expect(m.minimap).toBeDefined();
        expect(m.minimap!.width * m.minimap!.height).toBeLessThanOrEqual(150 * 100);
        expect(overlap(m.minimap!, m.start)).toBe(false);
        // Nothing selected, no run shown: the side panel is a rail, the run panel its bar.
        expect(await page.getByTestId('side-panel').getAttribute('data-open')).toBe('false');
        expect(await page.locator('.sb-run-body').count()).toBe(0);
        if (size.width === 1440) expect(share).toBeGreaterThanOrEqual(0.7);
        // The run bar is one row at both sizes.
        expect(m.barRows).toBe(1);
        expect(m.bar.height).toBeLessThan(m.runButton.height * 2);
        // Edge labels: each placed, none over a node (a team's head counts; its inside holds its
        // members' edges) and none over another label.
        await expect.poll(() => page.locator('.sb-edge-label[data-placed="no"]').count(), WAIT).toBe(0);
        const boxes = await labelBoxes(page);
        expect(boxes.labels.length).toBeGreaterThan(0);
        const clashes: string[] = [];
        for (const l of boxes.labels) {
          for (const n of boxes.nodes) if (overlap(l, n)) clashes.push(`${l.id} over node ${n.id}`);
          for (const o of boxes.labels)
            if (o.id < l.id && overlap(l, o)) clashes.push(`${l.id} over ${o.id}`);
        }
        expect(clashes).toEqual([]);
        if (size.width === 1440 && file === EXAMPLES[0]!.file)
          await page.screenshot({ path: artifact(`legible-${flow.id}-${size.width}.png`) });
        expect(errors).toEqual([]);
      });

  it('the minimap hides and shows again, and the fit button returns to the readable fit', async () => {
    const big = EXAMPLES.reduce((a, b) => (b.flow.nodes.length > a.flow.nodes.length ? b : a));
    const { page } = await open(`?flow=${big.flow.id}`);
    await expect.poll(() => page.locator('.react-flow__node').count(), WAIT).toBe(big.flow.nodes.length);
    const first = await measure(page);
    await page.getByTestId('btn-minimap').click();
    expect(await page.locator('.react-flow__minimap').count()).toBe(0);
    await page.getByTestId('btn-minimap').click();
    expect(await page.locator('.react-flow__minimap').count()).toBe(1);
    // Zoom far out, then fit: back to the same readable view.
    for (let i = 0; i < 6; i++) await page.locator('.react-flow__controls-zoomout').click();
    expect((await measure(page)).zoom).toBeLessThan(first.zoom);
    await page.getByTestId('btn-fit').click();
    const again = await measure(page);
    expect(again.zoom).toBeCloseTo(first.zoom, 3);
    expect(again.titlePx).toBeGreaterThanOrEqual(11);
    // Shift+F shows the whole flow, however small; F returns to the readable view.
    await page.locator('.react-flow__pane').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('Shift+F');
    await expect.poll(async () => (await measure(page)).zoom).toBeLessThan(0.92);
    const all = await page.evaluate(() => {
      const c = document.querySelector('[data-testid="canvas"]')!.getBoundingClientRect();
      return Array.from(document.querySelectorAll('.react-flow__node')).every((n) => {
        const r = n.getBoundingClientRect();
        return (
          r.left >= c.left - 1 && r.top >= c.top - 1 && r.right <= c.right + 1 && r.bottom <= c.bottom + 1
        );
      });
    });
    expect(all).toBe(true);
    await page.keyboard.press('f');
    await expect.poll(async () => (await measure(page)).zoom).toBeCloseTo(first.zoom, 3);
  });

  it("the open's fit follows the canvas's size until the person does something", async () => {
    const big = EXAMPLES.reduce((a, b) => (b.flow.nodes.length > a.flow.nodes.length ? b : a));
    const { page } = await open(`?flow=${big.flow.id}`);
    await expect.poll(() => page.locator('.react-flow__node').count(), WAIT).toBe(big.flow.nodes.length);
    await settled(page);
    const offCentre = async () => {
      const m = await measure(page);
      return Math.abs(m.start.x + m.start.width / 2 - (m.canvas.x + m.canvas.width / 2));
    };
    // The window shrinks: the start node stays centred.
    await page.setViewportSize({ width: 1100, height: 700 });
    await expect.poll(offCentre, WAIT).toBeLessThan(2);
    // Someone pans; the window grows again: their view stays where they put it.
    const transform = () => page.locator('.react-flow__viewport').getAttribute('style');
    const centred = await transform();
    const canvas = (await page.getByTestId('canvas').boundingBox())!;
    await page.mouse.move(canvas.x + 8, canvas.y + 8);
    await page.mouse.down();
    await page.mouse.move(canvas.x + 68, canvas.y + 48, { steps: 5 });
    await page.mouse.up();
    const before = await settled(page);
    const moved = await transform();
    expect(moved).not.toBe(centred);
    await page.setViewportSize({ width: 1440, height: 900 });
    await expect
      .poll(async () => (await measure(page)).canvas.width, WAIT)
      .toBeGreaterThan(before.canvas.width);
    await new Promise((r) => setTimeout(r, 500));
    expect(await transform()).toBe(moved);
  });

  it('selecting a node opens the inspector; the flow settings open from the rail', async () => {
    const { page } = await open('?flow=support-triage');
    const side = page.getByTestId('side-panel');
    expect(await side.getAttribute('data-open')).toBe('false');
    await page.getByTestId('btn-flow-settings').click();
    await page.getByTestId('flow-name').waitFor();
    expect(await side.getAttribute('data-open')).toBe('true');
    await page.getByTestId('btn-flow-settings').click();
    expect(await page.getByTestId('flow-name').count()).toBe(0);
    await selectNode(page, 'start');
    await page.getByTestId('inspector-id').waitFor();
    expect(await page.getByTestId('inspector-id').textContent()).toBe('start');
    await page.keyboard.press('Escape');
    await expect.poll(() => side.getAttribute('data-open')).toBe('false');
  });
});

describe('palette and file drop', { timeout: 120_000 }, () => {
  it('search narrows the kinds, descriptions show without hovering, click and Enter add', async () => {
    const { page, errors } = await open('');
    const items = page.locator('.sb-palette-item');
    const all = await items.count();
    expect(all).toBeGreaterThan(5);
    // Descriptions are on screen, not in a tooltip only.
    const desc = page.getByTestId('palette-desc-agent');
    expect(await desc.isVisible()).toBe(true);
    expect((await desc.textContent())!.length).toBeGreaterThan(10);
    await page.getByTestId('palette-search').fill('decid');
    await expect.poll(() => items.count()).toBeLessThan(all);
    expect(await page.getByTestId('palette-decider').isVisible()).toBe(true);
    expect(await page.getByTestId('palette-agent').count()).toBe(0);
    // A word of a description matches too; every word must match.
    await page.getByTestId('palette-search').fill('person loop');
    expect(await page.getByTestId('palette-human').isVisible()).toBe(true);
    expect(await items.count()).toBe(1);
    await page.getByTestId('palette-search').fill('zzzz');
    await page.getByTestId('palette-empty').waitFor();
    expect(await items.count()).toBe(0);
    // Enter adds the first match.
    await page.getByTestId('palette-search').fill('agent');
    await page.getByTestId('palette-search').press('Enter');
    await page.getByTestId('node-agent1').waitFor(WAIT);
    await page.getByTestId('palette-search').fill('');
    expect(await items.count()).toBe(all);
    // A click adds one in view.
    await page.getByTestId('palette-human').click();
    await page.getByTestId('node-human1').waitFor(WAIT);
    expect(errors).toEqual([]);
  });

  async function dropFile(page: Page, name: string, text: string): Promise<void> {
    const box = (await page.getByTestId('canvas').boundingBox())!;
    const dt = await page.evaluateHandle(
      ({ name, text }) => {
        const d = new DataTransfer();
        d.items.add(new File([text], name, { type: 'application/json' }));
        return d;
      },
      { name, text },
    );
    const at = { clientX: box.x + box.width / 2, clientY: box.y + box.height / 2 };
    await page.dispatchEvent('.react-flow__pane', 'dragover', { dataTransfer: dt, ...at });
    await page.dispatchEvent('.react-flow__pane', 'drop', { dataTransfer: dt, ...at });
  }

  it('a .json flow dropped on the canvas opens; a bad one shows the problems', async () => {
    const { page } = await open('');
    const { flow, file } = EXAMPLES.find((e) => e.flow.id === 'support-triage') ?? EXAMPLES[0]!;
    await dropFile(page, file, readFileSync(join(FLOWS, file), 'utf8'));
    await expect.poll(() => page.getByTestId('flow-title').textContent(), WAIT).toBe(flow.name);
    await expect.poll(() => page.locator('.react-flow__node').count(), WAIT).toBe(flow.nodes.length);
    expect(Number(await page.getByTestId('problem-count').getAttribute('data-errors'))).toBe(0);
    // The dropped flow is fitted legibly like an opened one.
    const m = await measure(page);
    expect(m.titlePx).toBeGreaterThanOrEqual(11);

    // Not JSON: refused with the parser's problem, the canvas keeps the flow.
    await dropFile(page, 'broken.json', '{"version": 1, "nodes": [');
    await page.getByTestId('open-error').waitFor(WAIT);
    expect(await page.getByTestId('open-error').textContent()).toContain('broken.json');
    await expect.poll(() => page.getByTestId('problem-count').getAttribute('data-errors')).not.toBe('0');
    expect(await page.getByTestId('problems').getAttribute('data-open')).toBe('true');
    expect(await page.locator('.react-flow__node').count()).toBe(flow.nodes.length);

    // JSON that breaks the flow rules: it opens and the validator names what is wrong, and where.
    const bad = {
      version: 1,
      id: 'dropped-bad',
      name: 'Dropped, with a dangling edge',
      models: {},
      nodes: [
        { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
        { id: 'end', kind: 'end', position: { x: 400, y: 0 }, config: {} },
      ],
      edges: [{ id: 'e1', kind: 'handover', source: 'start', target: 'nowhere', config: {} }],
    };
    await dropFile(page, 'bad.json', JSON.stringify(bad));
    await expect.poll(() => page.getByTestId('flow-title').textContent(), WAIT).toBe(bad.name);
    await expect.poll(() => page.getByTestId('problem-count').getAttribute('data-errors')).not.toBe('0');
    const texts = await page.getByTestId('problem').allTextContents();
    expect(texts.join('\n')).toMatch(/nowhere|e1/);
  });
});

describe('context menu on nodes and edges', { timeout: 120_000 }, () => {
  it('breakpoint, copy as JSON, duplicate and delete on a node; copy and delete on an edge', async () => {
    const { page, errors } = await open('?flow=support-triage', SIZES[0], [
      'clipboard-read',
      'clipboard-write',
    ]);
    await page
      .locator('[data-testid="presence"][data-room="support-triage"][data-status="live"]')
      .waitFor(WAIT);
    const menu = page.getByTestId('context-menu');
    const nodes = page.locator('.react-flow__node');
    const count = await nodes.count();
    const focused = () => page.evaluate(() => document.activeElement?.getAttribute('data-testid'));
    const clipboard = async () => JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));

    // By keyboard: the menu takes focus, arrows move, Enter runs the item.
    await page.getByTestId('node-triage').click({ button: 'right' });
    await menu.waitFor();
    expect(await menu.getAttribute('data-target')).toBe('triage');
    expect(await focused()).toBe('menu-duplicate');
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toBe('menu-breakpoint');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByTestId('node-triage').getAttribute('data-breakpoint')).toBe('true');
    expect(await menu.count()).toBe(0);
    await page.getByTestId('node-triage').click({ button: 'right' });
    expect(await page.getByTestId('menu-breakpoint').textContent()).toBe('Remove breakpoint');
    await page.keyboard.press('Escape');
    expect(await menu.count()).toBe(0);
    // Shift+F10 on a focused node opens its menu beside it.
    await page.locator('.react-flow__node[data-id="start"]').focus();
    await page.keyboard.press('Shift+F10');
    await menu.waitFor();
    expect(await menu.getAttribute('data-target')).toBe('start');
    const startBox = (await page.getByTestId('node-start').boundingBox())!;
    const menuBox = (await menu.boundingBox())!;
    expect(menuBox.x).toBeGreaterThanOrEqual(startBox.x - 40);
    expect(menuBox.x).toBeLessThanOrEqual(startBox.x + startBox.width);
    expect(Math.abs(menuBox.y - (startBox.y + startBox.height / 2))).toBeLessThan(startBox.height);
    await page.keyboard.press('Escape');
    expect(await menu.count()).toBe(0);

    // Copy as JSON: a fragment that pastes back.
    await page.getByTestId('node-triage').click({ button: 'right' });
    await page.getByTestId('menu-copy-json').click();
    await expect.poll(async () => (await clipboard()).nodes?.[0]?.id).toBe('triage');
    expect((await clipboard()).switchboardFragment).toBe(1);

    // An edge: copy as JSON, then delete.
    const edges = page.locator('.react-flow__edge');
    const before = await edges.count();
    // start → triage, a straight line in view.
    const edgeId = 'begin';
    const a = (await page.getByTestId('handle-start-out').boundingBox())!;
    const b = (await page.getByTestId('handle-triage-in').boundingBox())!;
    const onEdge = { x: (a.x + a.width / 2 + b.x) / 2, y: a.y + a.height / 2 };
    const rightClickEdge = () => page.mouse.click(onEdge.x, onEdge.y, { button: 'right' });
    await rightClickEdge();
    await menu.waitFor();
    expect(await menu.getAttribute('data-target')).toBe(edgeId);
    await page.getByTestId('menu-copy-json').click();
    await expect.poll(async () => (await clipboard()).id).toBe(edgeId);
    await rightClickEdge();
    await page.getByTestId('menu-delete').click();
    await expect.poll(() => edges.count()).toBe(before - 1);
    // Duplicate adds one node; delete removes the original and its edges.
    await page.getByTestId('node-triage').click({ button: 'right' });
    await page.getByTestId('menu-duplicate').click();
    await expect.poll(() => nodes.count()).toBe(count + 1);
    await page.getByTestId('node-triage').click({ button: 'right' });
    await page.getByTestId('menu-delete').click();
    await expect.poll(() => page.getByTestId('node-triage').count()).toBe(0);
    expect(await page.locator('[data-testid="rf__edge-to-billing"]').count()).toBe(0);

    expect(errors).toEqual([]);
  });
});
