/**
 * Builders instead of JSON (issue 17, item 4), in Chromium against the real server: every decider
 * rule, prompt segment and guard condition of every shipped example opens in the condition
 * builder, and an edit made and undone there (or a trip through the JSON view) leaves the room's
 * flow byte-identical to the example; a decider's rule targets are picked from its own outgoing
 * edges; a rule added through the form is a valid condition with a picked route.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultRegistry } from '@switchboard/nodes';
import type { Flow } from '@switchboard/schemas';
import { configLayout, docToFlow } from '@switchboard/schemas/ydoc';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { conditionsIn } from '../../editor/src/model/conditionBuilder.js';
import type { JsonSchema } from '../../editor/src/model/schemaForm.js';
import { browserTests, ROOT, selectNode, WAIT } from './harness.js';

const L = configLayout(defaultRegistry);
const FLOWS = join(ROOT, 'flows');
const EXAMPLES = readdirSync(FLOWS)
  .filter((f) => f.endsWith('.json') && !f.endsWith('.tests.json'))
  .map((f) => JSON.parse(readFileSync(join(FLOWS, f), 'utf8')) as Flow);

const t = browserTests('builders');
const { serve, person } = t;

async function fromTemplate(id: string): Promise<string> {
  const r = await fetch(`${t.url}/api/flows/from-template/${id}`, {
    method: 'POST',
    headers: { origin: t.url },
  });
  expect(r.status).toBe(201);
  return ((await r.json()) as { id: string }).id;
}

/** The room's flow as the server holds it now. */
function roomFlow(id: string): Flow {
  const doc = t.server.rooms.docOf(id);
  if (!doc) throw new Error(`no room ${id}`);
  return docToFlow(doc, L);
}
const configText = (id: string, node: string) =>
  JSON.stringify(roomFlow(id).nodes.find((n) => n.id === node)?.config);

const tid = (path: string) => `cfg-${path.replace(/\./g, '-')}`;

/** Selects a node: the whole flow is fitted first, so that every node is on screen. */
async function select(page: Page, node: string): Promise<void> {
  await page.keyboard.press('Escape');
  await page.locator('.react-flow__pane').click({ position: { x: 5, y: 5 } });
  await page.keyboard.press('Shift+F');
  await page.waitForTimeout(300);
  await selectNode(page, node);
  await expect.poll(() => page.getByTestId('inspector-id').textContent(), WAIT).toBe(node);
}

