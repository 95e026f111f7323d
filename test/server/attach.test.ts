/**
 * `/api/attach` with real WebSockets against a real server: the token and Origin gate, every
 * event checked against the event schema, seq contiguity, no write into another run, commands
 * relayed to the owning process only, a process that dies is detached then abandoned by name,
 * and a headless run (the real engine, through AttachClient) that loses the server — dropped
 * connections, then a server restart on the same data directory — catches up from its last
 * acknowledged seq so that the server's log is the local run, event for event.
 */
import { createHash } from 'node:crypto';
import { connect, createServer as createTcpServer, type Socket } from 'node:net';
import type { RunEvent } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AttachClient } from '../../runtime/src/attach/client.js';
import { runFlow } from '../../runtime/src/engine/index.js';
import { createServer } from '../../runtime/src/server/index.js';
import { EventsClient, simpleFlow, slowChain, tempDir, until } from './helpers.js';

const TOKEN = 'attach-test-token-0123456789abcdef';
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function listening(opts: Parameters<typeof createServer>[0] = {}, dir?: string) {
  const d = dir ?? tempDir('sb-attach-').dir;
  const s = await createServer({ dataDir: d, editorDir: false, port: 0, ...opts });
  const { url, port } = await s.listen();
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await s.close();
  };
  cleanups.push(close);
  return {
    s,
    dir: d,
    base: url,
    port,
    url: `ws://127.0.0.1:${port}/api/attach`,
    origin: `http://127.0.0.1:${port}`,
    close,
  };
}

/** A raw protocol client: every message kept, the close code and reason. */
class Raw {
  readonly ws: WebSocket;
  readonly msgs: Array<Record<string, unknown>> = [];
  close: { code: number; reason: string } | undefined;
  refused: number | undefined;
  readonly opened: Promise<void>;
  readonly ended: Promise<void>;

  constructor(url: string, o: { token?: string; origin?: string } = {}) {
    const headers: Record<string, string> = {};
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    this.ws = new WebSocket(url, { headers, ...(o.origin ? { origin: o.origin } : {}) });
    this.ws.on('message', (d) => this.msgs.push(JSON.parse(String(d))));
    this.ended = new Promise((r) =>
      this.ws.on('close', (code, reason) => {
        this.close = { code, reason: String(reason) };
        r();
      }),
    );
    this.opened = new Promise((res, rej) => {
      this.ws.once('open', () => res());
      this.ws.once('unexpected-response', (_q, r) => {
        this.refused = r.statusCode;
        rej(new Error(`refused ${r.statusCode}`));
      });
      this.ws.once('error', rej);
    });
    this.opened.catch(() => {});
  }

  send(m: unknown): void {
    this.ws.send(typeof m === 'string' ? m : JSON.stringify(m));
  }

  async next(type: string): Promise<Record<string, unknown>> {
    return until(() => this.msgs.find((m) => m.type === type), `a ${type} message`);
  }

  async hello(flow = simpleFlow('attached-flow'), localRunId = 'run_local1'): Promise<string> {
    await this.opened;
    this.send({ type: 'hello', protocol: 1, host: 'laptop-7', localRunId, flow, input: 'go' });
    return String((await this.next('welcome')).runId);
  }
}

/** Events of a real local run of `flow` (the engine's own), with their local run id. */
async function localEvents(flow = simpleFlow('attached-flow'), runId = 'run_local1'): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  await runFlow(flow, 'go', { runId, onEvent: (e) => events.push(e) }).result;
  return events;
}

