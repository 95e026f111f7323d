import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { CLOSE_SLOW } from '../runtime/src/server/index.js';
import { scanEventLog } from '../runtime/src/store/event-log.js';
import { EventsClient, isFinal, slowChain, stalledSubscriber, testServer, until } from './server/helpers.js';

type S = Awaited<ReturnType<typeof testServer>>;
let s: S | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

async function listening(opts: Parameters<typeof testServer>[0] = {}) {
  s = await testServer({ port: 0, ...opts });
  const { url, port } = await s.listen();
  return { s, base: url, wsUrl: `ws://127.0.0.1:${port}/api/ws`, origin: `http://127.0.0.1:${port}` };
}

async function startRun(base: string, origin: string, flow: unknown): Promise<string> {
  const r = await fetch(`${base}/api/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin },
    body: JSON.stringify({ flow, input: 'go' }),
  });
  expect(r.status).toBe(201);
  return ((await r.json()) as { run: { id: string } }).run.id;
}

function logOf(dir: string, runId: string): RunEvent[] {
  return scanEventLog(join(dir, 'runs', runId, 'events.jsonl'), runId).events;
}

describe('WebSocket run events', () => {
  it('sends history after the given seq, then live events, in order, coalesced per event-loop turn', async () => {
    const { s, base, wsUrl, origin } = await listening();
    const runId = await startRun(base, origin, slowChain('c', 6, 40));
    await until(() => (s.store.catalog.data.runs[runId]?.lastSeq ?? 0) >= 5, 'some events');
    const c = new EventsClient(wsUrl, origin);
    await c.open();
    c.subscribeAfter(runId, 2);
    await c.until(() => isFinal(c.events.get(runId)?.at(-1), runId), 'the end of the run');
    const got = c.events.get(runId)!;
    expect(got[0]!.seq).toBe(3);
    expect(c.problems).toEqual([]);
    await until(() => !s.runs.isLive(runId), 'settled');
    expect(got).toEqual(logOf(s.dir, runId).slice(2));
    // Far fewer frames than events: one per run per turn of the event loop.
    expect(s.hub.stats.frames).toBeLessThan(s.hub.stats.events);
    await c.close();
  });

  it('frames built from the log bytes carry any text: newlines, quotes, backslashes, non-ASCII', async () => {
    const { s, base, wsUrl, origin } = await listening();
    const c = new EventsClient(wsUrl, origin);
    await c.open();
    c.subscribeFlow('odd');
    await new Promise((r) => setTimeout(r, 50));
    const text = 'line one\nline "two"\\ \u2028 é 💡 {"type":"x"},\n';
    const runId = await startRun(base, origin, slowChain('odd', 4, 0, text));
    await c.until(() => isFinal(c.events.get(runId)?.at(-1), runId), 'the end of the run');
    await until(() => !s.runs.isLive(runId), 'settled');
    expect(c.problems).toEqual([]);
    expect(c.events.get(runId)).toEqual(logOf(s.dir, runId));
    expect(JSON.stringify(c.events.get(runId))).toContain(JSON.stringify(text).slice(1, -1));
    await c.close();
  });

  it('subscribes to every run of a flow', async () => {
    const { s, base, wsUrl, origin } = await listening();
    const c = new EventsClient(wsUrl, origin);
    await c.open();
    c.subscribeFlow('fl');
    await new Promise((r) => setTimeout(r, 50));
    const a = await startRun(base, origin, slowChain('fl', 3, 5));
    const b = await startRun(base, origin, slowChain('fl', 3, 5));
    const other = await startRun(base, origin, slowChain('other', 2, 5));
    await c.until(
      () => isFinal(c.events.get(a)?.at(-1), a) && isFinal(c.events.get(b)?.at(-1), b),
      'both runs',
    );
    await until(() => s.runs.liveCount === 0, 'all settled');
    expect(c.events.has(other)).toBe(false);
    expect(c.events.get(a)).toEqual(logOf(s.dir, a));
    expect(c.events.get(b)).toEqual(logOf(s.dir, b));
    expect(c.problems).toEqual([]);
    await c.close();
  });

  it('20 runs at once, 200 subscribers on one of them: every subscriber gets every event in order', async () => {
    const { s, base, wsUrl, origin } = await listening();
    const clients = Array.from({ length: 200 }, () => new EventsClient(wsUrl, origin));
    await Promise.all(clients.map((c) => c.open()));
    const ids: string[] = [];
    ids.push(await startRun(base, origin, slowChain('hot', 30, 10)));
    for (const c of clients) c.subscribeRun(ids[0]!);
    for (let i = 1; i < 20; i++) ids.push(await startRun(base, origin, slowChain(`f${i}`, 10, 5)));
    await until(() => s.runs.liveCount === 0, 'all 20 runs', 60_000);
    for (const id of ids) expect(s.store.catalog.data.runs[id]!.status).toBe('completed');
    const log = logOf(s.dir, ids[0]!);
    await Promise.all(
      clients.map((c) => c.until(() => c.lastSeq(ids[0]!) === log.at(-1)!.seq, 'all events')),
    );
    for (const c of clients) {
      expect(c.problems).toEqual([]);
      expect(c.events.get(ids[0]!)).toEqual(log);
    }
    await Promise.all(clients.map((c) => c.close()));
  }, 120_000);

  it('1,000 random reconnects with last-seq resume: no gap, no duplicate', async () => {
    const { s, base, wsUrl, origin } = await listening();
    const runs: string[] = [];
    for (let i = 0; i < 5; i++) runs.push(await startRun(base, origin, slowChain(`rc${i}`, 60, 15)));
    let reconnects = 0;
    let seed = 42;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const clients = Array.from({ length: 20 }, (_, i) => ({
      c: new EventsClient(wsUrl, origin),
      run: runs[i % 5]!,
    }));
    const done = (x: { c: EventsClient; run: string }) => isFinal(x.c.events.get(x.run)?.at(-1), x.run);
    await Promise.all(
      clients.map(async (x) => {
        while (reconnects < 1000 || !done(x)) {
          await x.c.open();
          x.c.subscribeRun(x.run);
          if (reconnects >= 1000) {
            await x.c.until(() => done(x), 'the end');
            break;
          }
          await new Promise((r) => setTimeout(r, rand() * 25));
          // Half of the time drop the socket without a close handshake.
          if (rand() < 0.5) x.c.ws.terminate();
          await x.c.close();
          reconnects++;
        }
      }),
    );
    expect(reconnects).toBeGreaterThanOrEqual(1000);
    await until(() => s.runs.liveCount === 0, 'runs settled', 60_000);
    for (const x of clients) {
      expect(x.c.problems).toEqual([]);
      expect(x.c.events.get(x.run)).toEqual(logOf(s.dir, x.run));
      await x.c.close();
    }
  }, 180_000);

  it('closes a client that does not read with a recoverable code; it resubscribes and misses nothing', async () => {
    const { s, base, wsUrl, origin } = await listening({ hub: { maxBuffered: 256 * 1024 } });
    const port = Number(new URL(base).port);
    // ~60 KB per agent turn (deltas, completion, message): far beyond the socket buffers.
    const runId = await startRun(base, origin, slowChain('slow', 150, 1, 'z'.repeat(20_000)));
    const sock = await stalledSubscriber(port, origin, { type: 'subscribe', runId, after: 0 });
    const healthy = new EventsClient(wsUrl, origin);
    await healthy.open();
    healthy.subscribeRun(runId);
    await until(() => s.hub.stats.slowClosed > 0, 'the stalled client to be dropped', 90_000);
    // The stalled client reads at last: it finds the close frame with the recoverable code.
    const closeCode = await new Promise<number>((res) => {
      let buf = Buffer.alloc(0);
      sock.on('data', (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        // Scan frames for the close frame (opcode 8) and read its code.
        let i = 0;
        while (i + 2 <= buf.length) {
          const op = buf[i]! & 0x0f;
          let len = buf[i + 1]! & 0x7f;
          let off = i + 2;
          if (len === 126) {
            if (off + 2 > buf.length) return;
            len = buf.readUInt16BE(off);
            off += 2;
          } else if (len === 127) {
            if (off + 8 > buf.length) return;
            len = Number(buf.readBigUInt64BE(off));
            off += 8;
          }
          if (off + len > buf.length) return;
          if (op === 8) return res(buf.readUInt16BE(off));
          i = off + len;
        }
      });
      sock.resume();
    });
    expect(closeCode).toBe(CLOSE_SLOW);
    sock.destroy();
    // The healthy subscriber was not affected; a resubscribing client misses nothing.
    await until(() => !s.runs.isLive(runId), 'run end', 120_000);
    await healthy.until(() => isFinal(healthy.events.get(runId)?.at(-1), runId), 'healthy client');
    expect(healthy.problems).toEqual([]);
    expect(healthy.events.get(runId)).toEqual(logOf(s.dir, runId));
    const again = new EventsClient(wsUrl, origin);
    await again.open();
    again.subscribeRun(runId);
    await again.until(() => isFinal(again.events.get(runId)?.at(-1), runId), 'the resubscribed client');
    expect(again.events.get(runId)).toEqual(logOf(s.dir, runId));
    await Promise.all([healthy.close(), again.close()]);
  }, 180_000);

  it('survives fuzzed messages: random JSON, binary, oversized, deep, __proto__, truncated', async () => {
    const { base, wsUrl, origin } = await listening();
    const runId = await startRun(base, origin, slowChain('fz', 2, 1));
    let seed = 7;
    const rand = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };
    const randomJson = (d: number): unknown => {
      const k = Math.floor(rand() * 7);
      if (d > 4 || k === 0)
        return rand() < 0.5 ? Math.floor(rand() * 1e9) - 5e8 : 'x'.repeat(Math.floor(rand() * 20));
      if (k === 1) return null;
      if (k === 2) return [randomJson(d + 1), randomJson(d + 1)];
      if (k === 3)
        return {
          type: ['subscribe', 'unsubscribe', 'ping', 'x'][Math.floor(rand() * 4)],
          runId: randomJson(d + 1),
          after: randomJson(d + 1),
        };
      if (k === 4)
        return {
          type: 'subscribe',
          flowId: randomJson(d + 1),
          after: { [String(randomJson(d + 1))]: randomJson(d + 1) },
        };
      return { type: 'subscribe', runId, after: randomJson(d + 1) };
    };
    const ws = new WebSocket(wsUrl, { origin });
    await new Promise((r) => ws.once('open', r));
    let closed = false;
    ws.on('close', () => {
      closed = true;
    });
    const msgs: Array<string | Buffer> = [
      Buffer.from([0, 1, 2, 255]),
      '{"type":"subscribe","runId":',
      `${'['.repeat(5000)}${']'.repeat(5000)}`,
      '{"__proto__":{"polluted":true},"type":"subscribe","runId":"x"}',
      '{"type":"subscribe","constructor":{"prototype":{"x":1}}}',
      '',
      'null',
      '"just a string"',
    ];
    for (let i = 0; i < 40; i++) msgs.push(JSON.stringify(randomJson(0)));
    for (const m of msgs) ws.send(m);
    ws.send(JSON.stringify({ type: 'ping' }));
    await new Promise((r) => setTimeout(r, 300));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // Over the payload limit: closed with 1009 by ws, server keeps serving.
    const big = new WebSocket(wsUrl, { origin });
    await new Promise((r) => big.once('open', r));
    const code = await new Promise<number>((r) => {
      big.once('close', (c) => r(c));
      big.send('x'.repeat(5 * 1024 * 1024));
    });
    expect(code).toBe(1009);
    if (!closed) ws.close();
    expect((await fetch(`${base}/api/health`)).status).toBe(200);
    const c = new EventsClient(wsUrl, origin);
    await c.open();
    c.subscribeRun(runId);
    await c.until(() => isFinal(c.events.get(runId)?.at(-1), runId), 'events after fuzzing');
    await c.close();
  });
});
