import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { BoundedEventStore } from './event-store.js';

const note = (n: number): JSONRPCMessage => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { n },
});

async function replay(store: BoundedEventStore, after: string): Promise<Array<[string, JSONRPCMessage]>> {
  const out: Array<[string, JSONRPCMessage]> = [];
  await store.replayEventsAfter(after, {
    send: async (id, m) => {
      out.push([id, m]);
    },
  });
  return out;
}

describe('BoundedEventStore', () => {
  it('replays what followed an event on its own stream only, in order', async () => {
    const s = new BoundedEventStore();
    const a1 = await s.storeEvent('a', note(1));
    const b1 = await s.storeEvent('b', note(1));
    const a2 = await s.storeEvent('a', note(2));
    const a3 = await s.storeEvent('a', note(3));
    await s.storeEvent('b', note(2));
    expect(await s.getStreamIdForEventId(a1)).toBe('a');
    expect(await s.getStreamIdForEventId(b1)).toBe('b');
    expect(await replay(s, a1)).toEqual([
      [a2, note(2)],
      [a3, note(3)],
    ]);
    expect(await s.replayEventsAfter(a3, { send: async () => {} })).toBe('a');
    expect(await replay(s, a3)).toEqual([]);
  });

  it('drops the oldest events past its limits and refuses to resume from them', async () => {
    const s = new BoundedEventStore({ maxEvents: 3, maxBytes: 1_000_000 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await s.storeEvent('a', note(i)));
    expect(s.size.events).toBe(3);
    expect(await s.getStreamIdForEventId(ids[1]!)).toBeUndefined();
    await expect(replay(s, ids[1]!)).rejects.toThrow(/is not kept/);
    expect((await replay(s, ids[2]!)).map(([id]) => id)).toEqual([ids[3], ids[4]]);

    const small = new BoundedEventStore({ maxEvents: 100, maxBytes: 200 });
    for (let i = 0; i < 10; i++) await small.storeEvent('a', note(i));
    expect(small.size.bytes).toBeLessThanOrEqual(200);
    // The newest stays even when it alone is past the limit: the answer just sent can be replayed.
    const big = await small.storeEvent('a', { jsonrpc: '2.0', id: 1, result: { text: 'x'.repeat(500) } });
    expect(small.size.events).toBe(1);
    expect(await small.getStreamIdForEventId(big)).toBe('a');
  });
});
