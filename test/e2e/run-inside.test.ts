/**
 * Seeing inside a run, in Chromium against the real server: support-triage on its scripted
 * models streams text onto the node that is answering; after the run, the counters on every node
 * face equal `GET /api/runs/:id/nodes`; selecting the refund writer opens its trace, with the
 * system prompt it was sent; a breakpoint stop puts the glow and the pause badge on its node.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow, NodeSummary } from '@switchboard/schemas';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { artifact, browserTests, ROOT, selectNode, WAIT } from './harness.js';

const TRIAGE = JSON.parse(readFileSync(join(ROOT, 'flows', 'support-triage.json'), 'utf8')) as Flow;
const writer = TRIAGE.nodes.find((n) => n.id === 'refund-writer')!;
const WRITER_PROMPT = (writer.config as { prompt: Array<{ text: string }> }).prompt[0]!.text;

const srv = browserTests('run-inside');
const { serve, person } = srv;

async function phase(page: Page, want: string): Promise<void> {
  await page.locator(`[data-testid="run-panel"][data-phase="${want}"]`).waitFor(WAIT);
}

async function inRoom(page: Page, room: string): Promise<void> {
  await page
    .locator(`[data-testid="presence"][data-room="${room}"][data-status="live"][data-peers="1"]`)
    .waitFor(WAIT);
}

/** Records, in the page, every text a node's stream line shows, as it changes. */
async function recordStreams(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { __streams: Array<[string, string]> };
    w.__streams = [];
    const note = (el: Element | null) => {
      const id = el?.getAttribute('data-testid') ?? '';
      if (id.startsWith('node-stream-')) w.__streams.push([id.slice(12), el!.textContent ?? '']);
    };
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.type === 'characterData') note(r.target.parentElement);
        r.addedNodes.forEach((n) => {
          if (n.nodeType === 1) note(n as Element);
          else note(n.parentElement);
        });
      }
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
}

async function streams(page: Page, nodeId: string): Promise<string[]> {
  const all = await page.evaluate(
    () => (window as unknown as { __streams: Array<[string, string]> }).__streams,
  );
  return all.filter(([id]) => id === nodeId).map(([, t]) => t);
}

async function nodesOf(runId: string): Promise<NodeSummary[]> {
  const res = await fetch(`${srv.url}/api/runs/${runId}/nodes`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { nodes: NodeSummary[] }).nodes;
}

