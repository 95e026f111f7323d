import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { RunState } from '../store/runState.js';
import { nodeTrace } from './trace.js';

let seq = 0;
const ev = (e: Record<string, unknown>): RunEvent =>
  ({ runId: 'r', seq: ++seq, ts: seq * 10, ...e }) as RunEvent;
const SYSTEM = `You write refunds. ${'Be kind and precise. '.repeat(5)}`;

function log(): RunEvent[] {
  seq = 0;
  return [
    ev({ type: 'run.started', flowId: 'f', input: 'x' }),
    ev({ type: 'node.started', nodeId: 'w' }),
    ev({ type: 'turn.started', nodeId: 'w', turn: 1 }),
    ev({
      type: 'model.request',
      nodeId: 'w',
      turn: 1,
      attempt: 1,
      call: 1,
      model: 'default',
      messages: [
        { role: 'system', h: 'aaaaaaaaaaaaaaaa', content: SYSTEM },
        { role: 'user', content: 'refund INV-1' },
      ],
    }),
    ev({ type: 'model.completed', nodeId: 'w', text: '', usage: { promptTokens: 10, completionTokens: 2 } }),
    ev({ type: 'tool.called', nodeId: 'w', callId: 'c1', tool: 'kb__search', args: { q: 'INV-1' } }),
    ev({
      type: 'tool.result',
      nodeId: 'w',
      callId: 'c1',
      tool: 'kb__search',
      result: 'paid twice',
      isError: false,
    }),
    ev({
      type: 'model.request',
      nodeId: 'w',
      turn: 1,
      attempt: 1,
      call: 2,
      model: 'default',
      messages: [
        { role: 'system', h: 'aaaaaaaaaaaaaaaa' },
        { role: 'user', content: 'refund INV-1' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'kb__search', arguments: '{}' }] },
        { role: 'tool', toolCallId: 'c1', content: 'paid twice' },
      ],
    }),
    ev({
      type: 'model.completed',
      nodeId: 'w',
      text: 'Refund due.',
      usage: { promptTokens: 20, completionTokens: 3 },
    }),
    ev({
      type: 'observer.fired',
      nodeId: 'guard',
      observer: 'guard',
      target: 'w',
      action: 'retry',
      detail: {},
    }),
    ev({ type: 'turn.completed', nodeId: 'w', turn: 1, usage: { promptTokens: 30, completionTokens: 5 } }),
    ev({ type: 'node.completed', nodeId: 'w' }),
    ev({ type: 'node.started', nodeId: 'd' }),
    ev({ type: 'decision', nodeId: 'd', choice: 'w', reason: 'mentions a refund' }),
    ev({ type: 'node.failed', nodeId: 'd', error: { code: 'boom', message: 'it broke' } }),
  ];
}

describe('a node trace', () => {
  it('has the turn with the messages sent (resolved), replies, the tool call with its time, observers', () => {
    const [turn] = nodeTrace(log(), 'w');
    expect(turn).toMatchObject({ turn: 1, status: 'completed', startedAt: 20, endedAt: 120 });
    expect(turn!.parts.map((p) => p.kind)).toEqual([
      'request',
      'reply',
      'tool',
      'request',
      'reply',
      'observer',
    ]);
    const second = turn!.parts[3]!.data as { messages: Array<{ role: string; content: string }> };
    expect(second.messages[0]).toEqual({ role: 'system', content: SYSTEM });
    expect(turn!.parts[2]!.data).toEqual({
      callId: 'c1',
      tool: 'kb__search',
      args: { q: 'INV-1' },
      result: 'paid twice',
      isError: false,
      ms: 10,
    });
    expect(JSON.parse(JSON.stringify(turn))).toEqual(turn);
  });

  it("has a decider's candidates, choice and reason, and its failure", () => {
    const [turn] = nodeTrace(log(), 'd', ['w', 'x']);
    expect(turn!.status).toBe('failed');
    expect(turn!.parts[0]!.data).toEqual({
      candidates: ['w', 'x'],
      choice: 'w',
      reason: 'mentions a refund',
    });
    expect(turn!.parts[1]).toMatchObject({ kind: 'error', data: { code: 'boom' } });
  });
});

describe('run state: counters and breakpoints', () => {
  it('counts per node as events arrive, notifying only that node', () => {
    const rs = new RunState();
    const seen: string[] = [];
    const offs = ['w', 'd'].map((k) => rs.counters.subscribe(k, () => seen.push(k)));
    for (const e of log()) rs.applyRunEvent(e);
    for (const off of offs) off();
    expect(rs.counters.get('w')).toMatchObject({ turns: 1, calls: 2, promptTokens: 30, completionTokens: 5 });
    expect(rs.counters.get('d')).toMatchObject({ status: 'failed', failures: 1 });
    expect(seen.filter((k) => k === 'd')).toHaveLength(3);
  });

  it('a breakpoint stop puts the glow and the paused status on the node it stopped before', () => {
    seq = 0;
    const rs = new RunState();
    rs.applyRunEvent(ev({ type: 'node.started', nodeId: 'a' }));
    rs.applyRunEvent(ev({ type: 'node.completed', nodeId: 'a' }));
    rs.applyRunEvent(ev({ type: 'run.paused', nodeId: 'b', reason: 'breakpoint at b' }));
    expect(rs.activeNode).toBe('b');
    expect(rs.get('b')).toEqual({ status: 'paused', active: true });
    expect(rs.get('a')).toEqual({ status: 'completed', active: false });
    rs.applyRunEvent(ev({ type: 'run.resumed' }));
    rs.applyRunEvent(ev({ type: 'node.started', nodeId: 'b' }));
    expect(rs.get('b')).toEqual({ status: 'running', active: true });
  });
});
