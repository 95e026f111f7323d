import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import type { FlowApi, PinView } from '../model/api.js';
import { FlowPins } from './flowPins.js';
import { nodeTrace } from './trace.js';

const pin = (nodeId: string, fromRun = 'r1'): PinView => ({
  nodeId,
  kind: 'agent',
  fromRun,
  fromTurn: 1,
  configHash: 'fnv/0',
  pinnedAt: '2026-01-01T00:00:00Z',
  outcome: { message: { content: 'hi' } },
  stale: false,
});

describe('the flow’s pins in the editor', () => {
  it('loads the pins of the flow shown, takes the server’s updates for it only, and pins through the API', async () => {
    const calls: string[] = [];
    const api = {
      pins: async (flowId: string) => (flowId === 'f' ? [pin('w')] : []),
      pin: async (flowId: string, nodeId: string, fromRun: string, turn: number) => {
        calls.push(`pin ${flowId} ${nodeId} ${fromRun}:${turn}`);
        return [pin('w'), pin(nodeId, fromRun)];
      },
      unpin: async (flowId: string, nodeId: string) => {
        calls.push(`unpin ${flowId} ${nodeId}`);
        return [];
      },
    } as unknown as FlowApi;
    const pins = new FlowPins(api);
    let changes = 0;
    pins.byNode.subscribe('d', () => changes++);
    await pins.load('f');
    expect(pins.byNode.get('w')?.fromRun).toBe('r1');
    pins.apply('other-flow', [pin('d')]);
    expect(pins.byNode.get('d')).toBeUndefined();
    pins.apply('f', [pin('w'), pin('d', 'r2')]);
    expect(pins.byNode.get('d')?.fromRun).toBe('r2');
    expect(changes).toBe(1);
    await pins.pin('x', 'r3', 2);
    await pins.unpin('w');
    expect(calls).toEqual(['pin f x r3:2', 'unpin f w']);
    expect(pins.byNode.get('w')).toBeUndefined();
  });

  it('a pinned turn shows in the trace with where its output came from, and its replayed reply', () => {
    let seq = 0;
    const ev = (e: Record<string, unknown>) => ({ runId: 'r', seq: ++seq, ts: seq, ...e }) as RunEvent;
    const turns = nodeTrace(
      [
        ev({ type: 'node.started', nodeId: 'w' }),
        ev({ type: 'turn.started', nodeId: 'w', turn: 1 }),
        ev({ type: 'node.pinned', nodeId: 'w', fromRun: 'r_old', fromTurn: 2, stale: true }),
        ev({
          type: 'message',
          nodeId: 'w',
          message: { seq: 2, role: 'assistant', author: 'w', content: 'the draft' },
        }),
        ev({ type: 'turn.completed', nodeId: 'w', turn: 1, usage: { promptTokens: 0, completionTokens: 0 } }),
        ev({ type: 'node.completed', nodeId: 'w' }),
      ],
      'w',
    );
    expect(turns).toHaveLength(1);
    expect(turns[0]!.parts.map((p) => [p.kind, p.title])).toEqual([
      ['pinned', 'pinned: output of run r_old, turn 2 (no model call) · stale: the node changed since'],
      ['reply', 'pinned reply: the draft'],
    ]);
  });
});