describe('inside a run, on the canvas', { timeout: 180_000 }, () => {
  it('streams onto the node, then node counters equal GET /api/runs/:id/nodes and the refund writer’s trace shows its system prompt', async () => {
    await serve();
    const { page, errors } = await person('/?flow=support-triage');
    await inRoom(page, 'support-triage');
    await page.getByTestId('run-pace').selectOption('300');
    await recordStreams(page);
    await page.getByTestId('btn-run').click();
    await phase(page, 'waiting');
    await page.getByTestId('answer-option-yes').click();
    await phase(page, 'completed');
    const runId = (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;
    // The reply being generated appeared on the face of the node generating it, piece by piece.
    const seen = await streams(page, 'refund-writer');
    const reply = 'Dear customer, you were charged twice for invoice INV-1042.';
    expect(seen.length, JSON.stringify(seen)).toBeGreaterThan(1);
    for (const text of seen)
      expect(reply.startsWith(text.slice(0, reply.length)) || text.startsWith(reply)).toBe(true);
    expect(seen[0]!.length).toBeLessThan(seen.at(-1)!.length);
    // Streaming is over: no node shows a half reply.
    await expect.poll(() => page.locator('[data-testid^="node-stream-"]').count(), WAIT).toBe(0);

    const nodes = await nodesOf(runId);
    expect(nodes.map((n) => n.nodeId)).toEqual(
      expect.arrayContaining([
        'start',
        'triage',
        'billing-agent',
        'refund-writer',
        'approval',
        'sender',
        'end',
      ]),
    );
    for (const n of nodes) {
      const face = page.getByTestId(`node-counters-${n.nodeId}`);
      await face.waitFor(WAIT);
      const attr = async (a: string) => await face.getAttribute(a);
      expect(
        {
          turns: Number(await attr('data-turns')),
          calls: Number(await attr('data-calls')),
          in: Number(await attr('data-tokens-in')),
          out: Number(await attr('data-tokens-out')),
          failures: Number(await attr('data-failures')),
          elapsed: Number(await attr('data-elapsed-ms')),
          status: await attr('data-status'),
        },
        n.nodeId,
      ).toEqual({
        turns: n.turns,
        calls: n.calls,
        in: n.promptTokens,
        out: n.completionTokens,
        failures: n.failures,
        elapsed: n.elapsedMs,
        status: n.status,
      });
    }
    const billing = nodes.find((n) => n.nodeId === 'billing-agent')!;
    expect(billing).toMatchObject({ turns: 1, calls: 2, status: 'completed' });
    expect(await page.getByTestId('node-counters-billing-agent').textContent()).toContain('1 turn');

    // The refund writer's trace: the system prompt it was sent, and its reply.
    await selectNode(page, 'refund-writer');
    const trace = page.getByTestId('trace-panel');
    await trace.waitFor(WAIT);
    expect(await trace.getAttribute('data-node')).toBe('refund-writer');
    const system = trace.locator('[data-testid="trace-message"][data-role="system"]').first();
    expect(await system.textContent()).toContain(WRITER_PROMPT);
    expect(
      await trace.locator('[data-testid="trace-part"][data-kind="reply"]').first().textContent(),
    ).toContain('Dear customer');
    // The guard that checks the writer's replies is in its trace too.
    expect(await trace.locator('[data-testid="trace-part"][data-kind="request"]').count()).toBeGreaterThan(0);
    await page.screenshot({ path: artifact('run-inside-trace.png') });
    expect(errors).toEqual([]);
  });

  it('a breakpoint stop puts the glow and the pause badge on the node it stopped before', async () => {
    await serve();
    const { page, errors } = await person('/?flow=support-triage');
    await inRoom(page, 'support-triage');
    await selectNode(page, 'refund-writer');
    await page.getByTestId('btn-breakpoint').click();
    await page.getByTestId('run-pace').selectOption('0');
    await page.getByTestId('btn-run').click();
    await phase(page, 'paused');
    const node = page.getByTestId('node-refund-writer');
    expect(await node.getAttribute('data-run-active')).toBe('true');
    expect(await node.getAttribute('data-run-status')).toBe('paused');
    await page.getByTestId('node-paused-refund-writer').waitFor(WAIT);
    // The node before it is done and no longer glows.
    expect(await page.getByTestId('node-billing-agent').getAttribute('data-run-active')).toBeNull();
    await page.screenshot({ path: artifact('run-inside-breakpoint.png') });
    await page.getByTestId('btn-resume').click();
    await phase(page, 'waiting');
    expect(await page.getByTestId('node-paused-refund-writer').count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('a past run opened from the history shows its path; a waiting run is cancelled from there', async () => {
    await serve();
    const { page, errors } = await person('/?flow=support-triage');
    await inRoom(page, 'support-triage');
    await page.getByTestId('run-pace').selectOption('0');
    // A billing run (answered), then a technical one.
    await page.getByTestId('btn-run').click();
    await phase(page, 'waiting');
    const billingRun = (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;
    await page.getByTestId('answer-option-yes').click();
    await phase(page, 'completed');
    await page.getByTestId('run-input').fill('The app crashes on start since yesterday');
    await page.getByTestId('btn-run').click();
    await page
      .locator(`[data-testid="run-panel"][data-phase="completed"]:not([data-run-id="${billingRun}"])`)
      .waitFor(WAIT);
    expect(await page.getByTestId('node-diagnoser').getAttribute('data-run-status')).toBe('completed');
    expect(await page.getByTestId('node-billing-agent').getAttribute('data-run-status')).toBe('idle');

    await page.getByTestId('btn-history').click();
    const rows = page.getByTestId('history-run');
    await expect.poll(() => rows.count(), WAIT).toBe(2);
    const billingRow = page.locator(`[data-testid="history-run"][data-run-id="${billingRun}"]`);
    expect(await billingRow.getAttribute('data-status')).toBe('completed');
    await billingRow.getByTestId('history-open').click();
    await page
      .locator(`[data-testid="run-panel"][data-run-id="${billingRun}"][data-phase="completed"]`)
      .waitFor(WAIT);
    await page.locator('[data-testid="run-opened"][data-how="history"]').waitFor(WAIT);
    // Its path, from its log: the billing branch ran, the technical one did not.
    for (const id of ['triage', 'billing-agent', 'refund-writer', 'approval', 'sender', 'end'])
      await page.locator(`[data-testid="node-${id}"][data-run-status="completed"]`).waitFor(WAIT);
    for (const id of ['diagnoser', 'fixer', 'generalist'])
      expect(await page.getByTestId(`node-${id}`).getAttribute('data-run-status'), id).toBe('idle');
    // Its counters and traces too.
    expect(Number(await page.getByTestId('node-counters-refund-writer').getAttribute('data-turns'))).toBe(1);
    await page.screenshot({ path: artifact('run-inside-history.png') });

    // The two runs compared: each one's path on the canvas, per node the difference.
    const techRun = (await rows.nth(0).getAttribute('data-run-id'))!;
    await billingRow.getByTestId('history-pick').check();
    await page
      .locator(`[data-testid="history-run"][data-run-id="${techRun}"]`)
      .getByTestId('history-pick')
      .check();
    await page.getByTestId('btn-compare').click();
    await page
      .locator(`[data-testid="compare-panel"][data-a="${billingRun}"][data-b="${techRun}"]`)
      .waitFor(WAIT);
    expect(await page.getByTestId('node-billing-agent').getAttribute('data-compare')).toBe('a');
    expect(await page.getByTestId('node-diagnoser').getAttribute('data-compare')).toBe('b');
    expect(await page.getByTestId('node-triage').getAttribute('data-compare')).toBe('both');
    expect(await page.getByTestId('node-generalist').getAttribute('data-compare')).toBeNull();
    const endRow = page.locator('[data-testid="compare-row"][data-node="end"]');
    expect(await endRow.getAttribute('data-side')).toBe('both');
    await page.screenshot({ path: artifact('run-inside-compare.png') });
    await page.getByTestId('btn-compare-close').click();
    expect(await page.getByTestId('node-triage').getAttribute('data-compare')).toBeNull();

    // A run left waiting for an answer is cancelled from the history.
    await page.getByTestId('run-input').fill('I was charged twice on invoice INV-1042, please refund');
    await page.getByTestId('btn-run').click();
    await phase(page, 'waiting');
    const waiting = (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;
    const row = page.locator(`[data-testid="history-run"][data-run-id="${waiting}"]`);
    await row.waitFor(WAIT);
    await row.getByTestId('history-cancel').click();
    await phase(page, 'cancelled');
    await page
      .locator(`[data-testid="history-run"][data-run-id="${waiting}"][data-status="cancelled"]`)
      .waitFor(WAIT);
    expect(srv.server.store.catalog.data.runs[waiting]!.status).toBe('cancelled');
    expect(errors).toEqual([]);
  });

  it('the scrubber at the middle of a run shows the node then active; arrow keys step one event', async () => {
    await serve();
    const { page, errors } = await person('/?flow=support-triage');
    await inRoom(page, 'support-triage');
    await page.getByTestId('run-pace').selectOption('0');
    await page.getByTestId('btn-run').click();
    await phase(page, 'waiting');
    await page.getByTestId('answer-option-yes').click();
    await phase(page, 'completed');
    const runId = (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;
    const log = srv.server.store.readEvents(runId, 0);
    /** The node a canvas following the run showed as active just after event `seq`. */
    const activeAt = (seq: number) => {
      let active: string | undefined;
      for (const e of log) {
        if (e.seq > seq) break;
        if (e.type === 'node.started' && e.parentRunId === undefined) active = e.nodeId;
        if (e.type === 'run.completed' || e.type === 'run.failed') active = undefined;
      }
      return active;
    };
    const middle = log.find((e) => e.type === 'node.started' && e.nodeId === 'refund-writer')!.seq;
    const scrubber = page.getByTestId('run-scrubber');
    await scrubber.evaluate((el, v) => {
      const input = el as HTMLInputElement;
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, String(v));
      input.dispatchEvent(new Event('input', { bubbles: true }));
    }, middle);
    await page.locator(`[data-testid="run-scrubber-label"][data-seq="${middle}"]`).waitFor(WAIT);
    const activeNow = () => page.locator('[data-run-active="true"]').getAttribute('data-testid');
    expect(await activeNow()).toBe('node-refund-writer');
    expect(await page.getByTestId('node-sender').getAttribute('data-run-status')).toBe('idle');
    expect(await page.getByTestId('node-billing-agent').getAttribute('data-run-status')).toBe('completed');
    // One event back with the keyboard.
    await scrubber.focus();
    await page.keyboard.press('ArrowLeft');
    await page.locator(`[data-testid="run-scrubber-label"][data-seq="${middle - 1}"]`).waitFor(WAIT);
    expect(await activeNow()).toBe(`node-${activeAt(middle - 1)}`);
    await page.screenshot({ path: artifact('run-inside-scrub.png') });
    // Back to live: the run as it ended.
    await page.getByTestId('btn-scrub-live').click();
    await expect.poll(() => page.locator('[data-run-active="true"]').count(), WAIT).toBe(0);
    expect(await page.getByTestId('node-sender').getAttribute('data-run-status')).toBe('completed');
    expect(errors).toEqual([]);
  });

  it('the history filters by status and text, marks a waiting run nobody moved for long as stale, and cancels it', async () => {
    await serve();
    const { page, errors } = await person('/?flow=support-triage');
    await inRoom(page, 'support-triage');
    await page.getByTestId('run-pace').selectOption('0');
    await page.getByTestId('run-input').fill('The app crashes on start since yesterday');
    await page.getByTestId('btn-run').click();
    await phase(page, 'completed');
    const tech = (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;
    await page.getByTestId('run-input').fill('I was charged twice on invoice INV-1042, please refund');
    await page.getByTestId('btn-run').click();
    await phase(page, 'waiting');
    const waiting = (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;
    // Nobody answered for an hour (the clock of its entry moved back, as an old visit leaves it).
    const rec = srv.server.store.catalog.data.runs[waiting]!;
    rec.updatedAt = new Date(Date.now() - 3_600_000).toISOString();

    await page.getByTestId('btn-history').click();
    const row = (id: string) => page.locator(`[data-testid="history-run"][data-run-id="${id}"]`);
    await row(waiting).waitFor(WAIT);
    expect(await row(waiting).getAttribute('data-stale')).toBe('true');
    expect(await row(tech).getAttribute('data-stale')).toBeNull();
    // Started from this editor: its person's name, not how.
    expect(await row(tech).getByTestId('history-who').getAttribute('data-named')).toBe('true');
    const ids = () =>
      page.getByTestId('history-run').evaluateAll((els) => els.map((e) => e.getAttribute('data-run-id')));
    await page.getByTestId('history-filter').selectOption('stale');
    await expect.poll(ids, WAIT).toEqual([waiting]);
    await page.getByTestId('history-filter').selectOption('completed');
    await expect.poll(ids, WAIT).toEqual([tech]);
    await page.getByTestId('history-filter').selectOption('all');
    // Text: a node of its path.
    await page.getByTestId('history-search').fill('diagnoser');
    await expect.poll(ids, WAIT).toEqual([tech]);
    await page.getByTestId('history-search').fill('approval');
    await expect.poll(ids, WAIT).toEqual([waiting]);
    await page.getByTestId('history-search').fill('');
    await expect.poll(ids, WAIT).toEqual([waiting, tech]);
    await page.screenshot({ path: artifact('run-inside-history-filter.png') });
    await row(waiting).getByTestId('history-cancel').click();
    await page
      .locator(`[data-testid="history-run"][data-run-id="${waiting}"][data-status="cancelled"]`)
      .waitFor(WAIT);
    expect(await row(waiting).getAttribute('data-stale')).toBeNull();
    expect(errors).toEqual([]);
  });
});
