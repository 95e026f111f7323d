/**
 * Pins from the command line: `switchboard run FLOW --pin NODE=RUN[:TURN] --data DIR`, the pins
 * file beside the flow written by `switchboard pin`, `--no-pins`, stale pins, and the errors
 * (unknown node or turn, a run of another flow, a bad pins file with its JSON path).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeRun } from '../flow-tests/helpers.js';
import { cli } from '../support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'sb-pins-cli-'));
const data = join(dir, 'data');
const FLOW = join(dir, 'routed.json');
const PINS = join(dir, 'routed.pins.json');

/** start → writer → d (llm decider) → a | b → end; the script decides what live nodes say. */
function routed(script: unknown[], writerPrompt = 'You write. Task: {{task}}', id = 'routed') {
  const agent = (nid: string, prompt: string) => ({
    id: nid,
    kind: 'agent',
    position: { x: 0, y: 0 },
    config: { role: nid, model: 'default', prompt: [{ text: prompt }] },
  });
  const e = (source: string, target: string, eid = `${source}-${target}`, description?: string) => ({
    id: eid,
    kind: 'handover',
    source,
    target,
    ...(description ? { config: { description } } : {}),
  });
  return {
    version: 1,
    id,
    name: 'Routed',
    models: { default: { provider: 'scripted', script } },
    nodes: [
      { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
      agent('writer', writerPrompt),
      {
        id: 'd',
        kind: 'decider',
        position: { x: 0, y: 0 },
        config: { strategy: 'llm', prompt: 'Route it.' },
      },
      agent('a', 'You are a.'),
      agent('b', 'You are b.'),
      { id: 'end', kind: 'end', position: { x: 0, y: 0 }, config: {} },
    ],
    edges: [
      e('start', 'writer'),
      e('writer', 'd'),
      e('d', 'a', 'to-a', 'drafts'),
      e('d', 'b', 'to-b', 'reviews'),
      e('a', 'end'),
      e('b', 'end'),
    ],
  };
}

const PAST = [
  { node: 'writer', text: 'draft one' },
  { node: 'd', json: { choice: 'to-b', reason: 'needs review' } },
  { node: 'b', text: 'reviewed by b' },
  { fallback: true, text: 'from a' },
];
const LIVE = [
  { node: 'writer', text: 'draft TWO' },
  { node: 'd', json: { choice: 'to-a', reason: 'fine' } },
  { node: 'b', text: 'reviewed by b' },
  { fallback: true, text: 'from a' },
];

let past: string;
let other: string;
beforeAll(async () => {
  writeFileSync(FLOW, JSON.stringify(routed(PAST)));
  past = await storeRun(data, FLOW, 'write it', {});
  const otherFile = join(dir, 'other.json');
  writeFileSync(otherFile, JSON.stringify(routed(PAST, undefined, 'other-flow')));
  other = await storeRun(data, otherFile, 'write it', {});
  // From here on the flow's models would say something else: only pins bring back the past.
  writeFileSync(FLOW, JSON.stringify(routed(LIVE)));
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const eventsOf = (out: string) =>
  out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as RunEvent);
const requested = (ev: RunEvent[]) => ev.filter((e) => e.type === 'model.request').map((e) => e.nodeId);

/** A run of FLOW stored in the data directory the way the server stores it, with pins. */
async function storePinnedRun(pins: unknown[]): Promise<string> {
  const { Store } = await import('../../runtime/src/store/store.js');
  const { RunManager } = await import('../../runtime/src/server/run-manager.js');
  const store = await Store.open(data);
  try {
    const runs = new RunManager({ store, humanInput: 'fail' });
    const rec = await runs.start({
      flow: JSON.parse(readFileSync(FLOW, 'utf8')),
      input: 'write it',
      source: 'cli',
      pins: pins as never,
    });
    await runs.settled(rec.id);
    return rec.id;
  } finally {
    await store.close();
  }
}

describe('switchboard run --pin / switchboard pin', () => {
  it('--pin NODE=RUN: the pinned nodes call no model, the run follows their recorded output', async () => {
    const unpinned = await cli('run', FLOW, '--input', 'write it', '--no-pins');
    expect(unpinned.code, unpinned.err).toBe(0);
    expect(unpinned.out.trim()).toBe('from a');

    const r = await cli(
      'run',
      FLOW,
      '--input',
      'write it',
      '--events',
      'jsonl',
      '--data',
      data,
      '--pin',
      `writer=${past}`,
      '--pin',
      `d=${past}:1`,
    );
    expect(r.code, r.err).toBe(0);
    const ev = eventsOf(r.out);
    expect(requested(ev)).toEqual(['b']);
    expect(ev.filter((e) => e.type === 'node.pinned')).toEqual([
      expect.objectContaining({ nodeId: 'writer', fromRun: past, fromTurn: 1 }),
      expect.objectContaining({ nodeId: 'd', fromRun: past, fromTurn: 1 }),
    ]);
    const said = ev.flatMap((e) =>
      e.type === 'message' && e.nodeId === 'writer' ? [e.message.content] : [],
    );
    expect(said).toEqual(['draft one']);
    expect(ev.at(-1)).toMatchObject({ type: 'run.completed', output: 'reviewed by b' });
  });

  it('switchboard pin writes FLOW.pins.json, runs use it, --list, --no-pins and --remove', async () => {
    const p = await cli('pin', FLOW, 'd', '--from', past, '--data', data);
    expect(p.code, p.err).toBe(0);
    expect(p.err).toContain(`pinned "d" to turn 1 of run ${past}`);
    const doc = JSON.parse(readFileSync(PINS, 'utf8'));
    expect(doc).toMatchObject({
      format: 'switchboard-pins',
      version: 1,
      pins: [{ nodeId: 'd', fromRun: past }],
    });

    const list = await cli('pin', FLOW, '--list');
    expect(list.out).toBe(`d\t${past}:1\n`);

    const run = await cli('run', FLOW, '--input', 'write it');
    expect(run.code, run.err).toBe(0);
    expect(run.err).toContain(`📌 pinned: output of run ${past}, turn 1`);
    expect(run.out.trim()).toBe('reviewed by b');

    const ignored = await cli('run', FLOW, '--input', 'write it', '--no-pins');
    expect(ignored.out.trim()).toBe('from a');

    const rm = await cli('pin', FLOW, 'd', '--remove');
    expect(rm.code, rm.err).toBe(0);
    expect(JSON.parse(readFileSync(PINS, 'utf8')).pins).toEqual([]);
    const again = await cli('pin', FLOW, 'd', '--remove');
    expect(again.code).toBe(2);
    expect(again.err).toContain('node "d" is not pinned');
  });

  it('a fork of a pinned run (--from) keeps its pins upstream', async () => {
    const p = await cli(
      'pin',
      FLOW,
      'writer',
      '--from',
      past,
      '--data',
      data,
      '--pins',
      join(dir, 'w.pins.json'),
    );
    expect(p.code, p.err).toBe(0);
    const pinned = await storePinnedRun(JSON.parse(readFileSync(join(dir, 'w.pins.json'), 'utf8')).pins);
    const r = await cli(
      'run',
      FLOW,
      '--from',
      pinned,
      '--at',
      'd',
      '--data',
      data,
      '--events',
      'jsonl',
      '--no-pins',
    );
    expect(r.code, r.err).toBe(0);
    const ev = eventsOf(r.out);
    expect(ev.filter((e) => e.type === 'node.pinned').map((e) => e.nodeId)).toEqual(['writer']);
    expect(ev.find((e) => e.type === 'run.started')).toMatchObject({
      forkedFrom: { runId: pinned, nodeId: 'd' },
    });
  });

  it('a stale pin (the node was edited since) still applies, with a warning', async () => {
    const edited = join(dir, 'edited.json');
    writeFileSync(edited, JSON.stringify(routed(LIVE, 'You are a NEW writer. {{task}}')));
    const r = await cli(
      'run',
      edited,
      '--input',
      'write it',
      '--events',
      'jsonl',
      '--data',
      data,
      '--pin',
      `writer=${past}`,
    );
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain(
      `warning: the pin of "writer" is stale: the node's config changed since run ${past}`,
    );
    expect(eventsOf(r.out).find((e) => e.type === 'node.pinned')).toMatchObject({
      nodeId: 'writer',
      stale: true,
    });
    const list = await cli('pin', edited, '--list', '--pins', join(dir, 'none.pins.json'));
    expect(list.code).toBe(0);
  });

  it('bad pins are usage errors that say what and where', async () => {
    const cases: Array<[string[], string]> = [
      [['--pin', `nope=${past}`], `run ${past} has no node "nope"`],
      [
        ['--pin', `writer=${past}:4`],
        `node "writer" had 1 turn(s) in run ${past}; there is no turn 4 to pin`,
      ],
      [['--pin', 'a=' + past], `node "a" did not run in run ${past}`],
      [['--pin', `writer=${other}`], `run ${other} is a run of flow "other-flow", not of "routed"`],
      [['--pin', 'writer'], 'expected NODE=RUN_ID or NODE=RUN_ID:TURN'],
      [['--pin', 'writer=no-such-run'], 'no run no-such-run'],
    ];
    for (const [flags, message] of cases) {
      const r = await cli('run', FLOW, '--input', 'x', '--data', data, ...flags);
      expect(r.code, `${flags.join(' ')}: ${r.err}`).toBe(2);
      expect(r.err).toContain(message);
    }
    const bad = join(dir, 'bad.pins.json');
    const pin = {
      nodeId: 'd',
      kind: 'decider',
      fromRun: past,
      fromTurn: 1,
      configHash: 'x',
      outcome: { route: { edges: ['to-b'] } },
    };
    const files: Array<[string, string]> = [
      [
        JSON.stringify({ format: 'switchboard-pins', version: 1, pins: [{ ...pin, fromTurn: -1 }] }),
        '/pins/0/fromTurn',
      ],
      [
        JSON.stringify({ format: 'switchboard-pins', version: 1, pins: [{ ...pin, nodeId: 'constructor' }] }),
        '/pins/0/nodeId',
      ],
      ['{"format":"switchboard-pins","version":1,"pins":[],"__proto__":{"x":1}}', '/__proto__'],
      [
        JSON.stringify({
          format: 'switchboard-pins',
          version: 1,
          pins: [{ ...pin, outcome: { route: { edges: ['gone'] } } }],
        }),
        'edge "gone", which the pinned turn took, no longer leaves "d"',
      ],
      [
        `{"format":"switchboard-pins","version":1,"pins":[],"pad":"${'x'.repeat(3 * 1024 * 1024)}"}`,
        'larger than the limit',
      ],
    ];
    for (const [text, where] of files) {
      writeFileSync(bad, text);
      const r = await cli('run', FLOW, '--input', 'x', '--pins', bad);
      expect(r.code, r.err).toBe(2);
      expect(r.err).toContain(where);
    }
  });
});
