/**
 * WCAG AA contrast, measured in Chromium on what a person sees: every visible text element of the
 * main screens (an example open in the editor, the welcome gallery, Open…, a run shown with its
 * transcript, a node selected in the inspector), in the light and the dark theme. Each text's
 * colour is composited against the backgrounds behind it (its own and its ancestors', with their
 * opacity) and must reach 4.5:1, or 3:1 for large text (24 px, or 18.66 px bold). Disabled
 * controls are exempt, as WCAG allows.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { selectNode, sharedServerBrowser, skipWelcome, WAIT } from './harness.js';

const shared = sharedServerBrowser('contrast');

interface Finding {
  where: string;
  text: string;
  fg: string;
  bg: string;
  ratio: number;
  needed: number;
}

/** Every visible text on the page whose contrast is below AA, and how many texts were checked. */
function audit(page: Page): Promise<{ checked: number; failures: Finding[] }> {
  return page.evaluate(() => {
    type RGBA = [number, number, number, number];
    const parse = (c: string): RGBA | undefined => {
      const m = /^rgba?\(([^)]+)\)$/.exec(c.trim());
      if (!m) return undefined;
      const p = m[1]!
        .split(/[\s,/]+/)
        .filter(Boolean)
        .map(Number);
      return [p[0]!, p[1]!, p[2]!, p.length > 3 ? p[3]! : 1];
    };
    const over = (top: RGBA, under: RGBA): RGBA => {
      const a = top[3] + under[3] * (1 - top[3]);
      if (a === 0) return [0, 0, 0, 0];
      const mix = (i: number) => (top[i]! * top[3] + under[i]! * under[3] * (1 - top[3])) / a;
      return [mix(0), mix(1), mix(2), a];
    };
    const lum = (c: RGBA) => {
      const ch = (v: number) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * ch(c[0]) + 0.7152 * ch(c[1]) + 0.0722 * ch(c[2]);
    };
    const page = parse(getComputedStyle(document.documentElement).backgroundColor) ?? [255, 255, 255, 1];
    const base: RGBA = page[3] === 1 ? page : [255, 255, 255, 1];
    /** The colour behind `el`: its and its ancestors' backgrounds, composited, with opacity. */
    const behind = (el: Element): RGBA => {
      const layers: RGBA[] = [];
      for (let e: Element | null = el; e; e = e.parentElement) {
        const s = getComputedStyle(e);
        const bg = parse(s.backgroundColor);
        const op = Number(s.opacity);
        if (bg && bg[3] > 0) layers.push([bg[0], bg[1], bg[2], bg[3] * op]);
        if (bg && bg[3] === 1 && op === 1) break;
      }
      let c = base;
      for (const l of layers.reverse()) c = over(l, c);
      return c;
    };
    const opacityOf = (el: Element) => {
      let o = 1;
      for (let e: Element | null = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity);
      return o;
    };
    const describe = (el: Element) => {
      const t = el.closest('[data-testid]')?.getAttribute('data-testid');
      return `${el.tagName.toLowerCase()}.${Array.from(el.classList).join('.')}${t ? ` in [${t}]` : ''}`;
    };
    const failures: Finding[] = [];
    let checked = 0;
    const inView = (r: DOMRect) =>
      r.width > 0 &&
      r.height > 0 &&
      r.right > 0 &&
      r.bottom > 0 &&
      r.left < innerWidth &&
      r.top < innerHeight;
    // Behind a modal dialog the page is inert and dimmed: only the dialog is read.
    const modal = document.querySelector('dialog:modal');
    for (const el of Array.from((modal ?? document.body).querySelectorAll('*'))) {
      const own = Array.from(el.childNodes)
        .filter((n) => n.nodeType === Node.TEXT_NODE)
        .map((n) => n.textContent ?? '')
        .join('')
        .trim();
      const field =
        el instanceof HTMLInputElement ||
        el instanceof HTMLTextAreaElement ||
        el instanceof HTMLSelectElement;
      const text = field ? ((el as HTMLInputElement).value ?? '').trim() : own;
      if (!text || el.closest('svg, [hidden], [aria-hidden="true"]')) continue;
      if (
        el instanceof HTMLInputElement &&
        ['checkbox', 'radio', 'hidden', 'file', 'range', 'color'].includes(el.type)
      )
        continue;
      // Inactive controls are exempt (WCAG 1.4.3).
      if (
        el.closest('button:disabled, input:disabled, select:disabled, textarea:disabled, fieldset:disabled')
      )
        continue;
      const s = getComputedStyle(el);
      if (s.visibility !== 'visible' || s.display === 'none') continue;
      if (!inView(el.getBoundingClientRect())) continue;
      // Inside a closed <dialog> or a closed <details> nothing shows.
      const dlg = el.closest('dialog');
      if (dlg && !dlg.open) continue;
      const op = opacityOf(el);
      if (op < 0.05) continue;
      const fg0 = parse(s.color);
      const bg = behind(el);
      if (!fg0) {
        failures.push({ where: describe(el), text, fg: s.color, bg: 'unparsed', ratio: 0, needed: 4.5 });
        continue;
      }
      const fg = over([fg0[0], fg0[1], fg0[2], fg0[3] * op], bg);
      const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a) as [number, number];
      const ratio = (hi + 0.05) / (lo + 0.05);
      const px = Number.parseFloat(s.fontSize);
      const large = px >= 24 || (px >= 18.66 && Number(s.fontWeight) >= 700);
      const needed = large ? 3 : 4.5;
      checked++;
      if (ratio < needed - 0.005)
        failures.push({
          where: describe(el),
          text: text.slice(0, 40),
          fg: `rgb(${fg.slice(0, 3).map(Math.round).join(',')})`,
          bg: `rgb(${bg.slice(0, 3).map(Math.round).join(',')})`,
          ratio: Math.round(ratio * 100) / 100,
          needed,
        });
    }
    return { checked, failures };
  });
}

