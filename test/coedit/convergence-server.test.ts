/**
 * The convergence property through the real server: editors on stock y-websocket clients over
 * real WebSockets in one room, making the random edits of the simulated test (with real network
 * timing, disconnects and reconnects); afterwards every editor, the room and the saved catalog
 * hold the same flow, fields one editor alone touched hold its last value, and typed runs are
 * contiguous.
 */
import { serializeFlow } from '@switchboard/schemas';
import { docToFlow } from '@switchboard/schemas/ydoc';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { createServer, type SwitchboardServer } from '../../runtime/src/server/index.js';
import { tempDir, until } from '../server/helpers.js';
import {
  applyEdit,
  baseFlow,
  type Client,
  checkFinal,
  L,
  newClient,
  type Op,
  opArb,
  Touches,
} from './sim.js';

const SEED = process.env.SWITCHBOARD_SEED ? Number(process.env.SWITCHBOARD_SEED) : Date.now() % 2 ** 31;
const servers: SwitchboardServer[] = [];
const providers: WebsocketProvider[] = [];
const cleanups: Array<() => void> = [];
afterEach(async () => {
  for (const p of providers.splice(0)) p.destroy();
  for (const s of servers.splice(0)) await s.close();
  for (const c of cleanups.splice(0)) c();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('co-editing converges through the real server', () => {
  it(`4 editors over WebSockets, random edits and disconnects (seed ${SEED})`, {
    timeout: 120_000,
  }, async () => {
    const { dir, cleanup } = tempDir('sb-conv-');
    cleanups.push(cleanup);
    const s = await createServer({
      dataDir: dir,
      editorDir: false,
      port: 0,
      rooms: { saveDelayMs: 30, saveMaxDelayMs: 100 },
    });
    servers.push(s);
    const { port } = await s.listen();
    const cases = fc.sample(fc.array(opArb(4), { minLength: 60, maxLength: 120 }), {
      numRuns: 3,
      seed: SEED,
    });
    for (const [k, ops] of cases.entries()) {
      const id = `conv-${k}`;
      const put = await s.app.inject({
        method: 'PUT',
        url: `/api/flows/${id}`,
        headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ ...baseFlow(), id }),
      });
      expect(put.statusCode).toBe(201);
      const clients: Array<Client & { provider: WebsocketProvider }> = [];
      for (let i = 0; i < 4; i++) {
        const doc = new Y.Doc();
        const provider = new WebsocketProvider(`ws://127.0.0.1:${port}/api/yjs`, id, doc, {
          WebSocketPolyfill: WebSocket as never,
          disableBc: true,
          maxBackoffTime: 100,
        });
        providers.push(provider);
        await until(() => provider.synced, `editor ${i} synced`);
        clients.push(Object.assign(newClient(doc, i), { provider }));
      }
      const touches = new Touches();
      const removed = new Set<string>();
      for (const op of ops as Op[]) {
        const cl = clients[op.c]!;
        if (op.t === 'deliver') await sleep(op.n);
        else if (op.t === 'disconnect') cl.provider.disconnect();
        else if (op.t === 'reconnect') void cl.provider.connect();
        else applyEdit(cl, op, touches, removed);
      }
      for (const cl of clients) if (!cl.provider.wsconnected) void cl.provider.connect();
      const room = () => s.rooms.docOf(id)!;
      const text = (d: Y.Doc) => serializeFlow(docToFlow(d, L));
      await until(
        () => clients.every((c) => c.provider.synced && text(c.doc) === text(room())),
        'every editor holds the room’s flow',
        30_000,
      );
      await s.rooms.flush(id);
      const saved = serializeFlow(s.store.catalog.data.flows[id]!.flow);
      expect(saved).toBe(text(room()));
      checkFinal(
        saved,
        clients,
        touches,
        removed,
        (got, want, what) => expect(got, what).toEqual(want),
        (t, part, what) => expect(t, what).toContain(part),
      );
      for (const c of clients) c.provider.destroy();
    }
  });
});
