/**
 * The editor in a real browser (Debian's Chromium through playwright-core) against its
 * production build: what a new user does, every example flow, refused connections, undo/redo,
 * reload safety, render counts, screenshots.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { validate, validateText } from '@switchboard/nodes';
import { type Flow, serializeFlow } from '@switchboard/schemas';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { richFlow } from '../../editor/src/testing/fixtures.js';
import {
  artifact,
  centre,
  launch,
  mouseDrag,
  openFlowSettings,
  ROOT,
  requireBuild,
  selectNode,
  serveStatic,
  skipWelcome,
  watchErrors,
} from './harness.js';

const FLOWS = join(ROOT, 'flows');
const flowFiles = readdirSync(FLOWS).filter((f) => f.endsWith('.json') && !f.endsWith('.tests.json'));

let browser: Browser;
let server: Awaited<ReturnType<typeof serveStatic>>;
let context: BrowserContext | undefined;

beforeAll(async () => {
  requireBuild();
  server = await serveStatic();
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});
afterEach(async (ctx) => {
  // A failing test leaves a screenshot of where it stopped.
  const page = context?.pages()[0];
  if (page && ctx.task.result?.state === 'fail')
    await page.screenshot({
      path: artifact(`failed-${ctx.task.name.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 60)}.png`),
    });
  await context?.close();
  context = undefined;
});

async function open(query = ''): Promise<{ page: Page; errors: string[] }> {
  context = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  await skipWelcome(context);
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/${query}`);
  await page.getByTestId('node-start').waitFor();
  return { page, errors };
}

async function exportText(page: Page): Promise<string> {
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByTestId('btn-export').click(),
  ]);
  const path = await download.path();
  return readFileSync(path, 'utf8');
}

async function importFile(page: Page, name: string, text: string): Promise<void> {
  await page
    .getByTestId('import-file')
    .setInputFiles({ name, mimeType: 'application/json', buffer: Buffer.from(text) });
}

async function errorCount(page: Page): Promise<number> {
  return Number(await page.getByTestId('problem-count').getAttribute('data-errors'));
}

/** Waits until the debounced validator has produced `n` errors. */
async function waitErrors(page: Page, n: number): Promise<void> {
  await expect.poll(() => errorCount(page), { timeout: 10_000 }).toBe(n);
}

/** Centre of an element once it stopped moving (the viewport may still be animating). */
async function stableCentre(page: Page, selector: string): Promise<{ x: number; y: number }> {
  let last = await centre(page, selector);
  for (let i = 0; i < 20; i++) {
    await page.waitForTimeout(80);
    const now = await centre(page, selector);
    if (Math.abs(now.x - last.x) < 0.5 && Math.abs(now.y - last.y) < 0.5) return now;
    last = now;
  }
  return last;
}

async function connect(page: Page, from: string, to: string): Promise<void> {
  const a = await stableCentre(page, `[data-testid="handle-${from}"]`);
  const b = await stableCentre(page, `[data-testid="handle-${to}"]`);
  await mouseDrag(page, a, b);
}

async function dropKind(page: Page, kind: string, at: { x: number; y: number }): Promise<void> {
  const canvas = await page.getByTestId('canvas').boundingBox();
  await page.getByTestId(`palette-${kind}`).dragTo(page.getByTestId('canvas'), {
    targetPosition: { x: at.x - canvas!.x, y: at.y - canvas!.y },
  });
}