async function editor(theme: 'light' | 'dark', path: string, welcome = false): Promise<Page> {
  const context = await shared.newContext({ viewport: { width: 1440, height: 900 } });
  if (!welcome) await skipWelcome(context);
  await context.addInitScript((t) => window.localStorage.setItem('switchboard:theme', t), theme);
  const page = await context.newPage();
  await page.goto(`${shared.server.url}/${path}`);
  return page;
}

async function settle(page: Page) {
  await expect.poll(() => page.locator('.sb-edge-label[data-placed="no"]').count(), WAIT).toBe(0);
  await page.waitForTimeout(300);
}

function report(screen: string, r: { checked: number; failures: Finding[] }) {
  console.log(`${screen}: ${r.checked} texts checked, ${r.failures.length} below AA`);
  for (const f of r.failures)
    console.log(`  ${f.ratio}:1 < ${f.needed} ${f.where} "${f.text}" ${f.fg} on ${f.bg}`);
  expect(r.checked).toBeGreaterThan(10);
  expect(r.failures).toEqual([]);
}

describe('text contrast meets WCAG AA', { timeout: 120_000 }, () => {
  for (const theme of ['light', 'dark'] as const) {
    it(`${theme}: an example open, a node selected, the Open… gallery`, async () => {
      const page = await editor(theme, '?flow=support-triage');
      await page.getByTestId('node-start').waitFor(WAIT);
      await page
        .locator('[data-testid="presence"][data-room="support-triage"][data-status="live"]')
        .waitFor(WAIT);
      await settle(page);
      report(`${theme} editor`, await audit(page));
      await selectNode(page, 'triage');
      await page.getByTestId('inspector-id').waitFor(WAIT);
      report(`${theme} inspector`, await audit(page));
      await page.keyboard.press('Escape');
      await page.getByTestId('btn-flow-settings').click();
      await page.getByTestId('flow-settings').waitFor(WAIT);
      report(`${theme} flow settings`, await audit(page));
      await page.getByTestId('btn-templates').click();
      await page.getByTestId('gallery').waitFor(WAIT);
      await page.locator('.sb-card').first().waitFor();
      report(`${theme} open dialog`, await audit(page));
    });

    it(`${theme}: the welcome gallery`, async () => {
      const page = await editor(theme, '', true);
      await page.getByTestId('welcome').waitFor(WAIT);
      report(`${theme} welcome`, await audit(page));
    });

    it(`${theme}: a run shown`, async () => {
      const page = await editor(theme, '?flow=support-triage');
      await page.getByTestId('node-start').waitFor(WAIT);
      await page
        .locator('[data-testid="presence"][data-room="support-triage"][data-status="live"]')
        .waitFor(WAIT);
      await page.getByTestId('btn-run').click();
      await page.locator('.sb-run-body').waitFor(WAIT);
      await expect.poll(() => page.getByTestId('transcript-entry').count(), WAIT).toBeGreaterThan(2);
      await page.waitForTimeout(500);
      report(`${theme} run`, await audit(page));
    });
  }
});
