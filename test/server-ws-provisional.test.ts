/**
 * Provisional run-event subscriptions: a live view gets events as soon as the OS has them,
 * with the durable seq in each frame and a `durable` notice once all it holds is on disk,
 * while durable-only subscribers and the REST log see nothing before the sync. The syncs are
 * held by an injected `syncData` (the real fdatasync runs once they are released).
 */
import type { RunEvent } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createServer, type SwitchboardServer } from '../runtime/src/server/index.js';
import { fdatasyncAsync } from '../runtime/src/store/fd-io.js';
import { Store } from '../runtime/src/store/store.js';
import { type WsMessage as Msg, simpleFlow, tempDir, until } from './server/helpers.js';

/** A raw client that keeps every message as sent. */
class RawClient {
  readonly msgs: Msg[] = [];
  private ws!: WebSocket;
  constructor(
    private readonly url: string,
    private readonly origin: string,
  ) {}
  open(): Promise<void> {
    this.ws = new WebSocket(this.url, { origin: this.origin });
    this.ws.on('message', (d) => this.msgs.push(JSON.parse(String(d)) as Msg));
    return new Promise((res, rej) => {
      this.ws.once('open', () => res());
      this.ws.once('error', rej);
    });
  }
  send(m: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(m));
  }
  /** Events received for a run, in order. */
  events(runId: string): RunEvent[] {
    return this.msgs.filter((m) => m.type === 'events' && m.runId === runId).flatMap((m) => m.events!);
  }
  frames(runId: string): Msg[] {
    return this.msgs.filter((m) => m.type === 'events' && m.runId === runId);
  }
  notices(runId: string): Msg[] {
    return this.msgs.filter((m) => m.type === 'durable' && m.runId === runId);
  }
  close(): void {
    this.ws.close();
  }
}

/** fdatasync held until released: what the server does while a sync has not ended. */
function heldSyncs() {
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  let calls = 0;
  releaseHeld = release;
  return {
    syncData: (fd: number) => {
      calls++;
      return gate.then(() => fdatasyncAsync(fd));
    },
    release,
    get calls() {
      return calls;
    },
  };
}

let s: SwitchboardServer | undefined;
let cleanup: (() => void) | undefined;
const clients: RawClient[] = [];
/** Released after each test, so that a failed one does not leave the server's close waiting. */
let releaseHeld: (() => void) | undefined;
afterEach(async () => {
  releaseHeld?.();
  releaseHeld = undefined;
  for (const c of clients.splice(0)) c.close();
  await s?.close();
  s = undefined;
  cleanup?.();
});