describe('/api/attach: who may attach', () => {
  it('needs the server token when the server has one, and refuses a foreign Origin', async () => {
    const { url, origin } = await listening({ token: TOKEN });
    const none = new Raw(url);
    await expect(none.opened).rejects.toThrow();
    expect(none.refused).toBe(401);
    const wrong = new Raw(url, { token: `${TOKEN}x` });
    await expect(wrong.opened).rejects.toThrow();
    expect(wrong.refused).toBe(401);
    const evil = new Raw(url, { token: TOKEN, origin: 'http://evil.example' });
    await expect(evil.opened).rejects.toThrow();
    expect(evil.refused).toBe(403);
    const ok = new Raw(url, { token: TOKEN, origin });
    expect(await ok.hello()).toMatch(/^r_/);
    ok.ws.close();
  });

  it('an invalid flow in the hello is refused by the one validator, naming the path', async () => {
    const { url, s } = await listening();
    const c = new Raw(url);
    await c.opened;
    const bad = {
      ...simpleFlow('x'),
      nodes: [{ id: 'a', kind: 'agent', position: { x: 0, y: 0 }, config: { model: 3 } }],
    };
    c.send({ type: 'hello', protocol: 1, host: 'h', localRunId: 'run_x', flow: bad, input: 'go' });
    await c.ended;
    const err = c.msgs.find((m) => m.type === 'error')!;
    expect(err.code).toBe('flow-invalid');
    expect(String(err.message)).toMatch(/\/nodes\/0/);
    expect(c.close!.code).toBe(4400);
    expect(Object.keys(s.store.catalog.data.runs)).toEqual([]);
  });
});

