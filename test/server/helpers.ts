/** Shared helpers for the server tests: a server over a temp data directory, requests, waits. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Flow, RunEvent } from '@switchboard/schemas';
import WebSocket from 'ws';
import { agent, edge, flow, node } from '../../runtime/src/engine/testing/index.js';
import { createServer, type ServerOptions, type SwitchboardServer } from '../../runtime/src/server/index.js';

export const HOST = '127.0.0.1:5170';

export function tempDir(prefix = 'sb-server-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface InjectArg {
  method: string;
  url: string;
  payload?: string | Buffer;
  headers?: Record<string, string>;
  remoteAddress?: string;
}
export interface InjectRes {
  statusCode: number;
  body: string;
  headers: Record<string, string | string[] | number | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  json(): any;
}

export async function testServer(
  opts: ServerOptions = {},
): Promise<SwitchboardServer & { dir: string; req: (o: InjectArg) => Promise<InjectRes> }> {
  const { dir } = tempDir();
  const s = await createServer({ dataDir: dir, editorDir: false, port: 5170, ...opts });
  const req = (o: InjectArg) =>
    s.app.inject({
      ...o,
      headers: { host: HOST, ...(o.headers ?? {}) },
    } as never) as unknown as Promise<InjectRes>;
  const close = s.close.bind(s);
  return Object.assign(s, {
    dir,
    req,
    close: async () => {
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  });
}

/** start → writer → end on a scripted model. */
export function simpleFlow(id = 'simple', text = 'the draft'): Flow {
  return {
    ...flow(
      [node('start', 'start'), agent('writer'), node('end', 'end')],
      [edge('start', 'writer'), edge('writer', 'end')],
      [{ node: 'writer', text }],
    ),
    id,
    name: `Flow ${id}`,
  };
}

/** start → a1 → … → aN → end, each reply after `latencyMs`. */
export function slowChain(id: string, n: number, latencyMs: number, text = 'ok'): Flow {
  const nodes = [node('start', 'start')];
  const edges = [];
  let prev = 'start';
  for (let i = 1; i <= n; i++) {
    nodes.push(agent(`a${i}`));
    edges.push(edge(prev, `a${i}`));
    prev = `a${i}`;
  }
  nodes.push(node('end', 'end'));
  edges.push(edge(prev, 'end'));
  return {
    ...flow(nodes, edges),
    id,
    name: id,
    models: {
      default: {
        provider: 'scripted',
        latencyMs,
        script: [{ fallback: true, text, deltas: [text.slice(0, 1), text.slice(1)] }],
      },
    },
  };
}

export async function until<T>(
  fn: () => T | Promise<T>,
  what: string,
  timeoutMs = 20_000,
): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A message of the run-events socket, as a test reads it (events, durable notices, errors). */
export interface WsMessage {
  type: string;
  runId?: string;
  events?: RunEvent[];
  durable?: number;
  seq?: number;
  code?: string;
  message?: string;
}

/** A run-events client that keeps every event per run and checks order as they arrive. */
export class EventsClient {
  ws!: WebSocket;
  readonly events = new Map<string, RunEvent[]>();
  readonly problems: string[] = [];
  closeCode: number | undefined;
  private waiters: Array<() => void> = [];

  constructor(
    readonly url: string,
    readonly origin: string,
  ) {}

  /** Where the history starts for runs subscribed with an explicit `after`. */
  private readonly base = new Map<string, number>();

  lastSeq(runId: string): number {
    return this.events.get(runId)?.at(-1)?.seq ?? this.base.get(runId) ?? 0;
  }

  subscribeAfter(runId: string, after: number): void {
    if (!this.events.get(runId)?.length) this.base.set(runId, after);
    this.ws.send(JSON.stringify({ type: 'subscribe', runId, after }));
  }

  open(headers: Record<string, string> = {}): Promise<void> {
    this.closeCode = undefined;
    this.ws = new WebSocket(this.url, { origin: this.origin, headers });
    this.ws.on('message', (data) => {
      const msg = JSON.parse(String(data));
      if (msg.type === 'events') {
        const list = this.events.get(msg.runId) ?? [];
        this.events.set(msg.runId, list);
        for (const e of msg.events as RunEvent[]) {
          const last = this.lastSeq(msg.runId);
          if (e.seq !== last + 1) this.problems.push(`${msg.runId}: got seq ${e.seq} after ${last}`);
          else list.push(e);
        }
      } else if (msg.type === 'error') this.problems.push(`error ${msg.code}: ${msg.message}`);
      for (const w of this.waiters.splice(0)) w();
    });
    this.ws.on('close', (code) => {
      this.closeCode = code;
      for (const w of this.waiters.splice(0)) w();
    });
    return new Promise((res, rej) => {
      this.ws.once('open', () => res());
      this.ws.once('error', rej);
      this.ws.once('unexpected-response', (_req, r) => rej(new Error(`upgrade refused: ${r.statusCode}`)));
    });
  }

  subscribeRun(runId: string): void {
    this.ws.send(JSON.stringify({ type: 'subscribe', runId, after: this.lastSeq(runId) }));
  }

  subscribeFlow(flowId: string): void {
    const after: Record<string, number> = {};
    for (const id of this.events.keys()) after[id] = this.lastSeq(id);
    this.ws.send(JSON.stringify({ type: 'subscribe', flowId, after }));
  }

  async until(pred: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!pred()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }

  close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((r) => {
      this.ws.once('close', () => r());
      this.ws.close();
    });
  }
}

export function isFinal(e: RunEvent | undefined, runId: string): boolean {
  return !!e && e.runId === runId && /^run\.(completed|failed|cancelled|interrupted)$/.test(e.type);
}

/**
 * A WebSocket client that completes the handshake, subscribes, and then never reads: the
 * server's send buffer for it can only grow.
 */
export async function stalledSubscriber(
  port: number,
  origin: string,
  msg: unknown,
): Promise<import('node:net').Socket> {
  const { connect } = await import('node:net');
  const { randomBytes } = await import('node:crypto');
  const sock = connect(port, '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  sock.write(
    'GET /api/ws HTTP/1.1\r\n' +
      `Host: 127.0.0.1:${port}\r\nOrigin: ${origin}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  await new Promise<void>((res, rej) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString('latin1');
      if (buf.includes('\r\n\r\n')) {
        sock.off('data', onData);
        if (!buf.startsWith('HTTP/1.1 101')) rej(new Error(buf.split('\r\n')[0]));
        else res();
      }
    };
    sock.on('data', onData);
  });
  sock.pause();
  const payload = Buffer.from(JSON.stringify(msg));
  const mask = randomBytes(4);
  const header =
    payload.length < 126
      ? Buffer.from([0x81, 0x80 | payload.length])
      : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 255]);
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
  sock.write(Buffer.concat([header, mask, masked]));
  return sock;
}
