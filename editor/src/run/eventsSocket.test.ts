import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ev, FakeSocket, frame } from '../testing/fakeSocket.js';
import { type EventsSocketOptions, RunEventsSocket } from './eventsSocket.js';

const range = (from: number, to: number, text?: (seq: number) => string) =>
  Array.from({ length: to - from + 1 }, (_, i) => ev(from + i, text?.(from + i)));

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A client on fake sockets; `calls` records `onEvents` and `onRewind` in order. */
function client(o: Partial<EventsSocketOptions> = {}) {
  const sockets: FakeSocket[] = [];
  const calls: Array<['events', string, number[]] | ['rewind', string, number]> = [];
  /** What a consumer holds of each run: the texts of its events, by position. */
  const held = new Map<string, string[]>();
  const feed = new RunEventsSocket({
    url: 'ws://server/api/ws',
    minBackoffMs: 10,
    createSocket: () => {
      const s = new FakeSocket();
      sockets.push(s);
      return s;
    },
    onEvents: (runId, events) => {
      calls.push(['events', runId, events.map((e) => e.seq)]);
      const list = held.get(runId) ?? [];
      for (const e of events) list.push((e as { text: string }).text);
      held.set(runId, list);
    },
    onRewind: (runId, toSeq) => {
      calls.push(['rewind', runId, toSeq]);
      held.get(runId)?.splice(toSeq);
    },
    ...o,
  });
  feed.start();
  sockets[0]!.open();
  /** The server closes the connection; the client reconnects on a new socket. */
  const reconnect = (): FakeSocket => {
    sockets.at(-1)!.close(1006, 'gone');
    vi.advanceTimersByTime(1000);
    const s = sockets.at(-1)!;
    s.open();
    return s;
  };
  return { feed, sockets, calls, held, reconnect, now: () => sockets.at(-1)! };
}