async function serve(durability: 'fsync' | 'os', syncData?: (fd: number) => Promise<void>) {
  const t = tempDir('sb-prov-');
  cleanup = t.cleanup;
  const store = await Store.open(t.dir, syncData ? { durability, syncData } : { durability });
  s = await createServer({ store, editorDir: false, port: 0 });
  const { url, port } = await s.listen();
  const wsUrl = `ws://127.0.0.1:${port}/api/ws`;
  const origin = `http://127.0.0.1:${port}`;
  const client = async () => {
    const c = new RawClient(wsUrl, origin);
    await c.open();
    clients.push(c);
    return c;
  };
  const startRun = async (flow: unknown): Promise<string> => {
    const r = await fetch(`${url}/api/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin },
      body: JSON.stringify({ flow, input: 'go' }),
    });
    expect(r.status).toBe(201);
    return ((await r.json()) as { run: { id: string } }).run.id;
  };
  const restEvents = async (runId: string): Promise<RunEvent[]> => {
    const r = await fetch(`${url}/api/runs/${runId}/events`, { headers: { origin } });
    return ((await r.json()) as { events: RunEvent[] }).events;
  };
  return { client, startRun, restEvents };
}

const completed = (events: RunEvent[], runId: string) =>
  events.some((e) => e.type === 'run.completed' && e.runId === runId);

describe('provisional run-event subscriptions', () => {
  it('get events before they are durable, with the durable seq; durable-only clients and REST wait for the sync', async () => {
    const held = heldSyncs();
    const { client, startRun, restEvents } = await serve('fsync', held.syncData);
    const live = await client();
    const strict = await client();
    live.send({ type: 'subscribe', flowId: 'simple', provisional: true });
    strict.send({ type: 'subscribe', flowId: 'simple' });
    await until(() => live.msgs.length > 0 && strict.msgs.length > 0, 'subscribed');
    const runId = await startRun(simpleFlow());

    // The whole run reaches the live view while no sync has ended.
    await until(() => completed(live.events(runId), runId), 'the live view to see the end');
    expect(held.calls).toBeGreaterThan(0);
    const seen = live.events(runId);
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
    for (const f of live.frames(runId)) expect(f.durable).toBe(0);
    expect(live.notices(runId)).toEqual([]);
    // Nothing of it is durable yet: the durable-only client and the REST log have none of it.
    await new Promise((r) => setTimeout(r, 50));
    expect(strict.events(runId)).toEqual([]);
    expect(await restEvents(runId)).toEqual([]);

    held.release();
    await until(() => completed(strict.events(runId), runId), 'the durable-only client to see the end');
    const last = seen.at(-1)!.seq;
    await until(() => live.notices(runId).some((n) => n.seq === last), 'a durable notice for the last event');
    // Every notice says all the client held was durable: its seq is the last event it had then.
    for (const n of live.notices(runId)) expect(n.seq).toBe(last);
    // The same events everywhere, once durable.
    expect(strict.events(runId)).toEqual(seen);
    expect(await restEvents(runId)).toEqual(seen);
  });

  it('catch up on written events (a late live view) and resume after the durable seq', async () => {
    const held = heldSyncs();
    const { client, startRun } = await serve('fsync', held.syncData);
    const first = await client();
    first.send({ type: 'subscribe', flowId: 'simple', provisional: true });
    await until(() => first.msgs.length > 0, 'subscribed');
    const runId = await startRun(simpleFlow());
    await until(() => completed(first.events(runId), runId), 'the end');
    const all = first.events(runId);

    // A live view that joins now gets the written history with durable 0; a durable-only one, nothing.
    const late = await client();
    const strict = await client();
    late.send({ type: 'subscribe', runId, after: 0, provisional: true });
    strict.send({ type: 'subscribe', runId, after: 0 });
    await until(() => late.events(runId).length === all.length, 'the late live view to catch up');
    expect(late.events(runId)).toEqual(all);
    for (const f of late.frames(runId)) expect(f.durable).toBe(0);
    expect(strict.events(runId)).toEqual([]);

    held.release();
    await until(() => late.notices(runId).length > 0, 'the late view to learn of durability');
    expect(late.notices(runId).at(-1)!.seq).toBe(all.at(-1)!.seq);
    await until(() => strict.events(runId).length === all.length, 'the durable-only client');

    // A reconnect asks after its durable seq and gets the rest, the same events.
    const again = await client();
    again.send({ type: 'subscribe', runId, after: 3, provisional: true });
    await until(() => again.events(runId).length === all.length - 3, 'the rest after seq 3');
    expect(again.events(runId)).toEqual(all.slice(3));
    // The run is closed and on disk: the frame says so.
    expect(again.frames(runId).at(-1)!.durable).toBe(all.at(-1)!.seq);
  });

  it('without fsync, frames carry their own last seq as durable and no notice is needed', async () => {
    const { client, startRun } = await serve('os');
    const live = await client();
    live.send({ type: 'subscribe', flowId: 'simple', provisional: true });
    await until(() => live.msgs.length > 0, 'subscribed');
    const runId = await startRun(simpleFlow());
    await until(() => completed(live.events(runId), runId), 'the end');
    for (const f of live.frames(runId)) expect(f.durable).toBe(f.events!.at(-1)!.seq);
    expect(live.notices(runId)).toEqual([]);
  });

  it('keep one kind per connection and refuse a malformed flag', async () => {
    const { client } = await serve('os');
    const c = await client();
    c.send({ type: 'subscribe', flowId: 'f1', provisional: true });
    c.send({ type: 'subscribe', flowId: 'f2' });
    c.send({ type: 'subscribe', flowId: 'f3', provisional: 'yes' });
    await until(() => c.msgs.filter((m) => m.type === 'error').length === 2, 'two refusals');
    const errors = c.msgs.filter((m) => m.type === 'error');
    expect(errors[0]!.message).toMatch(/subscribed with "provisional"; open another/);
    expect(errors[1]!.message).toMatch(/"provisional" must be true or false/);
    expect(c.msgs.filter((m) => m.type === 'subscribed')).toHaveLength(1);
  });
});
