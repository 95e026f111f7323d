/**
 * Convergence of the shared flow document under concurrent editing (property test).
 *
 * 3–8 simulated editors, each a real Y.Doc edited through the editor's own edit functions, and
 * a room (a Y.Doc relaying updates as the server's room does). Messages travel in random order
 * with random delays; editors disconnect (what was in flight is lost) and reconnect (the
 * y-websocket resync: each side sends what the other's state vector lacks). Edits: config
 * fields, text inserts and deletes, typing runs into one shared prompt, node and edge adds and
 * removes, moves. Afterwards every editor and the saved flow hold the same bytes; every field
 * only one editor touched holds that editor's last value; each editor's typed run into the
 * shared prompt is contiguous.
 *
 * CI runs 60 cases; SWITCHBOARD_FULL=1 runs 1,000. Replay a failure with SWITCHBOARD_SEED.
 */
import { validate } from '@switchboard/nodes';
import { serializeFlow } from '@switchboard/schemas';
import { docToFlow, seedDoc } from '@switchboard/schemas/ydoc';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
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

const FULL = process.env.SWITCHBOARD_FULL === '1';
const RUNS = FULL ? 1000 : 60;
const SEED = process.env.SWITCHBOARD_SEED ? Number(process.env.SWITCHBOARD_SEED) : Date.now() % 2 ** 31;
const REMOTE = Symbol('remote');

/** Runs one case; returns the final docs for the assertions. */
export function simulate(nClients: number, ops: Op[]) {
  const room = new Y.Doc();
  seedDoc(room, baseFlow(), L);
  const touches = new Touches();
  const removedNodes = new Set<string>();
  const clients: Client[] = [];
  for (let i = 0; i < nClients; i++) {
    const doc = new Y.Doc();
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(room), REMOTE);
    const client = newClient(doc, i);
    doc.on('update', (u: Uint8Array, origin: unknown) => {
      if (origin !== REMOTE && client.online) client.up.push(u);
    });
    clients.push(client);
  }
  // The room relays what it integrates to everyone else online (as yjs-room.ts does).
  room.on('update', (u: Uint8Array, origin: unknown) => {
    clients.forEach((c, i) => {
      if (c.online && i !== origin) c.down.push(u);
    });
  });

  const apply = (op: Op) => {
    const cl = clients[op.c]!;
    switch (op.t) {
      case 'deliver': {
        for (let k = 0; k < op.n; k++) {
          const q = op.up ? cl.up : cl.down;
          if (q.length === 0) return;
          // Any message in flight may arrive first.
          const [u] = q.splice(op.pick % q.length, 1);
          if (op.up) Y.applyUpdate(room, u!, op.c);
          else Y.applyUpdate(cl.doc, u!, REMOTE);
        }
        return;
      }
      case 'disconnect':
        cl.online = false;
        cl.up.length = 0;
        cl.down.length = 0;
        return;
      case 'reconnect':
        if (cl.online) return;
        cl.online = true;
        // y-websocket's resync: each side sends what the other's state vector lacks.
        cl.up.push(Y.encodeStateAsUpdate(cl.doc, Y.encodeStateVector(room)));
        cl.down.push(Y.encodeStateAsUpdate(room, Y.encodeStateVector(cl.doc)));
        return;
      default:
        applyEdit(cl, op, touches, removedNodes);
    }
  };

  for (const op of ops) apply(op);
  // Everyone back online, every message delivered (still in random order).
  for (let c = 0; c < nClients; c++) apply({ t: 'reconnect', c });
  let rounds = 0;
  while (clients.some((c) => c.up.length || c.down.length)) {
    for (let c = 0; c < nClients; c++) {
      apply({ t: 'deliver', c, up: true, pick: rounds * 7 + c, n: 3 });
      apply({ t: 'deliver', c, up: false, pick: rounds * 5 + c, n: 3 });
    }
    if (++rounds > 100_000) throw new Error('messages never drained');
  }
  return { room, clients, touches, removedNodes };
}

function check(nClients: number, ops: Op[]): void {
  const { room, clients, touches, removedNodes } = simulate(nClients, ops);
  // The saved flow: what the room's save writes (the one validator accepts its configs).
  const saved = serializeFlow(docToFlow(room, L));
  const v = validate(JSON.parse(saved));
  expect(v.errors.filter((e) => e.code === 'config' || e.code === 'edge-config')).toEqual([]);
  for (const c of clients) expect(serializeFlow(docToFlow(c.doc, L))).toBe(saved);
  checkFinal(
    saved,
    clients,
    touches,
    removedNodes,
    (got, want, what) => expect(got, what).toEqual(want),
    (text, part, what) => expect(text, what).toContain(part),
  );
}

describe('co-editing converges', () => {
  it(`3–8 editors, random edits, delivery order, delays and disconnects (seed ${SEED})`, () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 3, max: 8 })
          .chain((n) => fc.tuple(fc.constant(n), fc.array(opArb(n), { minLength: 20, maxLength: 160 }))),
        ([n, ops]) => check(n, ops),
      ),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('control: a whole config as one value (the old layout) loses a concurrent edit', () => {
    const a = new Y.Doc();
    const b = new Y.Doc();
    a.getMap('n').set('config', { role: 'x', toolRounds: 1 });
    Y.applyUpdate(b, Y.encodeStateAsUpdate(a));
    a.getMap('n').set('config', { role: 'edited by a', toolRounds: 1 });
    b.getMap('n').set('config', { role: 'x', toolRounds: 4 });
    Y.applyUpdate(b, Y.encodeStateAsUpdate(a));
    Y.applyUpdate(a, Y.encodeStateAsUpdate(b));
    const cfg = a.getMap('n').get('config') as { role: string; toolRounds: number };
    // One of the two edits is gone: what the fine-grained layout exists to prevent.
    expect(cfg.role === 'edited by a' && cfg.toolRounds === 4).toBe(false);
  });
});
