import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { testServer, until } from './server/helpers.js';

type S = Awaited<ReturnType<typeof testServer>>;
let s: S | undefined;
const providers: WebsocketProvider[] = [];
afterEach(async () => {
  for (const p of providers.splice(0)) p.destroy();
  await s?.close();
  s = undefined;
});

/** ws with the Origin a browser on the editor's page would send. */
function wsWithOrigin(origin: string): typeof WebSocket {
  return class extends WebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols, { origin });
    }
  } as unknown as typeof WebSocket;
}

describe('Yjs rooms', () => {
  it('two y-websocket clients sync a flow document and see each other’s awareness', async () => {
    s = await testServer({ port: 0 });
    const { port } = await s.listen();
    const Polyfill = wsWithOrigin(`http://127.0.0.1:${port}`);
    const url = `ws://127.0.0.1:${port}/api/yjs`;
    const a = new Y.Doc();
    const b = new Y.Doc();
    const pa = new WebsocketProvider(url, 'doc-writer', a, {
      WebSocketPolyfill: Polyfill as never,
      disableBc: true,
    });
    const pb = new WebsocketProvider(url, 'doc-writer', b, {
      WebSocketPolyfill: Polyfill as never,
      disableBc: true,
    });
    providers.push(pa, pb);
    await until(() => pa.synced && pb.synced, 'both synced');
    a.getMap('nodes').set('writer', { kind: 'agent', x: 1 });
    await until(() => b.getMap('nodes').get('writer'), 'the edit at b');
    expect(b.getMap('nodes').get('writer')).toEqual({ kind: 'agent', x: 1 });
    b.getArray('edges').push(['e1']);
    await until(() => a.getArray('edges').length === 1, 'the edit at a');
    pa.awareness.setLocalStateField('user', { name: 'Ada' });
    await until(
      () =>
        [...pb.awareness.getStates().values()].some(
          (st) => (st as { user?: { name: string } }).user?.name === 'Ada',
        ),
      'awareness at b',
    );
    // A third client joining late gets the whole document from the room.
    const c = new Y.Doc();
    const pc = new WebsocketProvider(url, 'doc-writer', c, {
      WebSocketPolyfill: Polyfill as never,
      disableBc: true,
    });
    providers.push(pc);
    await until(() => pc.synced && c.getArray('edges').length === 1, 'late joiner synced');
    expect(c.getMap('nodes').toJSON()).toEqual(a.getMap('nodes').toJSON());
    // Other rooms stay apart.
    expect(s.rooms.docOf('other')).toBeUndefined();
    // Leaving removes the awareness state.
    pa.destroy();
    await until(() => pb.awareness.getStates().size === 2, 'a’s awareness gone at b');
  });

  it('drops a connection that sends garbage, keeping the room alive', async () => {
    s = await testServer({ port: 0 });
    const { port } = await s.listen();
    const origin = `http://127.0.0.1:${port}`;
    const url = `ws://127.0.0.1:${port}/api/yjs`;
    const a = new Y.Doc();
    const pa = new WebsocketProvider(url, 'room', a, {
      WebSocketPolyfill: wsWithOrigin(origin) as never,
      disableBc: true,
    });
    providers.push(pa);
    await until(() => pa.synced, 'synced');
    for (const payload of [Buffer.from([0, 2, 200, 1, 2, 3]), Buffer.from([9, 9, 9]), 'text is not Yjs']) {
      const ws = new WebSocket(`${url}/room`, { origin });
      await new Promise((r) => ws.once('open', r));
      const closed = new Promise<number>((r) => ws.once('close', (c) => r(c)));
      ws.send(payload);
      expect(await closed).toBe(4400);
    }
    a.getMap('m').set('k', 'v');
    const b = new Y.Doc();
    const pb = new WebsocketProvider(url, 'room', b, {
      WebSocketPolyfill: wsWithOrigin(origin) as never,
      disableBc: true,
    });
    providers.push(pb);
    await until(() => b.getMap('m').get('k') === 'v', 'room still syncing');
  });
});
