/**
 * A headless run attached to the editor: `switchboard run flows/support-triage.json --attach URL`
 * in a child process streams its run to the real server; an editor open on the flow in Debian's
 * Chromium follows it live (node glow, transcript, counters, "headless, attached from …"), a
 * person answers its human node on the page, and the headless process completes with that
 * answer. The history lists the run as headless.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Flow } from '@switchboard/schemas';
import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { browserTests, ROOT, WAIT } from './harness.js';

const CLI = fileURLToPath(new URL('../crash/cli-main.ts', import.meta.url));
const RUNTIME = join(ROOT, 'runtime');
const TRIAGE = join(ROOT, 'flows', 'support-triage.json');
const EXAMPLE = (
  (JSON.parse(readFileSync(TRIAGE, 'utf8')) as Flow).metadata as { examples: Array<{ input: string }> }
).examples[0]!.input;

const srv = browserTests('attach');
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});

function headless(url: string) {
  const child = spawn(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', CLI, 'run', TRIAGE, '--input', EXAMPLE, '--attach', url],
    { cwd: RUNTIME, env: { ...process.env, SWITCHBOARD_TOKEN: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  return { exited, out: () => out, err: () => err, kill: () => child.kill('SIGKILL') };
}

async function phase(page: Page, want: string): Promise<void> {
  await page.locator(`[data-testid="run-panel"][data-phase="${want}"]`).waitFor(WAIT);
}

describe('a headless run attached to the editor', { timeout: 180_000 }, () => {
  it('is seen live in the browser and answered there; the headless process completes with that answer', async () => {
    await srv.serve();
    const { page, errors } = await srv.person('/?flow=support-triage');
    await page
      .locator('[data-testid="presence"][data-room="support-triage"][data-status="live"]')
      .waitFor(WAIT);

    const p = headless(srv.url);
    // The page follows the new run of its flow by itself, and marks it as headless.
    await phase(page, 'waiting');
    const badge = page.getByTestId('run-attached');
    await badge.waitFor(WAIT);
    expect(await badge.textContent()).toBe(`headless, attached from ${hostname()}`);
    expect(await badge.getAttribute('data-state')).toBe('connected');
    const runId = (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;
    expect(srv.server.store.catalog.data.runs[runId]).toMatchObject({
      source: 'attach',
      flowId: 'support-triage',
    });
    // Live on the canvas and in the transcript: the human node glows and waits, the path is lit.
    const approval = page.getByTestId('node-approval');
    expect(await approval.getAttribute('data-run-active')).toBe('true');
    expect(await approval.getAttribute('data-run-status')).toBe('waiting');
    for (const id of ['triage', 'billing-agent', 'refund-writer'])
      expect(await page.getByTestId(`node-${id}`).getAttribute('data-run-status'), id).toBe('completed');
    expect(await page.getByTestId('answer-question').textContent()).toContain('Send this refund reply?');
    // The node counters come from the attached run's events, as for any run.
    const counters = page.getByTestId('node-counters-refund-writer');
    await counters.waitFor(WAIT);
    expect(Number(await counters.getAttribute('data-turns'))).toBeGreaterThanOrEqual(1);
    expect(await counters.textContent()).toMatch(/1 turn/);
    expect(await page.getByTestId('transcript-entry').count()).toBeGreaterThan(5);
    expect(p.err()).toContain(`as run ${runId}`);

    // Answered on the page: the command reaches the headless process, which completes.
    await page.getByTestId('answer-option-yes').click();
    expect(await p.exited).toBe(0);
    expect(p.err()).toContain('attach: answer from the editor');
    await phase(page, 'completed');
    const rec = srv.server.store.catalog.data.runs[runId]!;
    expect(rec.status).toBe('completed');
    expect(p.out().trim()).toBe(String(rec.output).trim());
    expect(await page.getByTestId('run-output').textContent()).toContain(String(rec.output).trim());
    expect(
      await page.locator('[data-testid="transcript-entry"][data-type="input.received"]').textContent(),
    ).toContain('yes');
    expect(await page.getByTestId('node-sender').getAttribute('data-run-status')).toBe('completed');
    // The page holds every event the server stored for it.
    const log = srv.server.store.readEvents(runId, 0);
    await expect
      .poll(async () => Number(await page.getByTestId('run-panel').getAttribute('data-last-seq')), WAIT)
      .toBe(log.at(-1)!.seq);

    // The history lists it as a headless run.
    await page.getByTestId('btn-history').click();
    const row = page.locator(`[data-testid="history-run"][data-run-id="${runId}"]`);
    await row.waitFor(WAIT);
    const tag = row.getByTestId('history-attached');
    expect(await tag.textContent()).toBe(`headless · ${hostname()}`);
    expect(await row.getAttribute('data-status')).toBe('completed');
    expect(errors).toEqual([]);
  });

  it('shows when the headless process is gone: detached, a command answered with a named error, then abandoned', async () => {
    await srv.serve();
    // A short grace period, so that the abandonment is seen in the test.
    srv.server.attached.limits.graceMs = 8000;
    const { page } = await srv.person('/?flow=support-triage');
    await page
      .locator('[data-testid="presence"][data-room="support-triage"][data-status="live"]')
      .waitFor(WAIT);
    const p = headless(srv.url);
    await phase(page, 'waiting');
    const badge = page.getByTestId('run-attached');
    await page.locator('[data-testid="run-attached"][data-state="connected"]').waitFor(WAIT);
    p.kill();
    await p.exited;
    await page.locator('[data-testid="run-attached"][data-state="detached"]').waitFor(WAIT);
    expect(await badge.textContent()).toBe(
      `headless on ${hostname()}, detached: commands wait for it to reconnect`,
    );
    await page.getByTestId('answer-option-yes').click();
    const problem = page.getByTestId('run-problem');
    await problem.waitFor(WAIT);
    expect(await problem.textContent()).toMatch(/runs headless on .*, which is not connected now/);
    await phase(page, 'interrupted');
    await page.locator('[data-testid="run-attached"][data-state="abandoned"]').waitFor(WAIT);
    const runId = (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;
    expect(srv.server.store.catalog.data.runs[runId]?.error?.code).toBe('attach_abandoned');
  });
});