describe('RunEventsSocket (provisional)', () => {
  it('subscribe messages carry provisional: true; after a reconnect `after` is the durable watermark, not the last seq', () => {
    const { feed, now, reconnect } = client({ provisional: true });
    feed.watchFlow('f');
    feed.watchRun('r2');
    expect(now().sent).toEqual([
      { type: 'subscribe', flowId: 'f', after: {}, provisional: true },
      { type: 'subscribe', runId: 'r2', after: 0, provisional: true },
    ]);
    now().push(frame('r1', range(1, 10), 6));
    now().push(
      frame(
        'r2',
        range(1, 4).map((e) => ({ ...e, runId: 'r2' })),
        4,
      ),
    );
    expect([feed.lastSeq('r1'), feed.durableSeq('r1'), feed.lastSeq('r2'), feed.durableSeq('r2')]).toEqual([
      10, 6, 4, 4,
    ]);
    expect(reconnect().sent).toEqual([
      { type: 'subscribe', flowId: 'f', after: { r2: 4, r1: 6 }, provisional: true },
      { type: 'subscribe', runId: 'r2', after: 4, provisional: true },
    ]);
    // Watching a tracked run again asks from its watermark too.
    feed.watchRun('r1');
    expect(now().sent.at(-1)).toEqual({ type: 'subscribe', runId: 'r1', after: 6, provisional: true });
  });

  it('tracks the watermark from frames and `durable` messages: it only rises and never passes the last seq held', () => {
    const { feed, now } = client({ provisional: true });
    feed.watchRun('r1');
    expect(feed.durableSeq('r1')).toBe(0);
    now().push(frame('r1', range(1, 5), 2));
    expect(feed.durableSeq('r1')).toBe(2);
    now().push({ type: 'durable', runId: 'r1', seq: 4 });
    expect(feed.durableSeq('r1')).toBe(4);
    // Lower (a frame's own watermark can lag a `durable` message), or malformed: no change.
    now().push(frame('r1', range(6, 7), 3));
    now().push({ type: 'durable', runId: 'r1', seq: 1 });
    now().push({ type: 'durable', runId: 'r1', seq: -5 });
    now().push({ type: 'durable', runId: 'r1', seq: '9' });
    expect(feed.durableSeq('r1')).toBe(4);
    // Past what is held (events still on their way): capped at the last seq until they arrive.
    now().push({ type: 'durable', runId: 'r1', seq: 9 });
    expect(feed.durableSeq('r1')).toBe(7);
    now().push(frame('r1', range(8, 9), 9));
    expect(feed.durableSeq('r1')).toBe(9);
    // Runs not tracked are ignored; forgetting a run forgets its watermark.
    now().push({ type: 'durable', runId: 'other', seq: 3 });
    expect(feed.durableSeq('other')).toBe(0);
    feed.forgetRun('r1');
    feed.watchRun('r1');
    expect(feed.durableSeq('r1')).toBe(0);
    expect(now().sent.at(-1)).toEqual({ type: 'subscribe', runId: 'r1', after: 0, provisional: true });
  });

  it('rewinds to the watermark on the first frame of the new connection, then applies the new events as fresh', () => {
    const { feed, now, reconnect, calls, held } = client({ provisional: true });
    feed.watchRun('r1');
    now().push(frame('r1', range(1, 10), 6));
    calls.length = 0;
    const s = reconnect();
    expect(s.sent).toEqual([{ type: 'subscribe', runId: 'r1', after: 6, provisional: true }]);
    // Nothing is rewound before the server has sent something for the run.
    expect(calls).toEqual([]);
    expect(feed.lastSeq('r1')).toBe(10);
    // The server's host lost 7..10; the resumed run wrote different events under 7..9.
    s.push(
      frame(
        'r1',
        range(7, 9, (q) => `new${q}`),
        7,
      ),
    );
    expect(calls).toEqual([
      ['rewind', 'r1', 6],
      ['events', 'r1', [7, 8, 9]],
    ]);
    expect(held.get('r1')).toEqual(['e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'new7', 'new8', 'new9']);
    expect([feed.lastSeq('r1'), feed.durableSeq('r1')]).toEqual([9, 7]);
    // Then as always: duplicates dropped, contiguous events applied, a hole reconnects.
    s.push(
      frame(
        'r1',
        range(9, 11, (q) => `new${q}`),
        9,
      ),
    );
    expect(calls.at(-1)).toEqual(['events', 'r1', [10, 11]]);
    s.push(frame('r1', [ev(13)]));
    expect(s.readyState).toBe(3);
    expect(calls).toHaveLength(3);
  });

  it('a run held no further than its watermark is not rewound; neither is one whose frame never comes', () => {
    const { feed, now, reconnect, calls } = client({ provisional: true });
    feed.watchFlow('f');
    now().push(frame('r1', range(1, 4), 4));
    now().push(
      frame(
        'r2',
        range(1, 3).map((e) => ({ ...e, runId: 'r2' })),
        1,
      ),
    );
    calls.length = 0;
    const s = reconnect();
    expect(s.sent).toEqual([{ type: 'subscribe', flowId: 'f', after: { r1: 4, r2: 1 }, provisional: true }]);
    s.push(frame('r1', [ev(5)], 5));
    expect(calls).toEqual([['events', 'r1', [5]]]);
    expect(feed.lastSeq('r2')).toBe(3);
  });

  it('a `durable` message before the first frame does not vouch for events held from before the disconnect', () => {
    const { feed, now, reconnect, calls } = client({ provisional: true });
    feed.watchRun('r1');
    now().push(frame('r1', range(1, 10), 6));
    calls.length = 0;
    const s = reconnect();
    s.push({ type: 'durable', runId: 'r1', seq: 9 });
    // What is held above 6 came from before; the server's 7..9 may differ from it.
    expect(feed.durableSeq('r1')).toBe(6);
    const s2 = reconnect();
    expect(s2.sent).toEqual([{ type: 'subscribe', runId: 'r1', after: 6, provisional: true }]);
    // A hole in the first frame reconnects without rewinding anything.
    s2.push(frame('r1', range(8, 9), 9));
    expect(calls).toEqual([]);
    expect(feed.lastSeq('r1')).toBe(10);
    const s3 = reconnect();
    expect(s3.sent).toEqual([{ type: 'subscribe', runId: 'r1', after: 6, provisional: true }]);
    s3.push(
      frame(
        'r1',
        range(7, 9, (q) => `new${q}`),
        9,
      ),
    );
    expect(calls).toEqual([
      ['rewind', 'r1', 6],
      ['events', 'r1', [7, 8, 9]],
    ]);
    expect(feed.durableSeq('r1')).toBe(9);
  });
});

describe('RunEventsSocket (not provisional)', () => {
  it('sends the same messages as before, ignores watermarks and resumes from the last seq', () => {
    const { feed, now, reconnect, calls } = client();
    feed.watchFlow('f');
    feed.watchRun('r1');
    now().push(frame('r1', range(1, 3), 1));
    now().push(frame('r1', range(2, 4))); // overlaps: only 4 is new
    now().push(frame('other', range(7, 8))); // a run never tracked, mid-way: ignored
    now().push({ type: 'durable', runId: 'r1', seq: 2 });
    expect(feed.durableSeq('r1')).toBe(4);
    const s = reconnect();
    expect(s.sent).toEqual([
      { type: 'subscribe', flowId: 'f', after: { r1: 4 } },
      { type: 'subscribe', runId: 'r1', after: 4 },
    ]);
    s.push(frame('r1', range(5, 6)));
    s.push(frame('r1', range(8, 9))); // a hole (7 is missing): reconnect
    expect(s.readyState).toBe(3);
    expect(calls).toEqual([
      ['events', 'r1', [1, 2, 3]],
      ['events', 'r1', [4]],
      ['events', 'r1', [5, 6]],
    ]);
    expect(reconnect().sent).toEqual([
      { type: 'subscribe', flowId: 'f', after: { r1: 6 } },
      { type: 'subscribe', runId: 'r1', after: 6 },
    ]);
  });
});