describe('condition builders', { timeout: 300_000 }, () => {
  it('every condition of every shipped example opens in the builder and saves back byte-identical', async () => {
    await serve();
    let checked = 0;
    for (const example of EXAMPLES) {
      const withConditions = example.nodes
        .map((n) => ({
          node: n,
          paths: conditionsIn(defaultRegistry.get(n.kind)!.configSchema as unknown as JsonSchema, n.config),
        }))
        .filter((x) => x.paths.length > 0);
      if (withConditions.length === 0) continue;
      const id = await fromTemplate(example.id);
      const { page, errors } = await person(`/?flow=${id}`);
      await page.locator(`[data-testid="presence"][data-room="${id}"][data-status="live"]`).waitFor(WAIT);
      for (const { node, paths } of withConditions) {
        const original = JSON.stringify(node.config);
        expect(configText(id, node.id), `${example.id} ${node.id} as seeded`).toBe(original);
        await select(page, node.id);
        for (const [path, value] of paths) {
          const field = page.getByTestId(tid(path));
          await field.waitFor(WAIT);
          // Shown in the builder, not as JSON.
          await page.getByTestId(`${tid(path)}-b`).waitFor(WAIT);
          expect(await field.getByText('Shown as JSON').count(), `${example.id} ${node.id} ${path}`).toBe(0);
          // An edit reaches the room; undoing it by hand restores the exact bytes.
          const input = field.locator('input[aria-label="Field"]').first();
          const before = await input.inputValue();
          await input.click();
          await input.press('End');
          await input.type('Z');
          await expect.poll(() => configText(id, node.id), WAIT).not.toBe(original);
          expect(configText(id, node.id)).toContain(`${before}Z`);
          await input.press('Backspace');
          await expect.poll(() => configText(id, node.id), WAIT).toBe(original);
          // The JSON view holds the same condition, and back to the builder changes nothing.
          await page.getByTestId(`${tid(path)}-json-toggle`).click();
          const json = await page.getByTestId(`${tid(path)}-json`).inputValue();
          expect(JSON.parse(json)).toEqual(value);
          await page.getByTestId(`${tid(path)}-builder`).click();
          await page.getByTestId(`${tid(path)}-b`).waitFor(WAIT);
          checked++;
        }
        expect(configText(id, node.id), `${example.id} ${node.id} after the builder`).toBe(original);
      }
      // What the room saves to the catalog is the example's bytes again.
      const stored = () => t.server.store.catalog.data.flows[id]?.flow;
      for (const { node } of withConditions)
        await expect
          .poll(() => JSON.stringify(stored()?.nodes.find((n) => n.id === node.id)?.config), WAIT)
          .toBe(JSON.stringify(node.config));
      expect(errors).toEqual([]);
      await page.context().close();
    }
    expect(checked).toBeGreaterThanOrEqual(7);
  });

  it("a decider's rules pick their targets from its own outgoing edges, and a new rule is valid", async () => {
    await serve();
    const id = await fromTemplate('support-triage');
    const { page, errors } = await person(`/?flow=${id}`);
    await page.locator(`[data-testid="presence"][data-room="${id}"][data-status="live"]`).waitFor(WAIT);
    await select(page, 'triage');
    const triage = () => roomFlow(id).nodes.find((n) => n.id === 'triage')!;
    const rules = () => triage().config.rules as Array<{ when: unknown; to: unknown }>;
    const count = rules().length;

    // The first rule's target: a choice among the decider's handovers and "done", nothing typed.
    const to = page.getByTestId('cfg-rules-0-to');
    await to.waitFor(WAIT);
    const offered = await to
      .locator('input[type="checkbox"]')
      .evaluateAll((els) =>
        els.map((e) => (e.getAttribute('data-testid') ?? '').replace('cfg-rules-0-to-', '')),
      );
    expect(offered.sort()).toEqual(['done', 'to-billing', 'to-general', 'to-tech']);
    const first = rules()[0]!.to as string;
    const other = ['to-billing', 'to-general', 'to-tech'].find((e) => e !== first)!;
    await page.getByTestId(`cfg-rules-0-to-${first}`).uncheck();
    await page.getByTestId(`cfg-rules-0-to-${other}`).check();
    await expect.poll(() => rules()[0]!.to, WAIT).toBe(other);
    // Two targets make a list (run in parallel); back to one keeps a list of one.
    await page.getByTestId(`cfg-rules-0-to-${first}`).check();
    await expect.poll(() => rules()[0]!.to, WAIT).toEqual([other, first]);

    // A new rule: a comparison row to fill, and a target picked from the same edges.
    await page.getByTestId('cfg-rules-add').click();
    const n = count;
    await page.getByTestId(`cfg-rules-${n}-when-b`).waitFor(WAIT);
    const row = page.getByTestId(`cfg-rules-${n}-when`);
    await row.locator('input[aria-label="Field"]').fill('last.json.priority');
    await row.locator('select[aria-label="Operator"]').selectOption('gte');
    await row.locator('input[aria-label="Value"]').fill('3');
    await page.getByTestId(`cfg-rules-${n}-to-to-tech`).check();
    await expect
      .poll(() => JSON.stringify(rules()[n]), WAIT)
      .toBe(JSON.stringify({ when: { path: 'last.json.priority', op: 'gte', value: 3 }, to: 'to-tech' }));
    // "+ Or" makes a group; the group's join switches between all and any.
    await page.getByTestId(`cfg-rules-${n}-when-b-or`).click();
    await expect.poll(() => Object.keys(rules()[n]!.when as object), WAIT).toEqual(['any']);
    await page.getByTestId(`cfg-rules-${n}-when-b-join`).selectOption('all');
    await expect.poll(() => Object.keys(rules()[n]!.when as object), WAIT).toEqual(['all']);
    // The flow has no problem on the new rule.
    const { validateFlow } = await import('@switchboard/schemas');
    const r = validateFlow(roomFlow(id), { kinds: defaultRegistry });
    expect(r.errors.filter((e) => e.path.startsWith(`/nodes/1/config/rules/${n}`))).toEqual([]);
    expect(errors).toEqual([]);
  });
});
