import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { applyEvent, countLog, endedBy, isReplayed, ReplayMarker, zeroCounters } from './run-counters.js';

const turn = (seq: number, tokens: number, runId = 'r'): RunEvent =>
  ({
    runId,
    seq,
    ts: 0,
    type: 'turn.completed',
    nodeId: 'a',
    turn: 1,
    usage: { promptTokens: tokens, completionTokens: 1 },
  }) as RunEvent;
const ev = (seq: number, type: string): RunEvent =>
  ({ runId: 'r', seq, ts: 0, type, nodeId: 'a' }) as RunEvent;

describe('counters follow the log', () => {
  it('a resumed run marks the events it replays, and they count once', () => {
    // Checkpoint at seq 2; the log went on to seq 6 (two turns, a tool call) before it stopped.
    const log = [
      ev(1, 'run.started'),
      turn(2, 10),
      turn(3, 20),
      ev(4, 'tool.called'),
      turn(5, 30),
      ev(6, 'run.paused'),
    ];
    const m = new ReplayMarker(log, 2);
    const replay = [ev(7, 'run.resumed'), turn(8, 20), ev(9, 'tool.called'), turn(10, 30), turn(11, 40)].map(
      (e) => m.mark(e),
    );
    expect(replay.map(isReplayed)).toEqual([false, true, true, true, false]);
    expect(m.pending).toBe(false);
    // The engine's events are not changed: the log gets marked copies.
    expect(isReplayed(turn(8, 20))).toBe(false);
    expect(countLog('r', [...log, ...replay])).toEqual({
      turns: 4,
      promptTokens: 100,
      completionTokens: 4,
      toolCalls: 1,
    });
  });

  it('a second resume from the same checkpoint marks again only what is not marked yet', () => {
    const first = new ReplayMarker([turn(1, 1), turn(2, 2)], 0);
    const log = [turn(1, 1), turn(2, 2), first.mark(turn(3, 1)), ev(4, 'run.paused')];
    const second = new ReplayMarker(log, 0);
    expect([turn(5, 1), turn(6, 2), turn(7, 3)].map((e) => isReplayed(second.mark(e)))).toEqual([
      true,
      true,
      false,
    ]);
  });

  it('nested runs count only through their parent; statuses follow run events', () => {
    const rec = {
      id: 'r',
      flowId: 'f',
      flowName: 'f',
      status: 'pending' as const,
      createdAt: '',
      updatedAt: '',
      lastSeq: 0,
      counters: zeroCounters(),
      resumes: 0,
      source: 'api' as const,
    };
    applyEvent(rec, ev(1, 'run.started'));
    applyEvent(rec, turn(2, 5, 'r~1'));
    expect(rec.counters.turns).toBe(0);
    expect(rec.status).toBe('running');
    expect(applyEvent(rec, ev(3, 'run.paused'))).toBe(true);
    expect(rec).toMatchObject({ status: 'paused', lastSeq: 3 });
  });
});

describe('a run ends with its own final event', () => {
  it('names the status of run.completed, run.failed and run.cancelled of the run itself only', () => {
    expect(endedBy('r', ev(9, 'run.completed'))).toBe('completed');
    expect(endedBy('r', ev(9, 'run.failed'))).toBe('failed');
    expect(endedBy('r', ev(9, 'run.cancelled'))).toBe('cancelled');
    for (const type of ['run.paused', 'run.started', 'run.resumed', 'node.completed', 'turn.completed'])
      expect(endedBy('r', ev(9, type))).toBeUndefined();
    // A delegated (nested) run ending is not its parent's end: the parent still takes commands.
    expect(
      endedBy('r', { ...ev(9, 'run.completed'), runId: 'r~1', parentRunId: 'r' } as RunEvent),
    ).toBeUndefined();
  });
});
