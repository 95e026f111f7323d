/**
 * Seeing inside runs, in real Chromium against the real server and the editor's production build
 * (`pnpm bench:run-inside`):
 *  (a) opening a 10,000-event run from the history: click on "Open" to a usable canvas (the run
 *      shown completed, its counters on the node faces, the timeline at its last event);
 *  (b) scrub frames at 10,000 events: the work one playhead move costs (input event to layout
 *      done: the session's fold, React's render and commit, style and layout), p50/p95, over
 *      steps, jumps and a mouse drag; and the frame intervals during the drag;
 *  (c) counters and streamed text on the faces of a 100-node fan-out while its events stream:
 *      frame intervals (requestAnimationFrame deltas), frames over 33 ms, long tasks.
 * Gates: (a) ≤ 1 s, (b) p95 ≤ 50 ms; exits non-zero when one fails. Figures go to stdout and to
 * results-run-inside.json next to this file. `SB_BENCH_ONLY=fanout` runs (c) alone (stdout only);
 * `SB_BENCH_TRACE=1` prints where (c)'s main-thread time went, `SB_BENCH_PROFILE=1` a CPU profile.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Flow, FlowEdgeT, FlowNodeT } from '@switchboard/schemas';
import { type Browser, type CDPSession, chromium, type Page } from 'playwright-core';
import { createServer } from '../../runtime/src/server/index.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
/** `SB_BENCH_DIST`: another build of the editor (a before/after comparison on the same machine load). */
const DIST = process.env.SB_BENCH_DIST ?? join(HERE, '..', 'dist');
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
/** Turns of the long run: about 8 events each. */
const LONG_TURNS = Number(process.env.SB_BENCH_TURNS ?? 1250);
const FANOUT = 100;

const round = (v: number) => Math.round(v * 10) / 10;
function pct(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return round(s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN);
}
const summary = (xs: readonly number[]) => ({
  p50: pct(xs, 0.5),
  p95: pct(xs, 0.95),
  max: round(Math.max(...xs)),
  n: xs.length,
});

const at = (x: number, y: number) => ({ x, y });
function agentNode(
  id: string,
  position: { x: number; y: number },
  extra: Partial<FlowNodeT> = {},
): FlowNodeT {
  return {
    id,
    kind: 'agent',
    position,
    config: { role: `${id}`, model: 'default', prompt: [{ text: `You are ${id}. Task: {{task}}` }] },
    ...extra,
  };
}
const handover = (source: string, target: string): FlowEdgeT => ({
  id: `${source}-${target}`,
  kind: 'handover',
  source,
  target,
});

/** A two-agent group chat of `turns` turns: about 8 events a turn. */
function longFlow(turns: number): Flow {
  return {
    version: 1,
    id: 'bench-long',
    name: 'Bench: long run',
    budgets: { maxSteps: turns * 4 + 100 },
    models: {
      default: {
        provider: 'scripted',
        script: [
          { node: 'alice', fallback: true, text: 'Alice: a point about the subject at hand.' },
          { node: 'bob', fallback: true, text: 'Bob: a reply to that point.' },
        ],
      },
    },
    nodes: [
      { id: 'start', kind: 'start', position: at(0, 100), config: {} },
      {
        id: 'room',
        kind: 'team',
        position: at(250, 0),
        config: { mode: 'groupChat', speaker: { strategy: 'roundRobin' }, termination: { maxTurns: turns } },
        size: { width: 500, height: 260 },
      },
      agentNode('alice', at(40, 60), { parent: 'room' }),
      agentNode('bob', at(280, 60), { parent: 'room' }),
      { id: 'end', kind: 'end', position: at(850, 100), config: {} },
    ],
    edges: [handover('start', 'room'), handover('room', 'end')],
  };
}

