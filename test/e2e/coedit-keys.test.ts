/**
 * No keystroke is lost, seen from two real browsers (Debian's Chromium) on the real server:
 * two people type into two fields of one node, then both into one prompt, at 80 ms one-way
 * latency (a delaying TCP proxy in front of the server) and 150 ms per key, and without latency
 * at 10 ms per key. And an edit made while the server restarts, on a flow nobody had edited yet
 * (no room history on disk), survives: 5 of 5.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as netServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type SwitchboardServer } from '../../runtime/src/server/index.js';
import { simpleFlow } from '../server/helpers.js';
import { browserTests, DIST, selectNode, WAIT, watchErrors } from './harness.js';
import { type LatencyProxy, latencyProxy } from './latency-proxy.js';

const browsers = browserTests('coedit-keys');
let servers: SwitchboardServer[] = [];
let proxies: LatencyProxy[] = [];
let dirs: string[] = [];
afterEach(async () => {
  for (const p of proxies) await p.close();
  for (const s of servers) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  servers = [];
  proxies = [];
  dirs = [];
});

async function freePort(): Promise<number> {
  const srv = netServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** The server on `port` over `dir`, serving the editor; reachable also through `via` (a proxy). */
async function serveOn(dir: string, port: number, via?: number): Promise<SwitchboardServer> {
  const s = await createServer({
    dataDir: dir,
    port,
    editorDir: DIST,
    rooms: { saveDelayMs: 200, saveMaxDelayMs: 1000 },
    ...(via ? { allowedHosts: [`127.0.0.1:${via}`], allowedOrigins: [`http://127.0.0.1:${via}`] } : {}),
  });
  await s.listen();
  servers.push(s);
  return s;
}

async function putFlow(s: SwitchboardServer, port: number, id: string): Promise<void> {
  const r = await s.app.inject({
    method: 'PUT',
    url: `/api/flows/${id}`,
    headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json' },
    payload: JSON.stringify(laidOut(id)),
  });
  expect(r.statusCode).toBe(201);
}

/** `simpleFlow` with its nodes side by side, so that each can be clicked. */
function laidOut(id: string) {
  const f = simpleFlow(id);
  f.nodes.forEach((n, i) => {
    n.position = { x: i * 320, y: 0 };
  });
  return f;
}

