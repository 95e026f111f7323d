/**
 * Editor benchmark in real Chromium against the production build (`pnpm bench:editor`).
 * Measures, for a generated flow of 1,000 nodes and 1,500 edges: time to first render, frame
 * times while panning, zooming and dragging a node (median, p95), page memory; frame time at
 * 500 nodes against 50 (gate: ≤ 2x); node components re-rendered by one run event (gate: ≤ 2).
 * Typing in the inspector: key-to-frame p50/p95 at 50, 500 and 1,000 nodes (gate: p95 at 1,000
 * ≤ 2x p95 at 50); open time at 1,000 and 5,000 nodes (gate: 5,000 ≤ 3 s); bundle sizes from the
 * build manifest (gate: main chunk ≤ 500 KB).
 * `--only typing,open,bundle,frames` runs a part. Exits non-zero when a gate fails.
 */
import { type Browser, type CDPSession, chromium, type Page } from 'playwright-core';
import { bundleSizes } from './bundle.js';
import { generateFlow } from './generate.js';
import { serveStatic } from './static.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

type Stats = { median: number; p95: number; frames: number };

function stats(deltas: number[]): Stats {
  const s = [...deltas].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
  return { median: round(at(0.5)), p95: round(at(0.95)), frames: s.length };
}

const round = (v: number) => Math.round(v * 10) / 10;

interface SbWindow {
  __SB__: { load(t: string): void; runState: { applyRunEvent(e: object): void } };
  __SB_RENDER_COUNTS__: Record<string, number>;
  __frames?: number[];
  __recording?: boolean;
}

// Page-side code is passed as text: tsx (esbuild keepNames) would wrap named inner functions
// in a `__name` helper that does not exist in the page.
const START_FRAMES = `(() => {
  window.__frames = [];
  window.__recording = true;
  let last = performance.now();
  const tick = (t) => {
    window.__frames.push(t - last);
    last = t;
    if (window.__recording) requestAnimationFrame(tick);
  };
  requestAnimationFrame((t) => { last = t; requestAnimationFrame(tick); });
})()`;

async function startFrames(page: Page): Promise<void> {
  await page.evaluate(START_FRAMES);
}

async function stopFrames(page: Page): Promise<Stats> {
  const frames = await page.evaluate(() => {
    const w = window as unknown as SbWindow;
    w.__recording = false;
    return w.__frames ?? [];
  });
  return stats(frames);
}

async function openWith(browser: Browser, url: string, nodes: number, edges: number) {
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  await page.goto(`${url}/?bench=1`);
  await page.getByTestId('node-start').waitFor();
  const text = JSON.stringify(generateFlow(nodes, edges));
  await page.evaluate((t) => {
    (window as unknown as { __benchText: string }).__benchText = t;
  }, text);
  const ms = await openTime(page);
  // The whole flow in view (the readable Fit would show only the part around the start node).
  await page.getByTestId('ctl-fit-all').click();
  await page.waitForTimeout(800);
  return { page, firstRender: round(ms) };
}

/**
 * Open time: from load() (the text parsed into the document) until the view is fitted on the
 * new flow (the canvas counts its fits in `data-fits`) and that frame is painted.
 */
async function openTime(page: Page): Promise<number> {
  return (await page.evaluate(`new Promise((resolve) => {
    const canvas = document.querySelector('[data-testid="canvas"]');
    const before = canvas.dataset.fits;
    const t0 = performance.now();
    window.__SB__.load(window.__benchText);
    const check = () => {
      if (canvas.dataset.fits !== before)
        requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - t0), 0));
      else requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  })`)) as number;
}

// Key to frame: from the keydown's timestamp to just after the next frame that follows it.
const WATCH_KEYS = `(() => {
  window.__k2f = [];
  if (window.__k2fWatching) return;
  window.__k2fWatching = true;
  document.addEventListener('keydown', (e) => {
    const t0 = e.timeStamp;
    requestAnimationFrame(() => {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => window.__k2f.push(performance.now() - t0);
      ch.port2.postMessage(0);
    });
  }, true);
})()`;

/** Pauses between keys: mostly quick typing, now and then long enough for debounced work to run. */
const KEY_GAPS = [45, 80, 60, 130, 50, 400, 70, 90];

