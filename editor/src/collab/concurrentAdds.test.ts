import { defaultRegistry } from '@switchboard/nodes';
import { serializeFlow } from '@switchboard/schemas';
import { docToFlow } from '@switchboard/schemas/ydoc';
import { afterEach, describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { EditorStore } from '../store/editorStore.js';
import { emptyFlow } from '../testing/fixtures.js';

const stores: EditorStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.dispose();
});

/** Two editors on one room's document, each with its own copy; `sync` exchanges what each lacks. */
function twoEditors() {
  const a = new EditorStore({ registry: defaultRegistry, validateDelay: 1 });
  a.load(emptyFlow());
  const docB = new Y.Doc();
  Y.applyUpdate(docB, Y.encodeStateAsUpdate(a.doc));
  const b = new EditorStore({ registry: defaultRegistry, validateDelay: 1, doc: docB });
  stores.push(a, b);
  const sync = async () => {
    // Twice, with the repairs (queued as microtasks) in between, as a live connection would.
    for (let i = 0; i < 2; i++) {
      const ua = Y.encodeStateAsUpdate(a.doc, Y.encodeStateVector(b.doc));
      const ub = Y.encodeStateAsUpdate(b.doc, Y.encodeStateVector(a.doc));
      Y.applyUpdate(b.doc, ua);
      Y.applyUpdate(a.doc, ub);
      await new Promise((r) => setTimeout(r, 0));
    }
  };
  return { a, b, sync };
}

const agents = (s: EditorStore) => docToFlow(s.doc).nodes.filter((n) => n.kind === 'agent');

describe('concurrent adds under one id', () => {
  it('two people add an agent at the same moment: both agents survive, under different ids', async () => {
    const { a, b, sync } = twoEditors();
    const idA = a.addNode('agent', { x: 100, y: 100 });
    const idB = b.addNode('agent', { x: 500, y: 300 });
    expect(idA).toBe(idB); // the same readable id, picked in each copy
    await sync();
    expect(serializeFlow(docToFlow(a.doc))).toBe(serializeFlow(docToFlow(b.doc)));
    const got = agents(a);
    expect(got).toHaveLength(2);
    expect(new Set(got.map((n) => n.id)).size).toBe(2);
    expect(got.map((n) => n.position).sort((p, q) => p.x - q.x)).toEqual([
      { x: 100, y: 100 },
      { x: 500, y: 300 },
    ]);
  });

  it('what the losing editor drew on its node since (config, edges) follows it to the new id', async () => {
    const { a, b, sync } = twoEditors();
    a.addNode('agent', { x: 100, y: 100 });
    const mine = b.addNode('agent', { x: 500, y: 300 });
    b.setConfig({ node: mine }, 'role', 'drawn by b');
    const startId = docToFlow(b.doc).nodes.find((n) => n.kind === 'start')!.id;
    const edge = b.connect(startId, undefined, mine, undefined);
    expect('id' in edge).toBe(true);
    await sync();
    const flow = docToFlow(a.doc);
    expect(serializeFlow(flow)).toBe(serializeFlow(docToFlow(b.doc)));
    const bNode = agents(a).find((n) => (n.config as { role?: string }).role === 'drawn by b')!;
    expect(bNode).toBeDefined();
    expect(bNode.position).toEqual({ x: 500, y: 300 });
    // b's edge ends at b's node, wherever the id went.
    const fromStart = flow.edges.filter((e) => e.source === startId);
    expect(fromStart).toHaveLength(1);
    expect(fromStart[0]!.target).toBe(bNode.id);
  });

  it('a deletion by a co-editor is an edit, not a loss: it is not undone', async () => {
    const { a, b, sync } = twoEditors();
    const id = b.addNode('agent', { x: 10, y: 10 });
    await sync();
    a.select({ nodes: [id] });
    a.deleteSelection();
    await sync();
    expect(agents(a)).toHaveLength(0);
    expect(agents(b)).toHaveLength(0);
  });

  it('two people loading a template at the same moment get one document, not both doubled', async () => {
    const { a, b, sync } = twoEditors();
    const t = {
      ...emptyFlow(),
      nodes: [...emptyFlow().nodes, { id: 'w', kind: 'agent', position: { x: 1, y: 1 }, config: {} }],
    };
    a.load(t);
    b.load(t);
    await sync();
    expect(agents(a).map((n) => n.id)).toEqual(['w']);
    expect(serializeFlow(docToFlow(a.doc))).toBe(serializeFlow(docToFlow(b.doc)));
  });

  it('control: without the watch, one of the two agents is lost', async () => {
    const { a, b, sync } = twoEditors();
    for (const s of [a, b]) s.dispose();
    a.addNode('agent', { x: 100, y: 100 });
    b.addNode('agent', { x: 500, y: 300 });
    await sync();
    expect(agents(a)).toHaveLength(1);
  });
});
