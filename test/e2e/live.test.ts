/**
 * The editor served by the real Switchboard server (REST, run events over WebSocket, Yjs rooms)
 * in Debian's Chromium: an example flow opened from the gallery runs on its scripted models,
 * its nodes and edges light up in order, a person answers its human node from the page, and it
 * completes with its answer; a dropped connection resumes from its last seq; breakpoints, step,
 * inject and cancel from the UI; two people on one flow co-edit and watch the same run; and a
 * static build explains why it cannot run.
 *
 * Waits are on conditions (attributes the editor sets), never fixed sleeps, so that a loaded
 * machine only makes the test slower.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { artifact, browserTests, openFlowSettings, ROOT, selectNode, serveStatic, WAIT } from './harness.js';

const TRIAGE = JSON.parse(readFileSync(join(ROOT, 'flows', 'support-triage.json'), 'utf8')) as Flow;
const EXAMPLE = (TRIAGE.metadata as { examples: Array<{ input: string }> }).examples[0]!.input;
/** The path the billing example takes, in the order its nodes start. */
const BILLING_PATH = [
  'start',
  'triage',
  'billing',
  'billing-agent',
  'refund-writer',
  'approval',
  'sender',
  'end',
];

/** The server of the running test (its getters), and the people on it. */
const srv = browserTests('live');
const { serve, person, newContext } = srv;

async function phase(page: Page, want: string): Promise<void> {
  await page.locator(`[data-testid="run-panel"][data-phase="${want}"]`).waitFor(WAIT);
}

/** A new flow from a template gets a room of its own: `<template>-xxxx`; returns its id. */
async function inNewRoom(page: Page, template: string): Promise<string> {
  const p = page.locator(`[data-testid="presence"][data-room^="${template}-"][data-status="live"]`);
  await p.waitFor(WAIT);
  const room = (await p.getAttribute('data-room'))!;
  expect(room).toMatch(new RegExp(`^${template}-[a-z2-9]{4}$`));
  return room;
}

async function inRoom(page: Page, room: string, peers = 1): Promise<void> {
  await page
    .locator(`[data-testid="presence"][data-room="${room}"][data-status="live"][data-peers="${peers}"]`)
    .waitFor(WAIT);
}

/** Records, in the page, every node that becomes the active node, in order. */
async function recordActivations(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { __activated: string[] };
    w.__activated = [];
    new MutationObserver((records) => {
      for (const r of records) {
        const el = r.target as HTMLElement;
        if (el.getAttribute('data-run-active') === 'true')
          w.__activated.push((el.dataset.testid ?? '').replace(/^node-/, ''));
      }
    }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ['data-run-active'] });
  });
}

const activations = (page: Page) =>
  page.evaluate(() => (window as unknown as { __activated: string[] }).__activated);

async function panel(page: Page) {
  const p = page.getByTestId('run-panel');
  return {
    runId: (await p.getAttribute('data-run-id')) ?? '',
    lastSeq: Number(await p.getAttribute('data-last-seq')),
    events: Number(await p.getAttribute('data-events')),
  };
}

/** The page holds every event of the run: as many as the log, up to its last seq. */
async function expectWholeRun(page: Page): Promise<string> {
  const p = await panel(page);
  const log = srv.server.store.readEvents(p.runId, 0);
  expect(p.runId).toMatch(/^r_/);
  expect(p.events).toBe(log.length);
  expect(p.lastSeq).toBe(log.at(-1)!.seq);
  return p.runId;
}

function isSubsequence(sub: string[], of: string[]): boolean {
  let i = 0;
  for (const x of of) if (x === sub[i]) i++;
  return i === sub.length;
}