describe('/api/attach: what an attacher may write', () => {
  it('validates every event against the event schema and names the event and the field', async () => {
    const { url } = await listening();
    const cases: Array<[unknown, RegExp, string]> = [
      ['{nope', /not JSON/, 'bad-message'],
      [
        { type: 'events', events: [{ type: 'run.started', runId: 'run_local1', seq: 1, ts: 1 }] },
        /events\[0\] \(run\.started\).*flowId/,
        'bad-event',
      ],
      [
        { type: 'events', events: [{ type: 'no.such', runId: 'run_local1', seq: 1, ts: 1 }] },
        /events\[0\]: unknown event type "no.such"/,
        'bad-event',
      ],
      [{ type: 'events', events: [] }, /non-empty array/, 'bad-message'],
      [
        {
          type: 'events',
          events: [{ type: 'node.started', runId: 'run_local1', seq: 1, ts: 1, nodeId: 'not-in-the-flow' }],
        },
        /events\[0\] \(node\.started\): \/nodeId "not-in-the-flow" is not a node of the attached flow/,
        'bad-event',
      ],
      [
        {
          type: 'events',
          events: [
            {
              type: 'turn.completed',
              runId: 'run_local1',
              seq: 1,
              ts: 1,
              nodeId: 'w',
              turn: 1,
              usage: { promptTokens: -1, completionTokens: 0 },
            },
          ],
        },
        /events\[0\] \(turn\.completed\): \/usage\/promptTokens/,
        'bad-event',
      ],
    ];
    for (const [msg, re, code] of cases) {
      const c = new Raw(url);
      await c.hello();
      c.send(msg);
      await c.ended;
      const err = c.msgs.find((m) => m.type === 'error');
      expect(err?.code, String(re)).toBe(code);
      expect(String(err?.message)).toMatch(re);
      expect(c.close!.code).toBe(4400);
    }
  });

  it('events before the welcome, and a second hello, are refused', async () => {
    const { url } = await listening();
    const a = new Raw(url);
    await a.opened;
    a.send({ type: 'events', events: (await localEvents()).slice(0, 1) });
    await a.ended;
    expect(a.msgs[0]).toMatchObject({
      type: 'error',
      code: 'bad-message',
      message: 'events before the welcome',
    });
    const b = new Raw(url);
    await b.hello();
    b.send({ type: 'hello', protocol: 1, host: 'h', localRunId: 'run_y', flow: simpleFlow('y') });
    await b.ended;
    expect(b.msgs.find((m) => m.type === 'error')).toMatchObject({
      code: 'bad-message',
      message: 'one hello per connection',
    });
  });

  it('enforces seq contiguity: a gap or a repeat is refused and nothing of the batch is written', async () => {
    const { url, s } = await listening();
    const events = await localEvents();
    const c = new Raw(url);
    const runId = await c.hello();
    c.send({ type: 'events', events: events.slice(0, 2) });
    await until(() => c.msgs.find((m) => m.type === 'ack' && m.seq === 2), 'ack of seq 2');
    c.send({ type: 'events', events: [events[2], events[4]] });
    await c.ended;
    expect(c.msgs.find((m) => m.type === 'error')).toMatchObject({
      code: 'seq-gap',
      message: expect.stringMatching(/events\[1\] \(.*\): seq 5 where 4 was expected/),
    });
    await s.attached.idle();
    expect(s.store.readEvents(runId).map((e) => e.seq)).toEqual([1, 2]);
  });

  it('can never write into another run: foreign run ids, nested ids of others, other runs by id', async () => {
    const { url, s, base, origin } = await listening();
    // A run of the server's own, and another attacher's.
    const r = await fetch(`${base}/api/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin },
      body: JSON.stringify({ flow: simpleFlow('victim'), input: 'x' }),
    });
    const victim = ((await r.json()) as { run: { id: string } }).run.id;
    await until(() => s.store.catalog.data.runs[victim]?.status === 'completed', 'the victim run');
    const victimLog = s.store.readEvents(victim);
    const other = new Raw(url);
    const otherRun = await other.hello(simpleFlow('other'), 'run_other');

    const events = await localEvents();
    for (const foreign of [victim, otherRun, 'run_other', 'run_local1x', 'run_local1~a', `${victim}~1`]) {
      const c = new Raw(url);
      await c.hello();
      c.send({ type: 'events', events: [{ ...events[0], runId: foreign }] });
      await c.ended;
      expect(
        c.msgs.find((m) => m.type === 'error'),
        foreign,
      ).toMatchObject({ code: 'not-your-run' });
    }
    // A parentRunId naming another run is refused too.
    const p = new Raw(url);
    await p.hello();
    p.send({ type: 'events', events: [{ ...events[0], runId: 'run_local1~1', parentRunId: victim }] });
    await p.ended;
    expect(p.msgs.find((m) => m.type === 'error')).toMatchObject({ code: 'not-your-run' });
    // Reattaching to a run it did not create: a server run, another attacher's, a made-up key.
    for (const [runId, key] of [
      [victim, 'x'.repeat(43)],
      [otherRun, 'x'.repeat(43)],
    ]) {
      const c = new Raw(url);
      await c.opened;
      c.send({ type: 'hello', protocol: 1, host: 'h', localRunId: 'run_z', resume: { runId, key } });
      await c.ended;
      expect(c.msgs.find((m) => m.type === 'error')).toMatchObject({
        code: 'not-your-run',
        message: `no attached run ${runId} with this key`,
      });
      expect(c.close!.code).toBe(4403);
    }
    await s.attached.idle();
    expect(s.store.readEvents(victim)).toEqual(victimLog);
    expect(s.store.readEvents(otherRun)).toEqual([]);
    other.ws.close();
  });

  it('rate- and size-limits a connection', async () => {
    const { url } = await listening({ attach: { messagesPerSecond: 5, maxBatch: 3 } });
    const events = await localEvents();
    const big = new Raw(url);
    await big.hello();
    big.send({ type: 'events', events: events.slice(0, 4) });
    await big.ended;
    expect(big.msgs.find((m) => m.type === 'error')).toMatchObject({ code: 'too-large' });
    expect(big.close!.code).toBe(4413);
    const flood = new Raw(url);
    await flood.hello();
    // Events arrive one seq at a time, faster than 5 messages a second (burst 10).
    for (let i = 0; i < 20 && i < events.length; i++) flood.send({ type: 'events', events: [events[i]] });
    await flood.ended;
    expect(flood.msgs.find((m) => m.type === 'error')).toMatchObject({ code: 'rate-limited' });
    expect(flood.close!.code).toBe(4429);
  });
});

describe('/api/attach: the run on the server', () => {
  it('is stored like any run, seen live by run-event clients of its flow, and lists as attached', async () => {
    const { url, s, base, port, origin } = await listening();
    const watcher = new EventsClient(`ws://127.0.0.1:${port}/api/ws`, origin);
    await watcher.open();
    watcher.subscribeFlow('attached-flow');
    await new Promise((r) => setTimeout(r, 50));
    const c = new Raw(url);
    const runId = await c.hello();
    const events = await localEvents();
    c.send({ type: 'events', events });
    await until(() => c.msgs.find((m) => m.type === 'ack' && m.seq === events.length), 'ack of the last');
    await watcher.until(() => (watcher.events.get(runId)?.length ?? 0) === events.length, 'the live events');
    const stored = s.store.readEvents(runId);
    expect(stored).toEqual(events.map((e) => ({ ...e, runId })));
    await until(() => s.store.catalog.data.runs[runId]?.attached?.state === 'ended', 'ended');
    const list = (await (await fetch(`${base}/api/runs?flowId=attached-flow`)).json()) as {
      runs: Array<Record<string, unknown>>;
    };
    expect(list.runs[0]).toMatchObject({
      id: runId,
      status: 'completed',
      source: 'attach',
      attached: { host: 'laptop-7', state: 'ended', flowKnown: false },
    });
    // Nothing derived from the reconnect key is in an API answer.
    const key = String(c.msgs.find((m) => m.type === 'welcome')!.key);
    const one = await (await fetch(`${base}/api/runs/${runId}`)).text();
    for (const text of [JSON.stringify(list), one]) {
      expect(text).not.toContain('keyHash');
      expect(text).not.toContain(key);
      expect(text).not.toContain(createHash('sha256').update(key).digest('hex'));
    }
    // The server had no such flow: it stored the run's, so editors can open it.
    expect(c.msgs.find((m) => m.type === 'welcome')).toMatchObject({ flowKnown: false, flowStored: true });
    expect(s.store.catalog.data.flows['attached-flow']).toMatchObject({
      rev: 1,
      updatedBy: 'headless@laptop-7',
    });
    // Another attacher's flow of the same id never replaces it.
    const again = new Raw(url);
    await again.hello(simpleFlow('attached-flow', 'something else'), 'run_again');
    expect(again.msgs.find((m) => m.type === 'welcome')).toMatchObject({ flowKnown: true });
    expect(s.store.catalog.data.flows['attached-flow']?.rev).toBe(1);
    expect(JSON.stringify(s.store.catalog.data.flows['attached-flow']?.flow)).not.toContain('something else');
    again.ws.close();
    // The history's tools read it like any run.
    const nodes = await (await fetch(`${base}/api/runs/${runId}/nodes`)).json();
    expect((nodes as { nodes: unknown[] }).nodes.length).toBeGreaterThan(0);
    const cassette = await fetch(`${base}/api/runs/${runId}/cassette`);
    expect(cassette.status).toBe(200);
    // And forks like any run: the server runs the fork itself, from the attached run's record.
    const fork = await fetch(`${base}/api/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin },
      body: JSON.stringify({ flowId: 'attached-flow', fromRun: runId, at: 'writer' }),
    });
    expect(fork.status).toBe(201);
    const forkId = ((await fork.json()) as { run: { id: string } }).run.id;
    await until(() => s.store.catalog.data.runs[forkId]?.status === 'completed', 'the fork completed');
    expect(s.store.catalog.data.runs[forkId]).toMatchObject({ parentRunId: runId, source: 'api' });
    // Nothing may follow its final event.
    c.send({ type: 'events', events: [{ ...events[0], seq: events.length + 1 }] });
    await c.ended;
    expect(c.msgs.find((m) => m.type === 'error')).toMatchObject({ code: 'run-ended' });
    await watcher.close();
  });

  it('relays commands to the owning process only; a command to a detached run is a named error; a dead process is abandoned by name', async () => {
    const { url, s, base, origin } = await listening({ attach: { graceMs: 600 } });
    const owner = new Raw(url);
    const runId = await owner.hello();
    const bystander = new Raw(url);
    const otherRun = await bystander.hello(simpleFlow('other'), 'run_b');
    const events = await localEvents();
    owner.send({ type: 'events', events: events.slice(0, 3) });
    await until(() => owner.msgs.find((m) => m.type === 'ack' && m.seq === 3), 'acks');
    const command = (id: string, body: unknown) =>
      fetch(`${base}/api/runs/${id}/commands`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin },
        body: JSON.stringify(body),
      });
    expect((await command(runId, { type: 'answer', nodeId: 'ask', answer: 'yes' })).status).toBe(202);
    expect((await command(runId, { type: 'pause' })).status).toBe(202);
    await until(() => owner.msgs.filter((m) => m.type === 'command').length === 2, 'two commands');
    expect(owner.msgs.filter((m) => m.type === 'command').map((m) => m.command)).toEqual([
      { type: 'answer', nodeId: 'ask', answer: 'yes' },
      { type: 'pause' },
    ]);
    expect(bystander.msgs.filter((m) => m.type === 'command')).toEqual([]);
    const listed = (await (await fetch(`${base}/api/runs/${runId}`)).json()) as { run: { live: boolean } };
    expect(listed.run.live).toBe(true);

    // The process dies (no close frame): detached at once, commands refused by name.
    owner.ws.terminate();
    await until(() => s.store.catalog.data.runs[runId]?.attached?.state === 'detached', 'detached');
    const refused = await command(runId, { type: 'cancel' });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'run-detached',
      message: expect.stringContaining('laptop-7'),
    });
    // A resume does not make the server host it either.
    expect((await command(runId, { type: 'resume' })).status).toBe(409);
    // Past the grace period: interrupted, by name, and the log says so.
    await until(() => s.store.catalog.data.runs[runId]?.status === 'interrupted', 'abandoned', 10_000);
    const rec = s.store.catalog.data.runs[runId]!;
    expect(rec.attached?.state).toBe('abandoned');
    expect(rec.error?.code).toBe('attach_abandoned');
    expect(rec.error?.message).toMatch(/headless process on laptop-7 went away/);
    await s.attached.idle();
    const log = s.store.readEvents(runId);
    expect(log.at(-1)).toMatchObject({
      type: 'run.interrupted',
      seq: 4,
      reason: expect.stringMatching(/^attach_abandoned: /),
    });
    expect(s.store.catalog.data.runs[otherRun]?.attached?.state).toBe('connected');
    // Its process, back too late, is told so by name; the server does not continue it either.
    const key = String(owner.msgs.find((m) => m.type === 'welcome')!.key);
    const late = new Raw(url);
    await late.opened;
    late.send({
      type: 'hello',
      protocol: 1,
      host: 'laptop-7',
      localRunId: 'run_local1',
      resume: { runId, key },
    });
    await late.ended;
    expect(late.msgs.find((m) => m.type === 'error')).toMatchObject({ code: 'run-abandoned' });
    expect(late.close!.code).toBe(4409);
    const resume = await command(runId, { type: 'resume' });
    expect(resume.status).toBe(409);
    expect(((await resume.json()) as { error: { code: string } }).error.code).toBe('run-detached');
    expect(s.store.readEvents(runId)).toHaveLength(4);
    bystander.ws.close();
  });
});

describe('/api/attach: a headless run that loses the server', () => {
  it('goes on locally, reconnects with its key and catches up from the last acknowledged seq, across dropped connections and a server restart', async () => {
    const first = await listening({ attach: { graceMs: 30_000 } });
    const notices: string[] = [];
    const flow = slowChain('attach-chain', 12, 60);
    const localRunId = 'run_chain1';
    const local: RunEvent[] = [];
    const client = new AttachClient({
      url: first.base,
      flow,
      input: 'go',
      localRunId,
      notice: (l) => notices.push(l),
      onCommand: () => {},
      retryMs: 50,
      maxRetryMs: 200,
    });
    client.start();
    const handle = runFlow(flow, 'go', {
      runId: localRunId,
      onEvent: (e) => {
        local.push(e);
        client.push(e);
      },
    });
    const runId = await until(() => client.serverRunId, 'the welcome');
    // Dropped from the server's side twice while the run goes on.
    for (let i = 0; i < 2; i++) {
      const before = local.length;
      await until(() => local.length > before + 5, 'more local events');
      for (const ws of first.s.app.websocketServer.clients) ws.terminate();
      await until(
        () => client.status === 'attached' && notices.some((n) => n.includes('reconnected')),
        'reconnected',
      );
    }
    // The server goes away altogether; the run goes on; a new server on the same data and port.
    await until(() => local.length > 20, 'more local events');
    await first.close();
    const atClose = local.length;
    await until(() => local.length > atClose + 4, 'the run goes on without a server');
    expect(first.s.store.catalog.data.runs[runId]?.attached?.state).toBe('detached');
    const second = await listening({ port: first.port, attach: { graceMs: 30_000 } }, first.dir);
    expect(second.s.store.catalog.data.runs[runId]?.attached?.state).toBe('detached');
    const result = await handle.result;
    expect(result.status).toBe('completed');
    expect(await client.drain(20_000)).toBe(true);
    client.close();
    await until(
      () => second.s.store.catalog.data.runs[runId]?.status === 'completed',
      'completed on the server',
    );
    expect(second.s.store.readEvents(runId)).toEqual(local.map((e) => ({ ...e, runId })));
    expect(second.s.store.catalog.data.runs[runId]?.attached?.state).toBe('ended');
    expect(notices.join('')).toMatch(
      /lost the server .*the run goes on here, reconnecting and resending from seq \d+/,
    );
    expect(notices.join('')).toMatch(/reconnected; the server holds up to seq \d+/);
  }, 60_000);

  it('finds a connection that died without a close by its missing pongs, and reconnects', async () => {
    // A TCP proxy whose connections can freeze: bytes stop in both directions, nothing closes.
    let serverPort = 0;
    const open = new Set<{ a: Socket; b: Socket; frozen: boolean }>();
    const proxy = createTcpServer((a) => {
      const b = connect(serverPort, '127.0.0.1');
      const pair = { a, b, frozen: false };
      open.add(pair);
      a.on('data', (d) => pair.frozen || b.write(d));
      b.on('data', (d) => pair.frozen || a.write(d));
      const end = () => {
        a.destroy();
        b.destroy();
        open.delete(pair);
      };
      for (const x of [a, b]) {
        x.on('close', end);
        x.on('error', end);
      }
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    cleanups.push(() => new Promise<void>((r) => proxy.close(() => r())));
    const viaPort = (proxy.address() as { port: number }).port;
    // The proxy's address is the Host the client names: the server is told to accept it.
    const { port, s } = await listening({ allowedHosts: [`127.0.0.1:${viaPort}`] });
    serverPort = port;
    const flow = slowChain('attach-beat', 10, 80);
    const notices: string[] = [];
    const local: RunEvent[] = [];
    const client = new AttachClient({
      url: `http://127.0.0.1:${viaPort}`,
      flow,
      input: 'go',
      localRunId: 'run_beat',
      notice: (l) => notices.push(l),
      onCommand: () => {},
      retryMs: 50,
      heartbeatMs: 150,
    });
    client.start();
    const handle = runFlow(flow, 'go', {
      runId: 'run_beat',
      onEvent: (e) => {
        local.push(e);
        client.push(e);
      },
    });
    const runId = await until(() => client.serverRunId, 'the welcome');
    await until(() => local.length > 8, 'some events');
    for (const p of open) p.frozen = true;
    await until(
      () => notices.some((n) => n.includes('reconnected')),
      'a reconnect after missing pongs',
      15_000,
    );
    expect((await handle.result).status).toBe('completed');
    expect(await client.drain(20_000)).toBe(true);
    client.close();
    await until(() => s.store.catalog.data.runs[runId]?.status === 'completed', 'completed on the server');
    expect(s.store.readEvents(runId)).toEqual(local.map((e) => ({ ...e, runId })));
  }, 60_000);
});