/** Types into an agent's role field in the inspector and returns key-to-frame stats. */
async function typing(page: Page, nodeId: string, keys = 48): Promise<Stats> {
  await page.evaluate(
    (id) =>
      (window as unknown as { __SB__: { store: { select(s: object): void } } }).__SB__.store.select({
        nodes: [id],
      }),
    nodeId,
  );
  const field = page.getByTestId('cfg-role');
  await field.click();
  await page.keyboard.press('End');
  await page.evaluate(WATCH_KEYS);
  const text = 'the quick brown fox jumps over the lazy dog ';
  for (let i = 0; i < keys; i++) {
    await page.keyboard.press(text[i % text.length] === ' ' ? 'Space' : text[i % text.length]!);
    await page.waitForTimeout(KEY_GAPS[i % KEY_GAPS.length]!);
  }
  await page.waitForTimeout(500);
  const k2f = (await page.evaluate('window.__k2f')) as number[];
  return stats(k2f);
}

async function pane(page: Page): Promise<{ x: number; y: number }> {
  // Top-left corner of the canvas lies in fitView's padding: always empty pane.
  const box = (await page.locator('.react-flow__pane').boundingBox())!;
  return { x: box.x + 6, y: box.y + 6 };
}

async function pan(page: Page): Promise<Stats> {
  const p = await pane(page);
  await startFrames(page);
  await page.mouse.move(p.x, p.y);
  await page.mouse.down();
  for (let i = 1; i <= 60; i++) await page.mouse.move(p.x + i * 5, p.y + i * 3);
  for (let i = 60; i >= 0; i--) await page.mouse.move(p.x + i * 5, p.y + i * 3);
  await page.mouse.up();
  return stopFrames(page);
}

async function zoom(page: Page): Promise<Stats> {
  const box = (await page.locator('.react-flow__pane').boundingBox())!;
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await startFrames(page);
  for (let i = 0; i < 30; i++) {
    await page.mouse.wheel(0, -60);
    await page.waitForTimeout(16);
  }
  for (let i = 0; i < 30; i++) {
    await page.mouse.wheel(0, 60);
    await page.waitForTimeout(16);
  }
  return stopFrames(page);
}

async function drag(page: Page, nodeId: string): Promise<Stats> {
  const box = (await page.getByTestId(`node-${nodeId}`).boundingBox())!;
  const from = { x: box.x + box.width / 2, y: box.y + 6 };
  await startFrames(page);
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  for (let i = 1; i <= 60; i++) await page.mouse.move(from.x + i * 4, from.y + i * 2);
  await page.mouse.up();
  return stopFrames(page);
}

async function heapMB(cdp: CDPSession): Promise<number> {
  await cdp.send('HeapProfiler.collectGarbage');
  const { metrics } = await cdp.send('Performance.getMetrics');
  const used = metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? 0;
  return round(used / 1024 / 1024);
}

async function rendersForOneRunEvent(page: Page, a: string, b: string): Promise<number> {
  const event = (nodeId: string) =>
    page.evaluate(
      (id) =>
        (window as unknown as SbWindow).__SB__.runState.applyRunEvent({ type: 'node.started', nodeId: id }),
      nodeId,
    );
  await event(a);
  await page.waitForTimeout(300);
  await page.evaluate(() => {
    const c = (window as unknown as SbWindow).__SB_RENDER_COUNTS__;
    for (const k of Object.keys(c)) delete c[k];
  });
  await event(b);
  await page.waitForTimeout(300);
  return page.evaluate(() =>
    Object.values((window as unknown as SbWindow).__SB_RENDER_COUNTS__).reduce((s, n) => s + n, 0),
  );
}

const ONLY = (() => {
  const i = process.argv.indexOf('--only');
  return i >= 0 ? new Set((process.argv[i + 1] ?? '').split(',')) : undefined;
})();
const part = (name: string) => !ONLY || ONLY.has(name);

