/**
 * Pins in the engine: a pinned node makes no model request, the nodes after it see the pinned
 * output, and `node.pinned` says where it came from; stale pins still apply and say so; a pin
 * that cannot apply fails the run by name.
 */
import { checkPinsDocument, type Pin, type RunEvent, summarizeNodes } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { cassetteFromLog } from '../cassette/from-log.js';
import { replayCassette } from '../cassette/replay-run.js';
import { agent, collectRun, edge, flow, node, recordingModels } from '../engine/testing/index.js';
import { diffRuns, summarize } from '../run-diff/diff.js';
import { PinError, parsePinFlag, pinFromRun } from './index.js';

/** start → writer → d (llm decider) → a | b → end */
const routed = (script: unknown[], writerPrompt = 'You are writer. Task: {{task}}') =>
  flow(
    [
      node('start', 'start'),
      agent('writer', { prompt: [{ text: writerPrompt }] }),
      node('d', 'decider', { strategy: 'llm', prompt: 'Route it.' }),
      agent('a'),
      agent('b'),
      node('end', 'end'),
    ],
    [
      edge('start', 'writer'),
      edge('writer', 'd'),
      edge('d', 'a', 'handover', { description: 'drafts' }, 'to-a'),
      edge('d', 'b', 'handover', { description: 'reviews' }, 'to-b'),
      edge('a', 'end'),
      edge('b', 'end'),
    ],
    script,
  );

const firstRun = () =>
  collectRun(
    routed([
      { node: 'writer', text: 'draft one' },
      { node: 'd', json: { choice: 'to-b', reason: 'needs review' } },
      { fallback: true, text: 'ok' },
    ]),
    'write',
    { runId: 'run-first' },
  );

const liveScript = [
  { node: 'writer', text: 'draft TWO' },
  { node: 'd', json: { choice: 'to-a', reason: 'fine' } },
  { fallback: true, text: 'live' },
];

const of = <T extends RunEvent['type']>(events: RunEvent[], type: T) =>
  events.filter((e) => e.type === type) as Array<Extract<RunEvent, { type: T }>>;

