import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { EMPTY_VIEW, fold } from './transcript.js';

/** Events of run `r1` with consecutive seqs, as the server's log holds them. */
function events(list: Array<Record<string, unknown>>, runId = 'r1', from = 1): RunEvent[] {
  return list.map((e, i) => ({ runId, seq: from + i, ts: 1000 + i, scripted: true, ...e }) as RunEvent);
}

describe('transcript fold', () => {
  const run = events([
    { type: 'run.started', flowId: 'f', input: 'hi' },
    { type: 'message', message: { seq: 0, role: 'user', content: 'hi' } },
    { type: 'node.started', nodeId: 'start' },
    { type: 'handover', edgeId: 'e1', from: 'start', to: 'a' },
    { type: 'node.started', nodeId: 'a' },
    { type: 'turn.started', nodeId: 'a', turn: 1 },
    { type: 'model.delta', nodeId: 'a', text: 'Hel' },
    { type: 'model.delta', nodeId: 'a', text: 'lo' },
    { type: 'model.completed', nodeId: 'a', text: 'Hello' },
    { type: 'tool.called', nodeId: 'a', callId: 'c1', tool: 'docs__read', args: { id: 'x' } },
    {
      type: 'tool.result',
      nodeId: 'a',
      callId: 'c1',
      tool: 'docs__read',
      result: 'the text',
      isError: false,
    },
    { type: 'message', nodeId: 'a', message: { seq: 1, role: 'assistant', author: 'a', content: 'Hello' } },
    { type: 'turn.completed', nodeId: 'a', turn: 1, usage: { promptTokens: 10, completionTokens: 5 } },
    { type: 'decision', nodeId: 'd', choice: 'to-b', reason: 'rule 1 matched' },
    {
      type: 'observer.fired',
      nodeId: 'g',
      observer: 'g',
      target: 'a',
      action: 'reject',
      detail: { why: 'pattern' },
    },
    { type: 'input.requested', nodeId: 'h', question: 'Ship it?', options: ['yes', 'no'] },
  ]);

  it('folds a run into status, transcript, waiting question and counters', () => {
    const v = fold(EMPTY_VIEW, 'r1', run);
    expect(v.phase).toBe('waiting');
    expect(v.scripted).toBe(true);
    expect(v.lastSeq).toBe(16);
    expect(v.events).toBe(16);
    expect(v.turns).toBe(1);
    expect(v.tokens).toBe(15);
    expect(v.activeEdge).toBe('e1');
    expect(v.waiting).toEqual({ nodeId: 'h', question: 'Ship it?', options: ['yes', 'no'], seq: 16 });
    expect(v.entries.map((e) => [e.kind, e.text])).toEqual([
      ['message', 'hi'],
      ['handover', 'start → a'],
      ['tool', '{"id":"x"}'],
      ['message', 'Hello'],
      ['decision', 'to-b'],
      ['observer', 'reject on a'],
      ['input', 'Ship it?'],
    ]);
    expect(v.entries[2]!.detail).toBe('→ the text');
    expect(v.entries[4]!.detail).toBe('rule 1 matched');
  });

  it('shows streamed text while it streams, then the message replaces it', () => {
    const mid = fold(EMPTY_VIEW, 'r1', run.slice(0, 8));
    const stream = mid.entries.filter((e) => e.kind === 'stream');
    expect(stream).toHaveLength(1);
    expect(stream[0]!.text).toBe('Hello');
    const after = fold(mid, 'r1', run.slice(8, 12));
    expect(after.entries.some((e) => e.kind === 'stream')).toBe(false);
  });

  it('keeps one streaming entry per node when 100 nodes stream at once, in batches or not', () => {
    const ids = Array.from({ length: 100 }, (_, i) => `p${i}`);
    const list: Array<Record<string, unknown>> = [];
    for (let k = 0; k < 5; k++)
      for (const id of ids) list.push({ type: 'model.delta', nodeId: id, text: `${k}` });
    const log = events(list);
    const once = fold(EMPTY_VIEW, 'r1', log);
    let batched = EMPTY_VIEW;
    for (let i = 0; i < log.length; i += 37) batched = fold(batched, 'r1', log.slice(i, i + 37));
    for (const v of [once, batched]) {
      const streams = v.entries.filter((e) => e.kind === 'stream');
      expect(streams.map((e) => e.nodeId)).toEqual(ids);
      for (const e of streams) expect(e.text).toBe('01234');
    }
    // Each reply, once complete, closes its own entry.
    const done = fold(
      once,
      'r1',
      events(
        ids.map((id) => ({ type: 'model.completed', nodeId: id, text: '01234' })),
        'r1',
        list.length + 1,
      ),
    );
    expect(done.entries.filter((e) => e.kind === 'stream')).toHaveLength(0);
  });

  it('folding in several batches gives the same view as one batch', () => {
    let v = EMPTY_VIEW;
    for (let i = 0; i < run.length; i += 3) v = fold(v, 'r1', run.slice(i, i + 3));
    expect(v).toEqual(fold(EMPTY_VIEW, 'r1', run));
  });

  it('keeps the previous view untouched (new arrays per batch) and returns it for an empty batch', () => {
    const a = fold(EMPTY_VIEW, 'r1', run.slice(0, 4));
    const entries = a.entries;
    const b = fold(a, 'r1', run.slice(4));
    expect(a.entries).toBe(entries);
    expect(a.entries).toHaveLength(2);
    expect(b.entries).not.toBe(a.entries);
    expect(fold(b, 'r1', [])).toBe(b);
  });

  it('an answer clears the question; the end of a nested run does not end the run', () => {
    let v = fold(EMPTY_VIEW, 'r1', run);
    v = fold(v, 'r1', [
      ...events([{ type: 'input.received', nodeId: 'h', answer: 'yes' }], 'r1', 17),
      ...events([{ type: 'run.completed', output: 'inner' }], 'r1:child', 18),
    ]);
    expect(v.waiting).toBeUndefined();
    expect(v.phase).toBe('running');
    expect(v.entries.at(-1)).toMatchObject({ kind: 'status', nested: true });
    v = fold(v, 'r1', events([{ type: 'run.completed', output: { answer: 42 } }], 'r1', 19));
    expect(v.phase).toBe('completed');
    expect(v.output).toEqual({ answer: 42 });
    expect(v.activeNode).toBeUndefined();
  });

  it('pause, resume, failure and cancellation are statuses with reasons', () => {
    let v = fold(EMPTY_VIEW, 'r1', events([{ type: 'run.started', flowId: 'f', input: '' }]));
    v = fold(v, 'r1', events([{ type: 'run.paused', reason: 'breakpoint at b' }], 'r1', 2));
    expect(v.phase).toBe('paused');
    expect(v.pauseReason).toBe('breakpoint at b');
    v = fold(v, 'r1', events([{ type: 'run.resumed' }], 'r1', 3));
    expect(v.phase).toBe('running');
    const failed = fold(
      v,
      'r1',
      events([{ type: 'run.failed', error: { code: 'model', message: 'no key' } }], 'r1', 4),
    );
    expect(failed.phase).toBe('failed');
    expect(failed.error).toEqual({ code: 'model', message: 'no key' });
    expect(failed.entries.at(-1)).toMatchObject({ kind: 'error', text: 'run failed: no key' });
    const cancelled = fold(v, 'r1', events([{ type: 'run.cancelled', reason: 'by Ada' }], 'r1', 4));
    expect(cancelled.phase).toBe('cancelled');
  });

  it('shows a missing handover, mic grants and releases, and refused tool calls', () => {
    const v = fold(
      EMPTY_VIEW,
      'r1',
      events([
        { type: 'handover.missing', nodeId: 't', candidates: ['e1', 'e2'], action: 'reask', attempt: 1 },
        { type: 'handover.missing', nodeId: 't', candidates: ['e1', 'e2'], action: 'fail' },
        { type: 'mic.granted', nodeId: 'a', holder: 'a', by: 'd' },
        { type: 'mic.released', nodeId: 'a', holder: 'a', reason: 'team "room" ended' },
        {
          type: 'tool.refused',
          nodeId: 'a',
          callId: 'c9',
          tool: 'ping',
          error: 'over_tool_call_cap',
          reason: 'cap',
        },
      ]),
    );
    expect(v.entries.map((e) => [e.kind, e.text, e.tone])).toEqual([
      ['handover', 't handed over to none of e1, e2: asked again (1)', 'muted'],
      ['handover', 't handed over to none of e1, e2: fail', 'error'],
      ['log', 'a holds the mic (granted by d)', 'muted'],
      ['log', 'a released the mic: team "room" ended', 'muted'],
      ['tool', 'refused (over_tool_call_cap): cap', 'error'],
    ]);
  });

  it('keeps at most maxEntries entries and counts the dropped ones', () => {
    const many = events(
      Array.from({ length: 50 }, (_, i) => ({ type: 'log', level: 'info', text: `line ${i}` })),
    );
    const v = fold(EMPTY_VIEW, 'r1', many, { maxEntries: 20 });
    expect(v.entries).toHaveLength(20);
    expect(v.dropped).toBe(30);
    expect(v.entries[0]!.text).toBe('line 30');
  });

  it('a turn a resumed run replays is counted once and its message says it is replayed', () => {
    const evs = events([
      { type: 'run.started', flowId: 'f', input: 'hi' },
      { type: 'turn.completed', nodeId: 'a', turn: 1, usage: { promptTokens: 3, completionTokens: 2 } },
      { type: 'message', nodeId: 'a', message: { seq: 1, role: 'assistant', author: 'a', content: 'x' } },
      { type: 'run.paused', reason: 'storage_full: the disk is full' },
      { type: 'run.resumed', fromCheckpoint: true },
      {
        type: 'turn.completed',
        nodeId: 'a',
        turn: 1,
        usage: { promptTokens: 3, completionTokens: 2 },
        replayed: true,
      },
      {
        type: 'message',
        nodeId: 'a',
        message: { seq: 1, role: 'assistant', author: 'a', content: 'x' },
        replayed: true,
      },
    ]);
    const v = fold(EMPTY_VIEW, 'r1', evs);
    expect(v.turns).toBe(1);
    expect(v.tokens).toBe(5);
    expect(v.entries.filter((e) => e.kind === 'message').map((e) => e.who)).toEqual(['a', 'a (replayed)']);
    expect(
      v.entries.some((e) => e.kind === 'status' && e.text === 'paused: storage_full: the disk is full'),
    ).toBe(true);
  });
});
