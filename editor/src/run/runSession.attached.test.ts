import { defaultRegistry } from '@switchboard/nodes';
import type { RunEvent } from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AttachedLink, FlowApi, RunSummary } from '../model/api.js';
import { EditorStore } from '../store/editorStore.js';
import { FakeSocket, frame } from '../testing/fakeSocket.js';
import { ATTACHED_POLL_MS, RunSession } from './runSession.js';

const started = (runId: string): RunEvent[] => [
  { runId, seq: 1, ts: Date.now(), type: 'run.started', flowId: 'f', input: 'hi' } as RunEvent,
];

const stores: EditorStore[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
  for (const s of stores.splice(0)) s.dispose();
});

/** A session whose server says of each run what `links` holds now (undefined: the server's own). */
async function session(links: Map<string, AttachedLink | undefined>) {
  const asked: string[] = [];
  const api = {
    wsUrl: () => 'ws://server/api/ws',
    wsProtocols: () => [],
    runsOf: async () => [],
    runEvents: async () => [],
    getRun: async (id: string) => {
      asked.push(id);
      return {
        id,
        flowId: 'f',
        status: 'running',
        createdAt: '',
        lastSeq: 1,
        attached: links.get(id),
      } as RunSummary;
    },
  } as unknown as FlowApi;
  const store = new EditorStore({ registry: defaultRegistry, validateDelay: 1 });
  stores.push(store);
  const sockets: FakeSocket[] = [];
  const runs = new RunSession({
    api,
    store,
    createSocket: () => {
      const s = new FakeSocket();
      sockets.push(s);
      return s;
    },
  });
  runs.start();
  sockets[0]!.open();
  await runs.watchFlow('f');
  return { runs, socket: () => sockets.at(-1)!, asked };
}

describe('RunSession and headless runs attached to the server', () => {
  it('marks a followed run that runs headless, and follows its link as it changes', async () => {
    const link: AttachedLink = { host: 'ci-7', state: 'connected', since: 't0' };
    const links = new Map<string, AttachedLink | undefined>([['r_headless', link]]);
    const x = await session(links);
    x.socket().push(frame('r_headless', started('r_headless'), 1));
    await vi.advanceTimersByTimeAsync(0);
    expect(x.runs.getSnapshot().attached).toEqual(link);
    // Its process goes away: the next read says so.
    links.set('r_headless', { ...link, state: 'detached', since: 't1' });
    await vi.advanceTimersByTimeAsync(ATTACHED_POLL_MS);
    expect(x.runs.getSnapshot().attached?.state).toBe('detached');
    // Abandoned: nothing changes any more, so it is not read again.
    links.set('r_headless', { ...link, state: 'abandoned', since: 't2' });
    await vi.advanceTimersByTimeAsync(ATTACHED_POLL_MS);
    expect(x.runs.getSnapshot().attached?.state).toBe('abandoned');
    const n = x.asked.length;
    await vi.advanceTimersByTimeAsync(ATTACHED_POLL_MS * 3);
    expect(x.asked.length).toBe(n);
    x.runs.stop();
  });

  it('a run of the server itself carries no mark, and a newer run clears the last one', async () => {
    const links = new Map<string, AttachedLink | undefined>([
      ['r_headless', { host: 'ci-7', state: 'connected', since: 't0' }],
    ]);
    const x = await session(links);
    x.socket().push(frame('r_headless', started('r_headless'), 1));
    await vi.advanceTimersByTimeAsync(0);
    expect(x.runs.getSnapshot().attached?.host).toBe('ci-7');
    vi.advanceTimersByTime(10);
    x.socket().push(frame('r_server', started('r_server'), 1));
    await vi.advanceTimersByTimeAsync(0);
    expect(x.runs.runId).toBe('r_server');
    expect(x.runs.getSnapshot().attached).toBeUndefined();
    x.runs.stop();
  });
});