describe('pins in the engine', () => {
  it('a pinned agent and a pinned decider make no model request; downstream sees the pinned output', async () => {
    const past = await firstRun();
    expect(past.result.status).toBe('completed');
    const src = { flow: routed([]), events: past.events };
    const pins: Pin[] = [pinFromRun('run-first', src, 'writer'), pinFromRun('run-first', src, 'd')];
    expect(pins[0]!.outcome).toEqual({
      message: { content: 'draft one' },
      route: { edges: ['writer-d'], reason: 'pinned handover' },
    });
    expect(pins[1]!.outcome.route).toEqual({ edges: ['to-b'], reason: 'needs review' });

    const { factory, requests } = recordingModels();
    const { events, result } = await collectRun(routed(liveScript), 'write', { models: factory, pins });
    expect(result.status).toBe('completed');
    // Only b called a model: neither the writer nor the decider did, and a (the live choice) never ran.
    expect(requests.map((r) => r.nodeId)).toEqual(['b']);
    expect(requests[0]!.messages.map((m) => m.content)).toContain('draft one');
    expect(of(events, 'node.pinned')).toEqual([
      expect.objectContaining({ nodeId: 'writer', fromRun: 'run-first', fromTurn: 1 }),
      expect.objectContaining({ nodeId: 'd', fromRun: 'run-first', fromTurn: 1 }),
    ]);
    expect(of(events, 'node.pinned').some((e) => e.stale)).toBe(false);
    expect(of(events, 'decision')).toEqual([
      expect.objectContaining({ nodeId: 'd', choice: 'to-b', reason: 'needs review' }),
    ]);
    expect(of(events, 'handover').map((e) => e.edgeId)).toEqual([
      'start-writer',
      'writer-d',
      'to-b',
      'b-end',
    ]);
    expect(of(events, 'model.request').map((e) => e.nodeId)).toEqual(['b']);
    // The pinned turns are turns (counted, with no tokens), and the run says which pins it ran with.
    const writerTurn = of(events, 'turn.completed').find((e) => e.nodeId === 'writer')!;
    expect(writerTurn.usage).toEqual({ promptTokens: 0, completionTokens: 0 });
    expect(of(events, 'run.started')[0]!.pins).toEqual(pins);
    // The counters (node faces, GET /api/runs/:id/nodes) tell a pinned turn from a live one.
    const counters = summarizeNodes(events);
    expect(counters.find((c) => c.nodeId === 'writer')).toMatchObject({ turns: 1, calls: 0, pinned: 1 });
    expect(counters.find((c) => c.nodeId === 'b')?.pinned).toBeUndefined();
  });

  it('a replay of a pinned run pins the same nodes and matches; diff tells a pinned node from a live one', async () => {
    const past = await firstRun();
    const pin = pinFromRun('run-first', { flow: routed([]), events: past.events }, 'writer');
    const f = routed(liveScript);
    const pinned = await collectRun(f, 'write', { pins: [pin], runId: 'run-pinned' });
    const { cassette } = cassetteFromLog({ flow: f, input: 'write', events: pinned.events });
    const replay = await replayCassette(cassette);
    expect(replay.miss).toBeUndefined();
    expect(replay.result.status).toBe('completed');
    expect(replay.comparison).toMatchObject({ same: true });
    expect(replay.events.filter((e) => e.type === 'node.pinned').map((e) => e.nodeId)).toEqual(['writer']);

    const live = await collectRun(f, 'write', { runId: 'run-live' });
    const d = diffRuns(summarize('run-live', live.events), summarize('run-pinned', pinned.events));
    expect(d.find((x) => x.what === 'pinned')).toMatchObject({
      node: 'writer',
      a: [],
      b: ['run-first:1'],
      detail: 'node "writer" ran live and was pinned (run-first:1)',
    });
  });

  it('an agent’s handover choice made with a handover tool is pinned and replayed', async () => {
    const triage = (script: unknown[]) =>
      flow(
        [node('start', 'start'), agent('triage'), agent('billing'), agent('tech'), node('end', 'end')],
        [
          edge('start', 'triage'),
          edge('triage', 'billing'),
          edge('triage', 'tech'),
          edge('billing', 'end'),
          edge('tech', 'end'),
        ],
        script,
      );
    const past = await collectRun(
      triage([
        { node: 'triage', text: 'a hardware fault', toolCalls: [{ name: 'handover_to_tech', args: {} }] },
        { fallback: true, text: 'fixed' },
      ]),
      'help',
      { runId: 'run-triage' },
    );
    expect(past.result.status).toBe('completed');
    const pin = pinFromRun('run-triage', { flow: triage([]), events: past.events }, 'triage');
    expect(pin.outcome.route).toEqual({ edges: ['triage-tech'], reason: 'pinned handover' });
    const { factory, requests } = recordingModels();
    const live = triage([
      { node: 'triage', text: 'billing!', toolCalls: [{ name: 'handover_to_billing', args: {} }] },
      { fallback: true, text: 'x' },
    ]);
    const { events, result } = await collectRun(live, 'help', { models: factory, pins: [pin] });
    expect(result.status).toBe('completed');
    expect(requests.map((r) => r.nodeId)).toEqual(['tech']);
    expect(of(events, 'tool.called')).toEqual([]);
    expect(of(events, 'handover').map((e) => e.to)).toEqual(['triage', 'tech', 'end']);
  });

  it('a pin whose node was edited since still applies and says it is stale', async () => {
    const past = await firstRun();
    const pin = pinFromRun('run-first', { flow: routed([]), events: past.events }, 'writer');
    const { factory, requests } = recordingModels();
    const edited = routed(liveScript, 'You are a NEW writer. Task: {{task}}');
    const { events, result } = await collectRun(edited, 'write', { models: factory, pins: [pin] });
    expect(result.status).toBe('completed');
    expect(requests.some((r) => r.nodeId === 'writer')).toBe(false);
    expect(of(events, 'node.pinned')).toEqual([expect.objectContaining({ nodeId: 'writer', stale: true })]);
  });

  it('a pin that cannot apply fails the run with pin_invalid, naming the node and the edge', async () => {
    const past = await firstRun();
    const pin = pinFromRun('run-first', { flow: routed([]), events: past.events }, 'd');
    const f = routed(liveScript);
    f.edges = f.edges.map((e) => (e.id === 'to-b' ? { ...e, id: 'to-b2' } : e));
    const { result } = await collectRun(f, 'write', { pins: [pin] });
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('pin_invalid');
    expect(result.error?.message).toContain('edge "to-b", which the pinned turn took, no longer leaves "d"');
    const gone = await collectRun(
      {
        ...f,
        nodes: f.nodes.filter((n) => n.id !== 'writer'),
        edges: f.edges.filter((e) => e.source !== 'writer' && e.target !== 'writer'),
      },
      'x',
      {
        pins: [{ ...pin, nodeId: 'writer', kind: 'agent', outcome: { message: { content: 'x' } } }],
        validate: false,
      },
    );
    expect(gone.result.error?.message).toContain('the flow has no node "writer"');
  });

  it('pinFromRun names what is missing: node, kind, turn', async () => {
    const past = await firstRun();
    const src = { flow: routed([]), events: past.events };
    expect(() => pinFromRun('run-first', src, 'nope')).toThrow(
      new PinError('run run-first has no node "nope"'),
    );
    expect(() => pinFromRun('run-first', src, 'start')).toThrow(
      /is a start: only the output of agent and decider/,
    );
    expect(() => pinFromRun('run-first', src, 'a')).toThrow('node "a" did not run in run run-first');
    expect(() => pinFromRun('run-first', src, 'writer', 2)).toThrow(
      'node "writer" had 1 turn(s) in run run-first; there is no turn 2 to pin',
    );
    expect(parsePinFlag('writer=run-1:3')).toEqual({ nodeId: 'writer', runId: 'run-1', turn: 3 });
    expect(() => parsePinFlag('writer')).toThrow(/expected NODE=RUN_ID/);
    expect(() => parsePinFlag('writer=run:x')).toThrow(/TURN a whole number/);
  });

  it('the pins document checker names the JSON path', () => {
    const good = {
      nodeId: 'w',
      kind: 'agent',
      fromRun: 'r',
      fromTurn: 1,
      configHash: 'h',
      outcome: { message: { content: 'x' } },
    };
    expect(checkPinsDocument({ format: 'switchboard-pins', version: 1, pins: [good] }).ok).toBe(true);
    const cases: Array<[unknown, string]> = [
      [[], '/'],
      [{ format: 'x', version: 1, pins: [] }, '/format'],
      [
        { format: 'switchboard-pins', version: 1, pins: [{ ...good, nodeId: '__proto__' }] },
        '/pins/0/nodeId',
      ],
      [
        { format: 'switchboard-pins', version: 1, pins: [good, { ...good, fromTurn: 0 }] },
        '/pins/1/fromTurn',
      ],
      [
        { format: 'switchboard-pins', version: 1, pins: [{ ...good, outcome: { route: { edges: [] } } }] },
        '/pins/0/outcome/route/edges',
      ],
      [
        { format: 'switchboard-pins', version: 1, pins: [{ ...good, outcome: { evil: 1 } }] },
        '/pins/0/outcome/evil',
      ],
      [{ format: 'switchboard-pins', version: 1, pins: [good, good] }, '/pins/1/nodeId'],
    ];
    for (const [doc, path] of cases) {
      const r = checkPinsDocument(doc);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.problem.path).toBe(path);
    }
  });
});