describe('editor in Chromium', { timeout: 120_000 }, () => {
  it('as a new user: a team of two agents between start and end, a prompt, a model, export', async () => {
    const { page, errors } = await open();
    // The flow settings stay open beside the canvas for the whole test; in a window this wide the
    // blank flow still fits whole at a readable zoom next to them.
    await page.setViewportSize({ width: 1920, height: 1080 });
    await openFlowSettings(page);
    await page.getByTestId('btn-fit').click();
    await page.waitForTimeout(400);
    await page.getByTestId('flow-name').fill('My first team');
    const start = (await page.getByTestId('node-start').boundingBox())!;
    const end = (await page.getByTestId('node-end').boundingBox())!;

    // A team between start and end, then two agents dropped into it.
    await dropKind(page, 'team', { x: start.x + start.width + 40, y: start.y - 80 });
    await page.getByTestId('node-team1').waitFor();
    await waitErrors(page, 1); // team-empty
    const team = (await page.getByTestId('node-team1').boundingBox())!;
    expect(team.x + team.width).toBeLessThan(end.x);
    await dropKind(page, 'agent', { x: team.x + 16, y: team.y + 48 });
    await dropKind(page, 'agent', { x: team.x + team.width / 2 + 8, y: team.y + 48 });
    await page.getByTestId('node-agent2').waitFor();

    // start → team → end.
    await connect(page, 'start-out', 'team1-in');
    await connect(page, 'team1-out', 'end-in');
    // Two agents and no entry: the validator says the team has several possible entries.
    await waitErrors(page, 1);
    const problem = page.getByTestId('problem').first();
    expect(await problem.getAttribute('data-code')).toBe('team-no-entry');
    expect(await page.getByTestId('node-team1').getAttribute('data-problem')).toBe('error');
    // Clicking the problem selects the team.
    await problem.click();
    expect(await page.getByTestId('inspector-id').textContent()).toBe('team1');
    // agent1 hands over to agent2: the flow is complete and the error disappears.
    await connect(page, 'agent1-out', 'agent2-in');
    await waitErrors(page, 0);
    expect(await page.getByTestId('node-team1').getAttribute('data-problem')).toBeNull();

    // A model in the flow settings; a literal secret is refused.
    await selectNode(page, 'end');
    await page.keyboard.press('Escape');
    await page.getByTestId('model-add').click();
    const key = page.getByTestId('model-model2-apiKey');
    await key.fill('sk-live-1234567890abcdefghijklmnop');
    await expect.poll(() => page.getByTestId('model-model2-apiKey-error').isVisible()).toBe(true);
    await key.fill('${env:OPENAI_API_KEY}');
    await page.getByTestId('model-model2-model').fill('gpt-4o-mini');

    // A prompt and a model on agent1.
    await selectNode(page, 'agent1');
    expect(await page.getByTestId('inspector-id').textContent()).toBe('agent1');
    await page.getByTestId('cfg-model').selectOption('model2');
    await page.getByTestId('cfg-role').fill('Drafts the answer');
    await page.getByTestId('cfg-prompt-0-text').fill('Draft an answer to {{task}} using {{nope}}');
    await expect.poll(() => page.getByText('Unknown variable: nope').isVisible()).toBe(true);
    await page.getByTestId('cfg-prompt-0-text').fill('Draft an answer to {{task}}.');
    // The face shows the one fact that matters for an agent: its model.
    await expect.poll(() => page.getByTestId('node-fact-agent1').textContent()).toBe('model: model2');

    await waitErrors(page, 0);
    const text = await exportText(page);
    const flow = JSON.parse(text) as Flow;
    // Positions depend on the window; they must place both agents inside the team.
    const team1 = flow.nodes.find((n) => n.id === 'team1')!;
    for (const id of ['agent1', 'agent2']) {
      const a = flow.nodes.find((n) => n.id === id)!;
      expect(a.parent).toBe('team1');
      expect(a.position.x).toBeGreaterThanOrEqual(0);
      expect(a.position.y).toBeGreaterThanOrEqual(0);
      expect(a.position.x).toBeLessThan(team1.size!.width);
      expect(a.position.y).toBeLessThan(team1.size!.height);
      // Below the team's head: a member dropped over it made the team grow upwards.
      expect(a.position.y).toBeGreaterThanOrEqual(48);
    }
    const at = (id: string) => flow.nodes.find((n) => n.id === id)!.position;
    const expected: Flow = {
      $schema: '../schemas/flow.schema.json',
      version: 1,
      id: 'untitled',
      name: 'My first team',
      models: {
        default: { provider: 'scripted' },
        model2: { provider: 'openai', model: 'gpt-4o-mini', apiKey: '${env:OPENAI_API_KEY}' },
      },
      nodes: [
        { id: 'start', kind: 'start', position: { x: 0, y: 160 }, config: {} },
        { id: 'end', kind: 'end', position: { x: 960, y: 160 }, config: { output: 'last' } },
        {
          id: 'team1',
          kind: 'team',
          position: at('team1'),
          // 520×320 as placed, grown to hold what was dropped into it.
          size: flow.nodes.find((n) => n.id === 'team1')!.size!,
          config: { mode: 'handover', termination: { maxTurns: 20 } },
        },
        {
          id: 'agent1',
          kind: 'agent',
          parent: 'team1',
          position: at('agent1'),
          config: {
            role: 'Drafts the answer',
            model: 'model2',
            prompt: [{ text: 'Draft an answer to {{task}}.' }],
          },
        },
        {
          id: 'agent2',
          kind: 'agent',
          parent: 'team1',
          position: at('agent2'),
          config: {
            role: 'Assistant',
            model: 'default',
            prompt: [{ text: 'You are a helpful assistant. Task: {{task}}' }],
          },
        },
      ],
      edges: [
        { id: 'e1', kind: 'handover', source: 'start', target: 'team1' },
        { id: 'e2', kind: 'handover', source: 'team1', target: 'end' },
        { id: 'e3', kind: 'handover', source: 'agent1', target: 'agent2' },
      ],
    };
    expect(text).toBe(serializeFlow(expected));
    const verdict = validateText(text);
    expect(verdict.errors).toEqual([]);
    expect(verdict.warnings).toEqual([]);
    await page.screenshot({ path: artifact('new-user.png') });
    expect(errors).toEqual([]);
  });

  const imports = [
    ...flowFiles.map((f) => ({ name: f, text: readFileSync(join(FLOWS, f), 'utf8') })),
    { name: 'rich-fixture.json', text: serializeFlow(richFlow()) },
  ];
  it.each(imports)(
    'imports $name: it renders, validates as the CLI does, and exports unchanged',
    async ({ name, text }) => {
      const { page, errors } = await open();
      await importFile(page, name, text);
      const flow = JSON.parse(text) as Flow;
      const verdict = validate(flow);
      // Renders: one element per node, one per drawable edge.
      await expect
        .poll(() => page.locator('.react-flow__node').count(), { timeout: 10_000 })
        .toBe(flow.nodes.length);
      await expect.poll(() => page.locator('.react-flow__edge').count()).toBe(flow.edges.length);
      await waitErrors(page, verdict.errors.length);
      expect(Number(await page.getByTestId('problem-count').getAttribute('data-warnings'))).toBe(
        verdict.warnings.length,
      );
      const out = await exportText(page);
      expect(out).toBe(serializeFlow(flow));
      if (text === serializeFlow(flow)) expect(out).toBe(text);
      await page.screenshot({ path: artifact(`flow-${name.replace(/\.json$/, '')}.png`) });
      expect(errors).toEqual([]);
    },
  );

  it('the template gallery lists the bundled flows and opens one', async () => {
    const { page } = await open();
    await page.getByTestId('btn-templates').click();
    const items = page.locator('[data-testid^="template-"]');
    const bundled = await items.count();
    // Flows added after the build are not bundled; every bundled one is still in flows/.
    for (let i = 0; i < bundled; i++) {
      const id = (await items.nth(i).getAttribute('data-testid'))!.replace(/^template-/, '');
      expect(flowFiles).toContain(`${id}.json`);
    }
    if (bundled === 0) {
      expect(await page.getByText('No flows in flows/').isVisible()).toBe(true);
      return;
    }
    const first = (await items.first().getAttribute('data-testid'))!.replace(/^template-/, '');
    await items.first().click();
    const flow = JSON.parse(readFileSync(join(FLOWS, `${first}.json`), 'utf8')) as Flow;
    await expect.poll(() => page.locator('.react-flow__node').count()).toBe(flow.nodes.length);
  });

  it('refuses an illegal connection with the reason, while dragging and on drop', async () => {
    const { page } = await open('?bench=1');
    await page.getByTestId('palette-agent').focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('node-agent1').waitFor();
    // Nothing selected: the inspector folds away and the end node is in view again.
    await page.keyboard.press('Escape');
    await page.locator('[data-testid="side-panel"][data-open="false"]').waitFor();
    const before = await page.evaluate(() =>
      (window as never as { __SB__: { serialize(): string } }).__SB__.serialize(),
    );
    // agent --delegate--> end: the shared rule says a delegate edge targets an agent or a team.
    const from = await centre(page, '[data-testid="handle-agent1-delegate"]');
    const to = await centre(page, '[data-testid="handle-end-in"]');
    await page.mouse.move(from.x, from.y);
    await page.mouse.down();
    await page.mouse.move(from.x + 5, from.y + 5, { steps: 2 });
    await page.mouse.move(to.x, to.y, { steps: 10 });
    const hint = page.getByTestId('connection-hint');
    await hint.waitFor();
    expect(await hint.textContent()).toContain(
      'a delegate edge goes from an agent to an agent or team, not from agent to end',
    );
    await page.mouse.up();
    const refusal = page.getByTestId('connection-refusal');
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('not from agent to end');
    const after = await page.evaluate(() =>
      (window as never as { __SB__: { serialize(): string } }).__SB__.serialize(),
    );
    expect(after).toBe(before);
    await expect.poll(() => page.locator('.react-flow__edge').count()).toBe(0);
  });

  it('undo and redo restore the exact document at every step', async () => {
    const { page } = await open('?bench=1');
    const doc = () =>
      page.evaluate(() => (window as never as { __SB__: { serialize(): string } }).__SB__.serialize());
    const snaps = [await doc()];
    // 1: add an agent by keyboard.
    await page.getByTestId('palette-agent').focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('node-agent1').waitFor();
    snaps.push(await doc());
    // 2: connect it.
    await connect(page, 'start-out', 'agent1-in');
    await expect.poll(doc).not.toBe(snaps[1]);
    snaps.push(await doc());
    // 3: move it.
    const a = await centre(page, '[data-testid="node-agent1"]');
    await mouseDrag(page, a, { x: a.x + 60, y: a.y + 90 });
    await expect.poll(doc).not.toBe(snaps[2]);
    snaps.push(await doc());
    // 4: edit its role.
    await selectNode(page, 'agent1');
    await page.getByTestId('cfg-role').fill('Reviewer');
    await expect.poll(doc).toContain('Reviewer');
    snaps.push(await doc());
    // 5: delete the end node.
    await selectNode(page, 'end');
    await page.keyboard.press('Delete');
    await expect.poll(doc).not.toContain('"end"');
    snaps.push(await doc());
    expect(new Set(snaps).size).toBe(snaps.length);

    for (let i = snaps.length - 2; i >= 0; i--) {
      await page.getByTestId('btn-undo').click();
      expect(await doc()).toBe(snaps[i]);
    }
    for (let i = 1; i < snaps.length; i++) {
      await page.keyboard.press('Control+Shift+Z');
      expect(await doc()).toBe(snaps[i]);
    }
  });

  it('copy/paste and duplicate renew ids and keep inner edges', async () => {
    const { page } = await open('?bench=1');
    await importFile(page, 'rich.json', serializeFlow(richFlow()));
    await page.getByTestId('node-team1').waitFor();
    await page.getByTestId('node-team1').locator('.sb-node-title').click();
    expect(await page.getByTestId('inspector-id').textContent()).toBe('team1');
    await page.keyboard.press('Control+d');
    await page.getByTestId('node-team2').waitFor();
    const flow = JSON.parse(
      await page.evaluate(() => (window as never as { __SB__: { serialize(): string } }).__SB__.serialize()),
    ) as Flow;
    const members = flow.nodes.filter((n) => n.parent === 'team2').map((n) => n.id);
    expect(members.sort()).toEqual(['agent1', 'decider1']);
    expect(flow.edges.filter((e) => members.includes(e.source) && members.includes(e.target))).toHaveLength(
      2,
    );
    expect(flow.nodes.find((n) => n.id === 'team2')!.config.entry).toBe('agent1');
  });

  it('unsaved work survives a reload', async () => {
    const { page } = await open();
    await openFlowSettings(page);
    await page.getByTestId('flow-name').fill('Kept across reloads');
    await page.getByTestId('palette-human').focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('node-human1').waitFor();
    await expect.poll(() => page.getByTestId('save-state').getAttribute('data-saved')).toBe('false');
    await page.waitForTimeout(600); // the autosave runs shortly after the last edit
    await page.reload();
    await page.getByTestId('node-human1').waitFor();
    await openFlowSettings(page);
    expect(await page.getByTestId('flow-name').inputValue()).toBe('Kept across reloads');
  });

  it('one run event re-renders at most two node components', async () => {
    const { page } = await open('?bench=1');
    const flow = {
      version: 1,
      id: 'many',
      name: 'many',
      models: { default: { provider: 'scripted' } },
      nodes: Array.from({ length: 120 }, (_, i) => ({
        id: `a${i}`,
        kind: 'agent',
        position: { x: (i % 12) * 220, y: Math.floor(i / 12) * 120 },
        config: { role: 'r', model: 'default', prompt: [] },
      })),
      edges: [],
    };
    await page.evaluate(
      (t) => (window as never as { __SB__: { load(t: string): void } }).__SB__.load(t),
      JSON.stringify(flow),
    );
    await expect.poll(() => page.locator('.react-flow__node').count()).toBe(120);
    await page.waitForTimeout(500);
    const counts = () =>
      page.evaluate(() => {
        const c = (window as never as { __SB_RENDER_COUNTS__: Record<string, number> }).__SB_RENDER_COUNTS__;
        const copy = { ...c };
        for (const k of Object.keys(c)) delete c[k];
        return copy;
      });
    await page.evaluate(() =>
      (
        window as never as { __SB__: { runState: { applyRunEvent(e: object): void } } }
      ).__SB__.runState.applyRunEvent({
        type: 'node.started',
        nodeId: 'a3',
      }),
    );
    await page.waitForTimeout(300);
    await counts();
    await page.evaluate(() =>
      (
        window as never as { __SB__: { runState: { applyRunEvent(e: object): void } } }
      ).__SB__.runState.applyRunEvent({
        type: 'node.started',
        nodeId: 'a7',
      }),
    );
    await expect.poll(() => page.getByTestId('node-a7').getAttribute('data-run-active')).toBe('true');
    const c = await counts();
    expect(c).toEqual({ a3: 1, a7: 1 });
    expect(await page.getByTestId('node-a3').getAttribute('data-run-active')).toBeNull();
  });

  it('screenshots an example flow in light and dark themes', async () => {
    const { page } = await open();
    const file = flowFiles[0];
    await importFile(
      page,
      file ?? 'rich.json',
      file ? readFileSync(join(FLOWS, file), 'utf8') : serializeFlow(richFlow()),
    );
    await page.getByTestId('btn-layout').click();
    await page.waitForTimeout(800);
    await page.getByTestId('btn-fit').click();
    await page.waitForTimeout(400);
    const light = artifact('editor-light.png');
    await page.screenshot({ path: light });
    await page.getByTestId('btn-theme').click();
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    await page.waitForTimeout(200);
    await page.screenshot({ path: artifact('editor-dark.png') });
    expect(readFileSync(light).length).toBeGreaterThan(10_000);
    writeFileSync(artifact('editor-flow.json'), await exportText(page));
  });
});