describe('running flows from the editor', { timeout: 180_000 }, () => {
  it('runs support-triage from the gallery on scripted models: nodes light up in order, a person answers, it completes', async () => {
    await serve();
    const { page, errors } = await person('/');
    await page.getByTestId('btn-templates').click();
    await page.getByTestId('template-support-triage').click();
    await page.getByTestId('node-triage').waitFor(WAIT);
    // A flow of its own, copied from the example (the example's room is nobody's to edit).
    const room = await inNewRoom(page, 'support-triage');
    expect(new URL(page.url()).searchParams.get('flow')).toBe(room);
    expect(await page.getByTestId('run-input').inputValue()).toBe(EXAMPLE);
    await recordActivations(page);

    await page.getByTestId('btn-run').click();
    await phase(page, 'waiting');
    // While it waits: the human node is active and waiting, the edge into it is lit.
    expect(await page.getByTestId('run-scripted').textContent()).toBe('SCRIPTED MODELS');
    const approval = page.getByTestId('node-approval');
    expect(await approval.getAttribute('data-run-active')).toBe('true');
    expect(await approval.getAttribute('data-run-status')).toBe('waiting');
    await page
      .locator('[data-testid="rf__edge-billing-done"] path.sb-edge-run-active')
      .waitFor({ ...WAIT, state: 'attached' });
    expect(await page.getByTestId('answer-question').textContent()).toContain('Send this refund reply?');
    await page.screenshot({ path: artifact('run-waiting.png') });

    await page.getByTestId('answer-option-yes').click();
    await phase(page, 'completed');
    const runId = await expectWholeRun(page);
    const rec = srv.server.store.catalog.data.runs[runId]!;
    expect(rec.status).toBe('completed');
    expect(await page.getByTestId('run-output').textContent()).toContain(rec.output as string);

    // Lit in the order the run took them (a frame may carry several starts: a subsequence);
    // the paced agents and the waiting person are each seen.
    const seen = await activations(page);
    expect(isSubsequence(seen, BILLING_PATH), seen.join(' ')).toBe(true);
    for (const id of ['billing-agent', 'refund-writer', 'approval', 'sender']) expect(seen).toContain(id);
    for (const id of BILLING_PATH)
      expect(await page.getByTestId(`node-${id}`).getAttribute('data-run-status'), id).toBe('completed');
    expect(await page.getByTestId('node-diagnoser').getAttribute('data-run-status')).toBe('idle');
    // (A short edge's path has no height: attached, not visible, is what to wait for.)
    for (const e of ['begin', 'to-billing', 'billing-done', 'approved', 'sent'])
      await page
        .locator(`[data-testid="rf__edge-${e}"] path.sb-edge-run-taken`)
        .waitFor({ ...WAIT, state: 'attached' });

    // The transcript: the customer's message, the agents' replies, the tool call, the answer.
    const entries = page.getByTestId('transcript-entry');
    const seqs = (await entries.evaluateAll((els) =>
      els.map((e) => Number(e.getAttribute('data-seq'))),
    )) as number[];
    expect(seqs.length).toBeGreaterThan(10);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(new Set(seqs).size).toBe(seqs.length);
    await expect
      .poll(() => page.locator('[data-testid="transcript-entry"][data-kind="tool"]').count())
      .toBeGreaterThan(0);
    expect(
      await page.locator('[data-testid="transcript-entry"][data-type="decision"]').count(),
    ).toBeGreaterThan(0);
    expect(
      await page.locator('[data-testid="transcript-entry"][data-type="input.received"]').textContent(),
    ).toContain('yes');
    await page.screenshot({ path: artifact('run-completed.png') });
    expect(errors).toEqual([]);
  });

  it('a dropped connection resubscribes with its last seq and misses nothing; only the nodes an event is about re-render', async () => {
    await serve();
    const { page, errors } = await person('/?flow=support-triage&bench=1');
    await inRoom(page, 'support-triage');
    const renders = () =>
      page.evaluate(() => {
        const c = (window as unknown as { __SB_RENDER_COUNTS__: Record<string, number> })
          .__SB_RENDER_COUNTS__;
        const copy = { ...c };
        for (const k of Object.keys(c)) delete c[k];
        return copy;
      });
    // Joining the room re-rendered every face; count from when the page has gone quiet.
    await expect.poll(async () => Object.keys(await renders()).length, WAIT).toBe(0);
    await page.getByTestId('btn-run').click();
    await expect.poll(async () => (await panel(page)).lastSeq, WAIT).toBeGreaterThan(3);
    type Hooks = { __SB__: { runs: { socket: { connections: number; dropConnection(): void } } } };
    const connections = () =>
      page.evaluate(() => (window as unknown as Hooks).__SB__.runs.socket.connections);
    // From the server's side (as a restart or a slow-consumer close would), then the page's;
    // each time the page connects anew and asks for what came after its last seq.
    srv.server.hub.closeAll();
    await expect.poll(connections, WAIT).toBe(2);
    await page.evaluate(() => (window as unknown as Hooks).__SB__.runs.socket.dropConnection());
    await expect.poll(connections, WAIT).toBe(3);
    await phase(page, 'waiting');
    await page.getByTestId('answer-option-yes').click();
    await phase(page, 'completed');
    const runId = await expectWholeRun(page);
    // Node faces re-render only for the events about them: at most two per node event (the
    // node losing the active mark and the one gaining it), and the rest of the canvas never.
    const counts = await renders();
    const nodeEvents = srv.server.store
      .readEvents(runId, 0)
      .filter((e) =>
        ['node.started', 'node.completed', 'node.failed', 'input.requested'].includes(e.type),
      ).length;
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(2 * nodeEvents);
    for (const idle of ['diagnoser', 'fixer', 'generalist', 'kb', 'readme'])
      expect(counts[idle] ?? 0, idle).toBe(0);
    // The browser logs the refused socket of a closing server; nothing else may go wrong.
    expect(errors.filter((e) => !/WebSocket/i.test(e))).toEqual([]);
  });

  it('breakpoint, inject, resume and cancel from the run panel', async () => {
    await serve();
    const { page, errors } = await person('/?flow=support-triage');
    await inRoom(page, 'support-triage');
    // A breakpoint on the node that sends the reply.
    await selectNode(page, 'sender');
    await page.getByTestId('btn-breakpoint').click();
    expect(await page.getByTestId('btn-breakpoint').getAttribute('aria-pressed')).toBe('true');
    expect(await page.getByTestId('node-sender').getAttribute('data-breakpoint')).toBe('true');
    await page.getByTestId('run-pace').selectOption('0');
    await page.getByTestId('btn-run').click();
    await phase(page, 'waiting');
    await page.getByTestId('answer-option-yes').click();
    await phase(page, 'paused');
    expect(await page.getByTestId('run-status').textContent()).toContain('breakpoint at sender');
    // The glow and the pause badge are on the node the run stopped before.
    expect(await page.getByTestId('node-sender').getAttribute('data-run-status')).toBe('paused');
    expect(await page.getByTestId('node-sender').getAttribute('data-run-active')).toBe('true');
    await page.getByTestId('node-paused-sender').waitFor(WAIT);
    expect(await page.getByTestId('node-approval').getAttribute('data-run-active')).toBeNull();
    // A message injected while paused reaches the run's transcript.
    await page.getByTestId('inject-text').fill('Please keep it short.');
    await page.getByTestId('btn-inject').click();
    await page
      .locator('[data-testid="transcript-entry"][data-type="message"]', { hasText: 'Please keep it short.' })
      .waitFor(WAIT);
    await page.getByTestId('btn-resume').click();
    await phase(page, 'completed');
    expect(await page.getByTestId('node-sender').getAttribute('data-run-status')).toBe('completed');
    await expectWholeRun(page);

    // A second run, cancelled while it waits for the person.
    await selectNode(page, 'sender');
    await page.getByTestId('btn-breakpoint').click();
    expect(await page.getByTestId('node-sender').getAttribute('data-breakpoint')).toBeNull();
    const first = (await panel(page)).runId;
    await page.getByTestId('btn-run').click();
    await expect.poll(async () => (await panel(page)).runId, WAIT).not.toBe(first);
    await phase(page, 'waiting');
    await page.getByTestId('btn-cancel').click();
    await phase(page, 'cancelled');
    expect(srv.server.store.catalog.data.runs[(await panel(page)).runId]!.status).toBe('cancelled');
    expect(errors).toEqual([]);
  });

  it('two people on one flow: edits travel both ways, selections show, both watch the same run live', async () => {
    await serve();
    const ada = await person('/');
    await ada.page.getByTestId('btn-templates').click();
    await ada.page.getByTestId('template-support-triage').click();
    const room = await inNewRoom(ada.page, 'support-triage');
    // Bob opens the link Ada's address bar shows.
    const bob = await person(`/${new URL(ada.page.url()).search}`);
    await inRoom(bob.page, room, 2);
    await inRoom(ada.page, room, 2);

    // Ada renames the flow; Bob sees it.
    await openFlowSettings(ada.page);
    await ada.page.getByTestId('flow-name').fill('Support triage, reviewed by Ada');
    await expect
      .poll(() => bob.page.getByTestId('flow-title').textContent(), WAIT)
      .toBe('Support triage, reviewed by Ada');
    // Bob adds an agent; Ada sees it. Bob selects the triage decider; Ada sees whose selection it is.
    await bob.page.getByTestId('palette-agent').focus();
    await bob.page.keyboard.press('Enter');
    await ada.page.getByTestId('node-agent1').waitFor(WAIT);
    await selectNode(bob.page, 'triage');
    const bobName = (await bob.page.getByTestId('peer-self').getAttribute('data-name'))!;
    await expect.poll(() => ada.page.getByTestId('node-peers-triage').textContent(), WAIT).toBe(bobName);
    // The new agent is not connected: delete it again so the flow stays valid to run.
    await selectNode(bob.page, 'agent1');
    await bob.page.keyboard.press('Delete');
    await expect.poll(() => ada.page.getByTestId('node-agent1').count(), WAIT).toBe(0);

    // Ada runs; Bob's panel follows the same run, Bob answers, both see it complete.
    await ada.page.getByTestId('btn-run').click();
    await phase(bob.page, 'waiting');
    expect((await panel(bob.page)).runId).toBe((await panel(ada.page)).runId);
    expect(await bob.page.getByTestId('node-approval').getAttribute('data-run-active')).toBe('true');
    await bob.page.getByTestId('answer-option-yes').click();
    await phase(ada.page, 'completed');
    await phase(bob.page, 'completed');
    const runId = await expectWholeRun(ada.page);
    expect(await expectWholeRun(bob.page)).toBe(runId);
    // The run used the flow as co-edited: the new name went along.
    expect(srv.server.store.catalog.data.runs[runId]!.flowName).toBe('Support triage, reviewed by Ada');
    await ada.page.screenshot({ path: artifact('coedit-ada.png') });
    await bob.page.screenshot({ path: artifact('coedit-bob.png') });
    expect(ada.errors).toEqual([]);
    expect(bob.errors).toEqual([]);
  });
});