/** start → 100 agents at once → joiner → end; each reply streams 24 pieces over ~3 s. */
function fanoutFlow(n: number): Flow {
  const nodes: FlowNodeT[] = [
    { id: 'start', kind: 'start', position: at(0, 600), config: {} },
    agentNode('joiner', at(1800, 600)),
    { id: 'end', kind: 'end', position: at(2100, 600), config: {} },
  ];
  const edges: FlowEdgeT[] = [handover('joiner', 'end')];
  for (let i = 0; i < n; i++) {
    nodes.push(agentNode(`p${i}`, at(300 + (i % 10) * 140, (Math.floor(i / 10) - 0) * 130)));
    edges.push(handover('start', `p${i}`), handover(`p${i}`, 'joiner'));
  }
  const deltas = Array.from({ length: 24 }, (_, i) => `piece ${i + 1} `);
  return {
    version: 1,
    id: 'bench-fanout',
    name: 'Bench: fan-out',
    models: {
      default: {
        provider: 'scripted',
        latencyMs: 3000,
        script: [
          { node: 'joiner', fallback: true, text: 'joined', latencyMs: 0 },
          { fallback: true, text: deltas.join(''), deltas },
        ],
      },
    },
    nodes,
    edges,
  };
}

async function api(url: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const r = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

async function runToEnd(
  url: string,
  flowId: string,
  input: string,
): Promise<{ id: string; lastSeq: number }> {
  const { run } = (await api(url, 'POST', '/api/runs', { flowId, input })) as { run: { id: string } };
  for (;;) {
    const { run: r } = (await api(url, 'GET', `/api/runs/${run.id}`)) as {
      run: { status: string; lastSeq: number };
    };
    if (['completed', 'failed', 'cancelled', 'interrupted'].includes(r.status)) {
      if (r.status !== 'completed')
        throw new Error(`run ${run.id} ${r.status}: ${JSON.stringify((r as { error?: unknown }).error)}`);
      return { id: run.id, lastSeq: r.lastSeq };
    }
    await new Promise((res) => setTimeout(res, 200));
  }
}

// Page-side code is passed as text: tsx would wrap named inner functions in a `__name` helper
// that does not exist in the page.
const START_FRAMES = `(() => {
  window.__frames = [];
  window.__long = [];
  window.__recording = true;
  try {
    window.__po = new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); });
    window.__po.observe({ type: 'longtask', buffered: false });
  } catch {}
  let last = performance.now();
  const tick = (t) => {
    window.__frames.push(t - last);
    last = t;
    if (window.__recording) requestAnimationFrame(tick);
  };
  requestAnimationFrame((t) => { last = t; requestAnimationFrame(tick); });
})()`;
const STOP_FRAMES = `(() => {
  window.__recording = false;
  window.__po?.disconnect();
  return { frames: window.__frames, long: window.__long };
})()`;

/** Times each scrub input: capture on window (before React) to layout done after React's commit. */
const WATCH_SCRUB = `(() => {
  window.__scrub = [];
  let t0 = 0;
  window.addEventListener('input', (e) => { if (e.target?.dataset?.testid === 'run-scrubber') t0 = performance.now(); }, true);
  window.addEventListener('input', (e) => {
    if (e.target?.dataset?.testid !== 'run-scrubber') return;
    // React renders a discrete event's update before this bubbling listener on window runs;
    // a microtask later anything it deferred has run too. Then force style and layout.
    queueMicrotask(() => {
      document.body.getBoundingClientRect();
      void document.body.offsetHeight;
      window.__scrub.push(performance.now() - t0);
    });
  });
})()`;

/** Frame intervals of the page doing nothing for `ms`: what the machine allows (it is shared). */
async function idleFrames(page: Page, ms = 1500): Promise<ReturnType<typeof summary>> {
  await page.evaluate(START_FRAMES);
  await page.waitForTimeout(ms);
  const { frames } = (await page.evaluate(STOP_FRAMES)) as { frames: number[] };
  return summary(frames);
}

/** Stops the CPU profile and prints where the time went: self time by function, the top 25. */
async function topFunctions(cdp: CDPSession): Promise<void> {
  const { profile } = await cdp.send('Profiler.stop');
  const self = new Map<string, number>();
  const dt = new Map<number, number>();
  const samples = profile.samples ?? [];
  for (let i = 0; i < samples.length; i++)
    dt.set(samples[i]!, (dt.get(samples[i]!) ?? 0) + (profile.timeDeltas?.[i] ?? 0));
  for (const n of profile.nodes) {
    const f = n.callFrame;
    const k = `${f.functionName || '(anon)'} ${f.url.split('/').pop()}:${f.lineNumber}:${f.columnNumber}`;
    self.set(k, (self.get(k) ?? 0) + (dt.get(n.id) ?? 0) / 1000);
  }
  for (const [k, ms] of [...self].sort((x, y) => y[1] - x[1]).slice(0, 25))
    process.stderr.write(`${round(ms)} ms  ${k}\n`);
}

/**
 * From a trace of the fan-out: the page's main-thread CPU time (top-level tasks, thread time) per
 * frame it began, and the raster workers' CPU time (software raster with --disable-gpu).
 */
function cpuPerFrame(
  events: Array<{ name: string; ph: string; ts: number; dur?: number; tdur?: number; tid: number }>,
) {
  const main = events.find((e) => e.name === 'Layerize')?.tid;
  const xs = events.filter((e) => e.ph === 'X' && e.dur).sort((a, b) => a.ts - b.ts || b.dur! - a.dur!);
  let end = 0;
  let cpu = 0;
  let frames = 0;
  let raster = 0;
  let rasterTasks = 0;
  for (const e of xs) {
    if (e.name === 'RasterTask') {
      raster += e.tdur ?? e.dur!;
      rasterTasks++;
    }
    if (e.tid !== main) continue;
    if (e.name === 'WebFrameWidgetImpl::BeginMainFrame') frames++;
    if (e.ts >= end) {
      end = e.ts + e.dur!;
      cpu += e.tdur ?? e.dur!;
    }
  }
  return {
    framesBegun: frames,
    mainCpuMsPerFrame: round(cpu / 1000 / Math.max(1, frames)),
    mainCpuMs: round(cpu / 1000),
    rasterCpuMs: round(raster / 1000),
    rasterTasks,
  };
}

async function setScrub(page: Page, seq: number): Promise<void> {
  await page.evaluate((v) => {
    const input = document.querySelector('[data-testid="run-scrubber"]') as HTMLInputElement;
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, String(v));
    input.dispatchEvent(new Event('input', { bubbles: true }));
  }, seq);
}