/** A person with the flow open and the writer's inspector showing. */
async function open(base: string, id: string) {
  const context = await browsers.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${base}/?flow=${id}`);
  await page.locator(`[data-testid="presence"][data-room="${id}"][data-status="live"]`).waitFor(WAIT);
  await selectNode(page, 'writer');
  await page.getByTestId('cfg-role').waitFor(WAIT);
  return { page, errors };
}

/** Puts the caret at the end of a field. */
async function caretAtEnd(page: Page, testid: string): Promise<void> {
  await page.getByTestId(testid).click();
  await page.keyboard.press('Control+End');
  await page.keyboard.press('End');
}

/** Types at the end of a field, key by key. */
async function typeAtEnd(page: Page, testid: string, text: string, delay: number): Promise<void> {
  await caretAtEnd(page, testid);
  await page.keyboard.type(text, { delay });
}

const value = (page: Page, testid: string) => page.getByTestId(testid).inputValue();
const stored = (s: SwitchboardServer, id: string) =>
  s.store.catalog.data.flows[id]?.flow.nodes.find((n) => n.id === 'writer')?.config as
    | { role?: string; name?: string; prompt?: Array<{ text: string }> }
    | undefined;

async function twoPeopleType(latencyMs: number, delay: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-keys-'));
  dirs.push(dir);
  const port = await freePort();
  const proxy = latencyMs > 0 ? await latencyProxy(port, latencyMs) : undefined;
  if (proxy) proxies.push(proxy);
  const s = await serveOn(dir, port, proxy?.port);
  const base = `http://127.0.0.1:${proxy?.port ?? port}`;
  await putFlow(s, port, 'keys');
  const ada = await open(base, 'keys');
  const bob = await open(base, 'keys');
  const role0 = await value(ada.page, 'cfg-role');
  const prompt0 = await value(ada.page, 'cfg-prompt-0-text');

  // Two fields of one node at once.
  await Promise.all([
    typeAtEnd(ada.page, 'cfg-role', ' AAAA alpha', delay),
    typeAtEnd(bob.page, 'cfg-name', 'BBBB bravo', delay),
  ]);
  const role = `${role0} AAAA alpha`;
  for (const p of [ada.page, bob.page]) {
    await expect.poll(() => value(p, 'cfg-role'), WAIT).toBe(role);
    await expect.poll(() => value(p, 'cfg-name'), WAIT).toBe('BBBB bravo');
  }

  // One prompt, both typing at its end: both put their caret there, then type. (Someone who
  // puts the caret right after the last letter of a word another person is still typing
  // continues that word: where their letters go among the other's is then a tie.)
  await caretAtEnd(ada.page, 'cfg-prompt-0-text');
  await caretAtEnd(bob.page, 'cfg-prompt-0-text');
  await Promise.all([
    ada.page.keyboard.type(' AAAA alpha', { delay }),
    bob.page.keyboard.type(' BBBB bravo', { delay }),
  ]);
  await expect
    .poll(
      async () =>
        (await value(ada.page, 'cfg-prompt-0-text')) === (await value(bob.page, 'cfg-prompt-0-text')),
      WAIT,
    )
    .toBe(true);
  const prompt = await value(ada.page, 'cfg-prompt-0-text');
  // Every key is there, and each person's run is in one piece.
  expect(prompt.length).toBe(prompt0.length + 22);
  expect(prompt.startsWith(prompt0)).toBe(true);
  expect(prompt, JSON.stringify(prompt)).toContain(' AAAA alpha');
  expect(prompt, JSON.stringify(prompt)).toContain(' BBBB bravo');
  // And the server saved it.
  await expect.poll(() => stored(s, 'keys')?.prompt?.[0]?.text, WAIT).toBe(prompt);
  expect(stored(s, 'keys')?.role).toBe(role);
  expect(stored(s, 'keys')?.name).toBe('BBBB bravo');
  expect(ada.errors).toEqual([]);
  expect(bob.errors).toEqual([]);
}

describe('no keystroke is lost', { timeout: 240_000 }, () => {
  it('two people, two fields of one node, then one prompt: 80 ms one-way latency, 150 ms per key', async () => {
    await twoPeopleType(80, 150);
  });

  it('the same without latency at 10 ms per key', async () => {
    await twoPeopleType(0, 10);
  });

  it('an edit made while the server restarts survives on a never-edited flow, 5 of 5', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-keys-'));
    dirs.push(dir);
    const port = await freePort();
    let s = await serveOn(dir, port);
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 5; i++) {
      const id = `never-edited-${i}`;
      await putFlow(s, port, id);
      const p = await open(base, id);
      await p.page.locator('[data-testid="save-state"][data-room-save="saved"]').waitFor(WAIT);
      // The flow was opened, not changed: its room has no history on disk. The server goes.
      servers.splice(servers.indexOf(s), 1);
      await s.close();
      await p.page.locator(`[data-testid="presence"][data-status="offline"]`).waitFor(WAIT);
      await typeAtEnd(p.page, 'cfg-role', ` offline ${i}`, 20);
      const want = `writer role offline ${i}`;
      s = await serveOn(dir, port);
      await expect.poll(() => stored(s, id)?.role, WAIT).toBe(want);
      await p.page.locator(`[data-testid="presence"][data-status="live"]`).waitFor(WAIT);
      await p.page.locator('[data-testid="save-state"][data-room-save="saved"]').waitFor(WAIT);
      expect(await value(p.page, 'cfg-role')).toBe(want);
      expect(p.errors.filter((e) => !/WebSocket|ERR_CONNECTION_REFUSED/.test(e))).toEqual([]);
      await p.page.context().close();
    }
  });
});
