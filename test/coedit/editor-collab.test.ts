/**
 * The editor's own collaboration client (EditorStore + Collab, as in the browser) against the
 * real server: concurrent edits to two fields of one node through the inspector's path both
 * survive; a change the room refuses (its document would pass the size limit) is shown as
 * refused, and the editor stops resending it.
 */
import { defaultRegistry } from '@switchboard/nodes';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { Collab } from '../../editor/src/collab/collab.js';
import { roomSaveView } from '../../editor/src/collab/saveState.js';
import { setTextEditHint } from '../../editor/src/model/flowDoc.js';
import { EditorStore } from '../../editor/src/store/editorStore.js';
import { createServer, type SwitchboardServer } from '../../runtime/src/server/index.js';
import { simpleFlow, tempDir, until } from '../server/helpers.js';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function listening(maxDocBytes?: number): Promise<{ s: SwitchboardServer; url: string }> {
  const { dir, cleanup } = tempDir('sb-editor-collab-');
  const s = await createServer({
    dataDir: dir,
    editorDir: false,
    port: 0,
    rooms: { saveDelayMs: 30, saveMaxDelayMs: 100, ...(maxDocBytes ? { limits: { maxDocBytes } } : {}) },
  });
  cleanups.push(cleanup, () => s.close());
  const { url } = await s.listen();
  return { s, url };
}

function editor(url: string) {
  const store = new EditorStore({ registry: defaultRegistry, validateDelay: 5 });
  const origin = url;
  const collab = new Collab({
    store,
    url: `${url.replace('http', 'ws')}/api/yjs`,
    identity: { name: 'Ada', color: '#e11d48' },
    WebSocketPolyfill: class extends WebSocket {
      constructor(u: string | URL, protocols?: string | string[]) {
        super(u, protocols, { origin });
      }
    },
  });
  cleanups.push(() => {
    collab.dispose();
    store.dispose();
  });
  return { store, collab };
}

/** What the inspector does for one key typed at the end of a text field. */
function typeKey(store: EditorStore, node: string, field: string, ch: string): void {
  const config = (store.readNode(node)?.config ?? {}) as Record<string, string | undefined>;
  const cur = config[field] ?? '';
  const next = cur + ch;
  setTextEditHint(next, next.length);
  store.setConfig({ node }, field, next, true);
}

describe('the editor’s collaboration client', { timeout: 60_000 }, () => {
  it('two editors typing into two fields of one node, key by key, keep every key', async () => {
    const { s, url } = await listening();
    const a = editor(url);
    const b = editor(url);
    a.collab.open(simpleFlow('two-fields'));
    await until(() => a.collab.getSnapshot().status === 'live', 'a live');
    b.collab.open(simpleFlow('two-fields'));
    await until(() => b.collab.getSnapshot().joined?.adopted, 'b adopted the room');
    for (const ch of 'alpha') {
      typeKey(a.store, 'writer', 'role', ch);
      typeKey(b.store, 'writer', 'name', ch.toUpperCase());
    }
    const cfg = (st: EditorStore) => st.readNode('writer')?.config as { role: string; name?: string };
    await until(
      () => cfg(a.store).name === 'ALPHA' && cfg(b.store).role === 'writer rolealpha',
      'both fields',
    );
    expect(cfg(a.store)).toMatchObject({ role: 'writer rolealpha', name: 'ALPHA' });
    expect(a.store.serialize()).toBe(b.store.serialize());
    await until(
      () =>
        (s.store.catalog.data.flows['two-fields']?.flow.nodes[1]?.config as { name?: string })?.name ===
        'ALPHA',
      'saved',
    );
  });

  it('a change the room refuses is shown as refused and not sent again', async () => {
    const { s, url } = await listening(100_000);
    const a = editor(url);
    a.collab.open(simpleFlow('limited'));
    await until(() => a.collab.getSnapshot().status === 'live', 'live');
    a.store.setConfig({ node: 'writer' }, 'role', 'x'.repeat(150_000));
    await until(() => a.collab.getSnapshot().refused, 'the refusal');
    const snap = a.collab.getSnapshot();
    expect(snap.refused).toMatch(/limit of 100000 bytes/);
    expect(snap.status).toBe('offline');
    expect(roomSaveView(snap.saving, a.store.serialize(), snap.refused)?.kind).toBe('refused');
    await new Promise((r) => setTimeout(r, 300));
    expect(a.collab.getSnapshot().status).toBe('offline');
    const room = s.rooms.docOf('limited');
    expect(room ? JSON.stringify(room.toJSON()).length : 0).toBeLessThan(100_000);
  });
});
