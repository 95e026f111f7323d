/**
 * An MCP server that asks during a tool call (a stock SDK McpServer over stdio, form
 * elicitation) is answered in the editor, in Chromium against the real server: the run waits
 * with the server's form, its defaults filled in; what the person accepts reaches the tool as the
 * elicitation's content; a decline reaches it as a decline; a wrong value is named on its field.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Flow } from '@switchboard/schemas';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveFlow } from '../../runtime/src/mcp/consent.js';
import { shutdownMcpPool } from '../../runtime/src/mcp/pool.js';
import { TrustStore } from '../../runtime/src/mcp/trust.js';
import { browserTests, WAIT } from './harness.js';

const SERVER = fileURLToPath(new URL('../mcp/fixtures/eliciting-server.mjs', import.meta.url));

const FLOW: Flow = {
  version: 1,
  id: 'elicit-editor',
  name: 'A tool that asks',
  models: {
    default: {
      provider: 'scripted',
      script: [
        { node: 'a1', toolCalls: [{ name: 't_e__confirm', args: {} }] },
        { fallback: true, text: 'done' },
      ],
    },
  },
  mcpServers: { e: { command: process.execPath, args: [SERVER] } },
  nodes: [
    { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
    { id: 't_e', kind: 'tool', position: { x: 260, y: 200 }, config: { server: 'e' } },
    {
      id: 'a1',
      kind: 'agent',
      position: { x: 260, y: 0 },
      config: { role: 'worker', model: 'default', prompt: [{ text: 'x' }] },
    },
    { id: 'end', kind: 'end', position: { x: 520, y: 0 }, config: {} },
  ],
  edges: [
    { id: 'e1', kind: 'handover', source: 'start', target: 'a1' },
    { id: 'g1', kind: 'tools', source: 't_e', target: 'a1' },
    { id: 'e2', kind: 'handover', source: 'a1', target: 'end' },
  ],
};

const t = browserTests('elicitation-form');
let home: string;
const saved = process.env.SWITCHBOARD_HOME;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'sb-elicit-home-'));
  process.env.SWITCHBOARD_HOME = home;
  approveFlow(new TrustStore(), FLOW);
});
afterAll(async () => {
  await shutdownMcpPool();
  if (saved === undefined) delete process.env.SWITCHBOARD_HOME;
  else process.env.SWITCHBOARD_HOME = saved;
  rmSync(home, { recursive: true, force: true });
});

async function putFlow(): Promise<void> {
  const r = await fetch(`${t.url}/api/flows/${FLOW.id}`, {
    method: 'PUT',
    headers: { origin: t.url, 'content-type': 'application/json' },
    body: JSON.stringify(FLOW),
  });
  expect(r.status).toBeLessThan(300);
}

/** What the eliciting tool got back, as its result says. */
async function toolAnswer(page: Page): Promise<unknown> {
  await page.locator('[data-testid="run-panel"][data-phase="completed"]').waitFor(WAIT);
  const runId = (await page.getByTestId('run-panel').getAttribute('data-run-id'))!;
  const r = await fetch(`${t.url}/api/runs/${runId}/events`);
  const { events } = (await r.json()) as { events: Array<{ type: string; result?: string }> };
  const result = events.find((e) => e.type === 'tool.result');
  return JSON.parse(result!.result!);
}

describe('elicitation from an MCP server, answered in the editor', { timeout: 180_000 }, () => {
  it('shows the form with its defaults; accept sends the content, decline a decline', async () => {
    await t.serve();
    await putFlow();
    const { page, errors } = await t.person(`/?flow=${FLOW.id}`);
    await page.getByTestId('btn-run').click();
    const form = page.getByTestId('elicit-form');
    await form.waitFor(WAIT);
    expect(await page.getByTestId('answer-question').textContent()).toBe('Confirm the name to use');
    expect(await page.getByTestId('elicit-name').inputValue()).toBe('Ada');
    expect(await page.getByTestId('elicit-ok').isChecked()).toBe(true);
    // A required field left empty is named, and nothing is sent.
    await page.getByTestId('elicit-name').fill('');
    await page.getByTestId('elicit-accept').click();
    await page.getByTestId('elicit-name-problem').waitFor(WAIT);
    expect(await page.getByTestId('elicit-name-problem').textContent()).toBe('Name: required');
    await page.getByTestId('elicit-name').fill('Grace');
    await page.getByTestId('elicit-ok').uncheck();
    await page.getByTestId('elicit-accept').click();
    expect(await toolAnswer(page)).toEqual({ action: 'accept', content: { name: 'Grace', ok: false } });

    await page.getByTestId('btn-run').click();
    await page.locator('[data-testid="run-panel"][data-phase="waiting"]').waitFor(WAIT);
    await page.getByTestId('elicit-decline').click();
    expect(await toolAnswer(page)).toEqual({ action: 'decline' });
    expect(errors).toEqual([]);
  });
});