describe('/api/attach: commands from editors reach the headless run', () => {
  it('breakpoint, step, pause, resume, inject and cancel sent over REST act on the local run', async () => {
    const { s, base, origin } = await listening();
    const flow = slowChain('attach-commands', 8, 40);
    const local: RunEvent[] = [];
    let handle: ReturnType<typeof runFlow> | undefined;
    const client = new AttachClient({
      url: base,
      flow,
      input: 'go',
      localRunId: 'run_cmd',
      notice: () => {},
      onCommand: (cmd) => handle?.send(cmd),
      retryMs: 50,
    });
    client.start();
    const runId = await until(() => client.serverRunId, 'the welcome');
    handle = runFlow(flow, 'go', {
      runId: 'run_cmd',
      onEvent: (e) => {
        local.push(e);
        client.push(e);
      },
    });
    const command = async (body: unknown) => {
      const r = await fetch(`${base}/api/runs/${runId}/commands`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin },
        body: JSON.stringify(body),
      });
      expect(r.status, JSON.stringify(body)).toBe(202);
    };
    const onServer = (pred: (e: RunEvent) => boolean) => s.store.readEvents(runId).find(pred);
    await command({ type: 'breakpoint', nodeId: 'a4', on: true });
    await until(() => onServer((e) => e.type === 'run.paused'), 'paused at the breakpoint');
    expect(local.some((e) => e.type === 'node.started' && e.nodeId === 'a4')).toBe(false);
    await command({ type: 'step' });
    await until(() => onServer((e) => e.type === 'turn.completed' && e.nodeId === 'a4'), 'one step');
    await until(
      () => s.store.readEvents(runId).filter((e) => e.type === 'run.paused').length === 2,
      'paused after the step',
    );
    await command({ type: 'inject', text: 'mind the budget' });
    await command({ type: 'resume' });
    await until(() => onServer((e) => e.type === 'run.resumed'), 'resumed');
    await command({ type: 'pause' });
    await until(
      () => s.store.readEvents(runId).filter((e) => e.type === 'run.paused').length === 3,
      'paused again',
    );
    await command({ type: 'cancel', reason: 'from the editor' });
    expect((await handle.result).status).toBe('cancelled');
    expect(await client.drain(20_000)).toBe(true);
    client.close();
    await until(() => s.store.catalog.data.runs[runId]?.status === 'cancelled', 'cancelled on the server');
    expect(JSON.stringify(local)).toContain('mind the budget');
    expect(s.store.readEvents(runId)).toEqual(local.map((e) => ({ ...e, runId })));
  }, 60_000);

  it('a backlog goes out paced by the limits the server announces, in bounded messages, without a refusal', async () => {
    const { s, base } = await listening({ attach: { messagesPerSecond: 10, maxBatch: 20 } });
    const flow = slowChain('attach-backlog', 60, 0, 'x'.repeat(2000));
    const local = await localEvents(flow, 'run_backlog');
    // More messages (of at most 20 events) than the server's burst of 20: only pacing gets them in.
    expect(local.length).toBeGreaterThan(500);
    const notices: string[] = [];
    const client = new AttachClient({
      url: base,
      flow,
      input: 'go',
      localRunId: 'run_backlog',
      notice: (l) => notices.push(l),
      onCommand: () => {},
    });
    // The run is over before the server is reached: everything is a backlog.
    for (const e of local) client.push(e);
    client.start();
    const runId = await until(() => client.serverRunId, 'the welcome');
    expect(await client.drain(30_000)).toBe(true);
    client.close();
    await until(() => s.store.catalog.data.runs[runId]?.status === 'completed', 'completed on the server');
    expect(s.store.readEvents(runId)).toEqual(local.map((e) => ({ ...e, runId })));
    expect(notices.join('')).not.toMatch(/refused|lost/);
  }, 60_000);
});
