/**
 * Co-editing benchmark (`pnpm bench:coedit`, about half a minute): through the real server and
 * clients speaking y-websocket's protocol over real WebSockets,
 * - keystroke to the other editor's document at 0 and 80 ms one-way latency (a delaying TCP
 *   proxy), p50 and p99, one key every 30 ms into an agent's role (a Y.Text);
 * - a 1,000-node flow: room load time (join → synced), document size on disk (`.ydoc`) and in
 *   memory (encoded, and heap of a document holding it), bytes per keystroke;
 * - the cost of a save (serialize, validate, catalog write, history write) as the flow grows.
 * Figures print and go to results.json next to this file.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer as netServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultRegistry } from '@switchboard/nodes';
import type { Flow } from '@switchboard/schemas';
import {
  configLayout,
  docToFlow,
  flowToDoc,
  parts,
  setConfigField,
  setTextEditHint,
} from '@switchboard/schemas/ydoc';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import WebSocket from 'ws';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { generateFlow } from '../../../editor/bench/generate.js';
import { createServer, type SwitchboardServer } from '../../src/server/index.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const L = configLayout(defaultRegistry);
const results: Record<string, unknown> = {};
const now = () => performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const r1 = (x: number) => Math.round(x * 10) / 10;

async function until(fn: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(2);
  }
}

/** A TCP proxy delaying each chunk by `ms` each way (order kept). */
async function proxy(target: number, ms: number): Promise<{ port: number; close(): void }> {
  const socks = new Set<Socket>();
  const pipe = (a: Socket, b: Socket) => {
    a.on('data', (d) => setTimeout(() => b.destroyed || b.write(d), ms));
    a.on('close', () => setTimeout(() => b.destroy(), ms + 1));
    a.on('error', () => b.destroy());
  };
  const srv = netServer((c) => {
    const u = connect(target, '127.0.0.1');
    socks.add(c).add(u);
    pipe(c, u);
    pipe(u, c);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: (srv.address() as { port: number }).port,
    close: () => {
      for (const s of socks) s.destroy();
      srv.close();
    },
  };
}

async function server(dir: string): Promise<{ s: SwitchboardServer; port: number }> {
  const s = await createServer({
    dataDir: dir,
    editorDir: false,
    port: 0,
    rooms: { saveDelayMs: 60_000, saveMaxDelayMs: 60_000 },
  });
  const { port } = await s.listen();
  return { s, port };
}

async function put(s: SwitchboardServer, port: number, flow: Flow): Promise<void> {
  const r = await s.app.inject({
    method: 'PUT',
    url: `/api/flows/${flow.id}`,
    headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json' },
    payload: JSON.stringify(flow),
  });
  if (r.statusCode >= 300) throw new Error(`PUT ${flow.id}: ${r.statusCode} ${r.body}`);
}

/**
 * A client speaking y-websocket's protocol (sync step 1/2, updates) on Node's `ws`: what the
 * stock \`WebsocketProvider\` does, without its reconnect logic (not needed here).
 */
interface Client {
  doc: Y.Doc;
  provider: { synced: boolean; destroy(): void };
}

function enter(port: number, room: string, host = `127.0.0.1:${port}`): Client {
  const doc = new Y.Doc();
  // Through the proxy the Host header still names the server (its DNS-rebinding check).
  const ws = new WebSocket(`ws://127.0.0.1:${port}/api/yjs/${room}`, { headers: { host } });
  ws.binaryType = 'arraybuffer';
  const provider = { synced: false, destroy: () => ws.close() };
  const REMOTE = Symbol('remote');
  ws.on('open', () => {
    const enc = encoding.createEncoder();
    encoding.writeVarUint(enc, 0);
    syncProtocol.writeSyncStep1(enc, doc);
    ws.send(encoding.toUint8Array(enc));
  });
  ws.on('message', (data: ArrayBuffer) => {
    const dec = decoding.createDecoder(new Uint8Array(data));
    if (decoding.readVarUint(dec) !== 0) return; // awareness: not needed here
    const enc = encoding.createEncoder();
    encoding.writeVarUint(enc, 0);
    const kind = syncProtocol.readSyncMessage(dec, enc, doc, REMOTE);
    if (kind === syncProtocol.messageYjsSyncStep2) provider.synced = true;
    if (encoding.length(enc) > 1) ws.send(encoding.toUint8Array(enc));
  });
  doc.on('update', (u: Uint8Array, origin: unknown) => {
    if (origin === REMOTE || ws.readyState !== ws.OPEN) return;
    const enc = encoding.createEncoder();
    encoding.writeVarUint(enc, 0);
    syncProtocol.writeUpdate(enc, u);
    ws.send(encoding.toUint8Array(enc));
  });
  return { doc, provider };
}

const roleText = (doc: Y.Doc, node: string) =>
  (parts(doc).nodes.get(node)!.get('config') as Y.Map<unknown>).get('role') as Y.Text;

/** One key typed at the end of `node`'s role, as the inspector writes it. */
function key(doc: Y.Doc, node: string, ch: string): void {
  const cfg = parts(doc).nodes.get(node)!.get('config') as Y.Map<unknown>;
  const next = roleText(doc, node).toString() + ch;
  setTextEditHint(next, next.length);
  doc.transact(() => setConfigField(cfg, 'role', next, L.node('agent')));
}

async function keystrokes(latency: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-bench-coedit-'));
  const { s, port } = await server(dir);
  const p = latency ? await proxy(port, latency) : undefined;
  try {
    const flow = generateFlow(20, 30);
    flow.id = 'keys';
    await put(s, port, flow);
    const a = enter(p?.port ?? port, 'keys', `127.0.0.1:${port}`);
    const b = enter(p?.port ?? port, 'keys', `127.0.0.1:${port}`);
    await until(() => a.provider.synced && b.provider.synced, 'synced');
    const node = 'n1';
    const sent = new Map<number, number>();
    const lat: number[] = [];
    const base = roleText(b.doc, node).length;
    b.doc.on('update', () => {
      const len = roleText(b.doc, node).length - base;
      const t = sent.get(len);
      if (t !== undefined) {
        lat.push(now() - t);
        sent.delete(len);
      }
    });
    const N = 150;
    for (let i = 1; i <= N; i++) {
      sent.set(i, now());
      key(a.doc, node, String.fromCharCode(97 + (i % 26)));
      await sleep(30);
    }
    await until(() => lat.length === N, 'every key arrived');
    results[`keystroke to remote document, ${latency} ms one-way (ms)`] = {
      p50: r1(pct(lat, 50)),
      p99: r1(pct(lat, 99)),
      keys: N,
    };
    a.provider.destroy();
    b.provider.destroy();
  } finally {
    p?.close();
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function bigFlow(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-bench-coedit-'));
  const { s, port } = await server(dir);
  try {
    const flow = generateFlow(1000, 1500);
    flow.id = 'big';
    await put(s, port, flow);
    // The first room of this size the process opens pays for compiling its code paths.
    await put(s, port, { ...flow, id: 'warm-up' });
    const t00 = now();
    const w = enter(port, 'warm-up');
    await until(() => w.provider.synced && parts(w.doc).nodes.size === 1000, 'warm-up loaded');
    const cold = now() - t00;
    w.provider.destroy();
    const t0 = now();
    const a = enter(port, 'big');
    await until(() => a.provider.synced && parts(a.doc).nodes.size === 1000, 'loaded');
    const load = now() - t0;
    // A second editor joining the room that is open already.
    const t1 = now();
    const b = enter(port, 'big');
    await until(() => b.provider.synced && parts(b.doc).nodes.size === 1000, 'second loaded');
    const second = now() - t1;
    const room = s.rooms.docOf('big')!;
    const encoded = Y.encodeStateAsUpdate(room).byteLength;
    // Heap of a document holding the flow (built in this process; GC between readings).
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    const h0 = process.memoryUsage().heapUsed;
    const doc = flowToDoc(flow, L);
    gc?.();
    const heap = process.memoryUsage().heapUsed - h0;
    // Bytes per keystroke: the update a one-letter insert makes, and what reaches the peer.
    const sizes: number[] = [];
    a.doc.on('update', (u: Uint8Array) => sizes.push(u.byteLength));
    for (let i = 0; i < 20; i++) key(a.doc, 'n1', 'x');
    await until(() => roleText(b.doc, 'n1').toString().endsWith('x'.repeat(20)), 'keys at b');
    await s.rooms.flush('big');
    const disk = statSync(join(dir, 'rooms', 'big.ydoc')).size;
    const json = JSON.stringify(docToFlow(room, L)).length;
    results['1,000-node flow (1,500 edges)'] = {
      'room load, first editor, first room of the process (ms)': r1(cold),
      'room load, first editor (ms)': r1(load),
      'join of a second editor (ms)': r1(second),
      'document encoded (bytes)': encoded,
      'document on disk, .ydoc (bytes)': disk,
      'flow as JSON (bytes)': json,
      'document in memory, heap (MiB)': gc ? r1(heap / 1048576) : 'run with --expose-gc',
      'bytes per keystroke (update)': pct(sizes, 50),
    };
    doc.destroy();
    a.provider.destroy();
    b.provider.destroy();
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function saveCost(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-bench-coedit-'));
  const { s, port } = await server(dir);
  const out: Record<string, number> = {};
  try {
    for (const n of [100, 300, 1000, 3000]) {
      const flow = generateFlow(n, Math.round(n * 1.5));
      flow.id = `save-${n}`;
      await put(s, port, flow);
      const a = enter(port, flow.id);
      await until(() => a.provider.synced && parts(a.doc).nodes.size === n, 'loaded');
      const times: number[] = [];
      for (let i = 0; i < 7; i++) {
        key(a.doc, 'n1', 'y');
        await until(() => s.rooms.pending(flow.id), 'the change at the server');
        const t = now();
        await s.rooms.flush(flow.id);
        times.push(now() - t);
      }
      out[`${n} nodes (ms, median of 7)`] = r1(pct(times, 50));
      a.provider.destroy();
    }
    results['cost of a save (serialize, validate, catalog and history writes, fsync)'] = out;
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await keystrokes(0);
await keystrokes(80);
await bigFlow();
await saveCost();
console.log(JSON.stringify(results, null, 2));
writeFileSync(join(HERE, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
process.exit(0);