describe('a renamed flow', { timeout: 180_000 }, () => {
  it('keeps its co-editors watching its runs under the new id', async () => {
    await serve();
    const ada = await person('/?flow=support-triage');
    await inRoom(ada.page, 'support-triage');
    const bob = await person('/?flow=support-triage');
    await inRoom(bob.page, 'support-triage', 2);
    await openFlowSettings(ada.page);
    await openFlowSettings(bob.page);
    await ada.page.getByTestId('flow-id').fill('support-triage-v2');
    await expect.poll(() => bob.page.getByTestId('flow-id').inputValue(), WAIT).toBe('support-triage-v2');
    await ada.page.getByTestId('run-pace').selectOption('1000');
    // Both have switched to watching the new id once the rename settled; then Ada runs.
    for (const p of [ada.page, bob.page])
      await p.locator('[data-testid="run-panel"][data-flow="support-triage-v2"]').waitFor(WAIT);
    await ada.page.getByTestId('btn-run').click();
    await phase(bob.page, 'running');
    expect((await panel(bob.page)).runId).toBe((await panel(ada.page)).runId);
    expect(srv.server.store.catalog.data.runs[(await panel(bob.page)).runId]!.flowId).toBe(
      'support-triage-v2',
    );
    expect(ada.errors).toEqual([]);
    expect(bob.errors).toEqual([]);
  });
});

describe('a static build', { timeout: 60_000 }, () => {
  it('cannot run: the Run button is disabled and says why', async () => {
    const stat = await serveStatic();
    try {
      const context = await newContext({ viewport: { width: 1200, height: 800 } });
      const page = await context.newPage();
      await page.goto(`${stat.url}/`);
      await page.getByTestId('node-start').waitFor(WAIT);
      expect(await page.getByTestId('btn-run').isDisabled()).toBe(true);
      expect(await page.getByTestId('run-offline').textContent()).toContain('pnpm start');
      expect(await page.getByTestId('presence').count()).toBe(0);
    } finally {
      await stat.close();
    }
  });
});