async function main() {
  const results: Record<string, unknown> = {};
  const gates: Record<string, { value: number; pass: boolean }> = {};
  if (part('bundle')) {
    const b = bundleSizes();
    const kb = (n: number) => round(n / 1024);
    results.bundle = {
      mainKB: kb(b.main.bytes),
      firstLoadKB: kb(b.firstLoadBytes),
      chunksKB: Object.fromEntries(
        b.chunks.map((c) => [`${c.file}${c.firstLoad ? ' (first load)' : ''}`, kb(c.bytes)]),
      ),
    };
    gates['main chunk ≤ 500 KB'] = { value: kb(b.main.bytes), pass: b.main.bytes <= 500 * 1024 };
  }
  const server = await serveStatic();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  try {
    if (part('frames')) {
      const big = await openWith(browser, server.url, 1000, 1500);
      const cdp = await big.page.context().newCDPSession(big.page);
      await cdp.send('Performance.enable');
      results['1000 nodes / 1500 edges'] = {
        firstRenderMs: big.firstRender,
        pan: await pan(big.page),
        zoom: await zoom(big.page),
        drag: await drag(big.page, 'n1'),
        heapMB: await heapMB(cdp),
        rendersPerRunEvent: await rendersForOneRunEvent(big.page, 'n10', 'n11'),
        domNodes: await big.page.evaluate(() => document.getElementsByTagName('*').length),
      };
      await big.page.close();

      const pans: Record<number, Stats> = {};
      for (const n of [50, 500]) {
        const o = await openWith(browser, server.url, n, Math.round(n * 1.5));
        await pan(o.page); // warm-up
        pans[n] = await pan(o.page);
        results[`${n} nodes`] = {
          firstRenderMs: o.firstRender,
          pan: pans[n],
          drag: await drag(o.page, 'n1'),
        };
        await o.page.close();
      }
      const ratio = round(pans[500]!.median / pans[50]!.median);
      const renders = (results['1000 nodes / 1500 edges'] as { rendersPerRunEvent: number })
        .rendersPerRunEvent;
      gates['frame time 500 vs 50 nodes (median pan) ≤ 2x'] = { value: ratio, pass: ratio <= 2 };
      gates['node renders for one run event ≤ 2'] = { value: renders, pass: renders <= 2 && renders > 0 };
    }
    if (part('typing')) {
      const typed: Record<number, Stats> = {};
      for (const n of [50, 500, 1000]) {
        const o = await openWith(browser, server.url, n, Math.round(n * 1.5));
        await typing(o.page, 'n1', 12); // warm-up
        typed[n] = await typing(o.page, 'n2');
        await o.page.close();
      }
      results['typing in the inspector, key to frame (ms)'] = typed;
      const ratio = round(typed[1000]!.p95 / typed[50]!.p95);
      gates['typing p95 at 1000 vs 50 nodes ≤ 2x'] = { value: ratio, pass: ratio <= 2 };
    }
    if (part('open')) {
      // Wall time, and the main thread's busy time during it (CDP TaskDuration): on a shared
      // machine the second says more about the editor than the first.
      const open: Record<number, { wallMs: number; mainThreadMs: number }> = {};
      for (const n of [1000, 5000]) {
        const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
        await page.goto(`${server.url}/?bench=1`);
        await page.getByTestId('node-start').waitFor();
        await page.evaluate(
          (t) => {
            (window as unknown as { __benchText: string }).__benchText = t;
          },
          JSON.stringify(generateFlow(n, Math.round(n * 1.5))),
        );
        const cdp = await page.context().newCDPSession(page);
        await cdp.send('Performance.enable');
        const busy = async () =>
          (await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'TaskDuration')?.value ??
          0;
        const before = await busy();
        const wallMs = round(await openTime(page));
        open[n] = { wallMs, mainThreadMs: round(((await busy()) - before) * 1000) };
        await page.close();
      }
      results['open time (ms)'] = open;
      gates['5000 nodes open ≤ 3000 ms'] = { value: open[5000]!.wallMs, pass: open[5000]!.wallMs <= 3000 };
    }
  } finally {
    await browser.close();
    await server.close();
  }
  results.gates = gates;
  console.log(JSON.stringify(results, null, 2));
  if (Object.values(gates).some((g) => !g.pass)) {
    console.error('A benchmark gate failed.');
    process.exit(1);
  }
}

await main();