/** Parts (a) and (b): a long run opened from the history, then scrubbed. */
async function historyAndScrub(
  url: string,
  browser: Browser,
  results: Record<string, unknown>,
  fails: string[],
): Promise<void> {
  // ---- (a) open a 10,000-event run from the history --------------------------------------
  const long = longFlow(LONG_TURNS);
  await api(url, 'PUT', `/api/flows/${long.id}`, long);
  process.stderr.write(`recording a run of ${LONG_TURNS} turns…\n`);
  const big = await runToEnd(url, long.id, 'Discuss the subject.');
  // A short run after it: the editor opens on that one, and the long one is opened from the history.
  const shortFlow = {
    ...long,
    nodes: long.nodes.map((n) =>
      n.id === 'room' ? { ...n, config: { ...n.config, termination: { maxTurns: 2 } } } : n,
    ),
  };
  await api(url, 'PUT', `/api/flows/${long.id}`, shortFlow);
  await runToEnd(url, long.id, 'Short.');
  process.stderr.write(`long run: ${big.lastSeq} events\n`);

  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const openMs: number[] = [];
  for (let i = 0; i < 3; i++) {
    await page.goto(`${url}/?flow=${long.id}`);
    await page.getByTestId('node-start').waitFor();
    await page.locator('[data-testid="run-panel"][data-phase="completed"]').waitFor();
    await page.getByTestId('btn-history').click();
    const row = page.locator(`[data-testid="history-run"][data-run-id="${big.id}"]`);
    await row.waitFor();
    const ms = (await page.evaluate(`new Promise((resolve) => {
      const button = document.querySelector('[data-testid="history-run"][data-run-id="${big.id}"] [data-testid="history-open"]');
      const t0 = performance.now();
      button.click();
      const ready = () =>
        document.querySelector('[data-testid="run-panel"][data-run-id="${big.id}"][data-phase="completed"]') &&
        document.querySelector('[data-testid="run-scrubber-label"][data-seq="${big.lastSeq}"]') &&
        document.querySelector('[data-testid="node-counters-alice"]');
      const check = () => {
        if (ready()) requestAnimationFrame(() => resolve(performance.now() - t0));
        else requestAnimationFrame(check);
      };
      requestAnimationFrame(check);
    })`)) as number;
    openMs.push(ms);
  }
  const turns = Number(await page.getByTestId('node-counters-alice').getAttribute('data-turns'));
  results.open = {
    events: big.lastSeq,
    tries: openMs.length,
    median: pct(openMs, 0.5),
    min: round(Math.min(...openMs)),
    max: round(Math.max(...openMs)),
    aliceTurnsOnFace: turns,
  };
  if (pct(openMs, 0.5) > 1000)
    fails.push(`opening a ${big.lastSeq}-event run took ${pct(openMs, 0.5)} ms (> 1000)`);

  // ---- (b) scrub frames at 10,000 events ---------------------------------------------------
  // With a node selected, so its trace follows the playhead too.
  if (!process.env.SB_BENCH_NO_SELECT) await page.getByTestId('node-alice').click();
  await page.evaluate(WATCH_SCRUB);
  const last = big.lastSeq;
  const cdp = process.env.SB_BENCH_PROFILE ? await page.context().newCDPSession(page) : undefined;
  if (cdp) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.start');
  }
  // Steps one event at a time in the middle, then jumps across the whole run.
  for (let s = Math.floor(last / 2); s < Math.floor(last / 2) + 60; s++) await setScrub(page, s);
  let x = 12345;
  for (let i = 0; i < 120; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    await setScrub(page, 1 + (x % (last - 1)));
  }
  const stepsAndJumps = (await page.evaluate('window.__scrub.splice(0)')) as number[];
  if (cdp) await topFunctions(cdp);
  // A drag of the playhead with the mouse, across the run and back.
  const idleBeforeDrag = await idleFrames(page);
  const box = (await page.getByTestId('run-scrubber').boundingBox())!;
  await page.evaluate(START_FRAMES);
  await page.mouse.move(box.x + 4, box.y + box.height / 2);
  await page.mouse.down();
  for (let i = 0; i <= 100; i++)
    await page.mouse.move(box.x + 4 + ((box.width - 8) * i) / 100, box.y + box.height / 2);
  for (let i = 100; i >= 0; i--)
    await page.mouse.move(box.x + 4 + ((box.width - 8) * i) / 100, box.y + box.height / 2);
  await page.mouse.up();
  const drag = (await page.evaluate(STOP_FRAMES)) as { frames: number[]; long: number[] };
  const dragWork = (await page.evaluate('window.__scrub.splice(0)')) as number[];
  const all = [...stepsAndJumps, ...dragWork];
  results.scrub = {
    events: last,
    work: summary(all),
    stepsAndJumps: summary(stepsAndJumps),
    dragWork: summary(dragWork),
    dragFrameIntervals: summary(drag.frames),
    idleFrameIntervals: idleBeforeDrag,
    dragLongTasks: drag.long.length,
  };
  if (pct(all, 0.95) > 50) fails.push(`scrub p95 ${pct(all, 0.95)} ms (> 50)`);
  if (errors.length) fails.push(`page errors: ${errors.join('; ')}`);
  await page.close();
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'sb-bench-run-'));
  const server = await createServer({ dataDir: dir, host: '127.0.0.1', port: 0, editorDir: DIST });
  const { url } = await server.listen();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  const results: Record<string, unknown> = {};
  const fails: string[] = [];
  try {
    // `SB_BENCH_ONLY=fanout` runs part (c) alone (the others take a minute to record their run).
    if (process.env.SB_BENCH_ONLY !== 'fanout') await historyAndScrub(url, browser, results, fails);

    // ---- (c) counters live during a 100-node fan-out ----------------------------------------
    const fan = fanoutFlow(FANOUT);
    await api(url, 'PUT', `/api/flows/${fan.id}`, fan);
    const p2 = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    const errors2: string[] = [];
    p2.on('pageerror', (e) => errors2.push(e.message));
    await p2.goto(`${url}/?flow=${fan.id}`);
    await p2.getByTestId('node-p99').waitFor();
    await p2.getByTestId('ctl-fit-all').click();
    await p2.waitForTimeout(500);
    // Counts how often counters and stream lines on the faces change while the run goes.
    await p2.evaluate(`(() => {
      window.__faceUpdates = 0;
      new MutationObserver((rs) => { window.__faceUpdates += rs.length; })
        .observe(document.querySelector('.react-flow') ?? document.body, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['data-turns', 'data-tokens-out', 'data-elapsed-ms'] });
    })()`);
    await p2
      .getByTestId('run-pace')
      .selectOption('0')
      .catch(() => {});
    const idleBeforeRun = await idleFrames(p2);
    const cdp2 = process.env.SB_BENCH_PROFILE ? await p2.context().newCDPSession(p2) : undefined;
    const traceFile = join(tmpdir(), 'sb-bench-fanout-trace.json');
    if (process.env.SB_BENCH_TRACE)
      await browser.startTracing(p2, {
        path: traceFile,
        // `cc` and the timeline's disabled-by-default category carry the raster tasks.
        categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink', 'v8', 'cc'],
      });
    if (cdp2) {
      await cdp2.send('Profiler.enable');
      await cdp2.send('Profiler.start');
    }
    await p2.evaluate(START_FRAMES);
    await p2.getByTestId('btn-run').click();
    await p2.locator('[data-testid="run-panel"][data-phase="completed"]').waitFor({ timeout: 120_000 });
    const live = (await p2.evaluate(STOP_FRAMES)) as { frames: number[]; long: number[] };
    if (cdp2) await topFunctions(cdp2);
    if (process.env.SB_BENCH_TRACE) {
      await browser.stopTracing();
      // Main-thread time by trace event (complete events, self time not separated): what kind of work it was.
      const { readFileSync } = await import('node:fs');
      const trace = JSON.parse(readFileSync(traceFile, 'utf8')) as {
        traceEvents: Array<{
          name: string;
          ph: string;
          ts: number;
          dur?: number;
          tdur?: number;
          tid: number;
        }>;
      };
      const by = new Map<string, number>();
      for (const e of trace.traceEvents)
        if (e.ph === 'X' && e.dur) by.set(e.name, (by.get(e.name) ?? 0) + e.dur / 1000);
      for (const [k, ms] of [...by].sort((x, y) => y[1] - x[1]).slice(0, 30))
        process.stderr.write(`${round(ms)} ms  [trace] ${k}\n`);
      results.fanoutTrace = cpuPerFrame(trace.traceEvents);
    }
    const faceUpdates = (await p2.evaluate('window.__faceUpdates')) as number;
    const runId = (await p2.getByTestId('run-panel').getAttribute('data-run-id'))!;
    const { lastSeq } = ((await api(url, 'GET', `/api/runs/${runId}`)) as { run: { lastSeq: number } }).run;
    const deltas = (
      (await api(url, 'GET', `/api/runs/${runId}/events?limit=10000`)) as { events: Array<{ type: string }> }
    ).events.length;
    const over = (ms: number) => live.frames.filter((f) => f > ms).length;
    results.fanout = {
      nodes: FANOUT,
      durableEvents: lastSeq,
      eventsOnDisk: deltas,
      frameIntervals: summary(live.frames),
      idleFrameIntervals: idleBeforeRun,
      framesOver33ms: over(33.4),
      framesOver50ms: over(50),
      longTasks: live.long.length,
      longestTaskMs: live.long.length ? round(Math.max(...live.long)) : 0,
      faceUpdates,
    };
    if (errors2.length) fails.push(`page errors: ${errors2.join('; ')}`);
    await p2.close();
  } finally {
    await browser.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
  // The machine is shared: how busy it was says how to read the figures.
  const [m1, m5, m15] = (await import('node:os')).loadavg().map(round);
  results.loadAverage = { m1, m5, m15 };
  const text = JSON.stringify(results, null, 2);
  process.stdout.write(`${text}\n`);
  // A partial run does not overwrite the file's figures of the others.
  if (process.env.SB_BENCH_ONLY !== 'fanout')
    writeFileSync(join(HERE, 'results-run-inside.json'), `${text}\n`);
  if (fails.length) {
    process.stderr.write(`FAILED: ${fails.join('; ')}\n`);
    process.exitCode = 1;
  }
}

await main();
