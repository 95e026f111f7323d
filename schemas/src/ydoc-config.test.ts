/**
 * The fine-grained layout: each config field its own entry, free text a Y.Text, canonical key
 * order, deterministic seeds, and conversion of documents in the old layout.
 */
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import type { Flow } from './flow.js';
import type { KindCatalog, KindInfo } from './kinds.js';
import { serializeFlow } from './serialize.js';
import {
  applyFlowToDoc,
  configLayout,
  docToFlow,
  LOAD,
  parts,
  seedDoc,
  seedUpdate,
  setConfigField,
  setMetaValue,
  setTextEditHint,
  textDiff,
} from './ydoc.js';

const agent: KindInfo = {
  kind: 'agent',
  role: 'agent',
  modelRefs: ['model'],
  configSchema: Type.Object({
    name: Type.Optional(Type.String()),
    role: Type.String(),
    model: Type.String(),
    prompt: Type.Array(Type.Object({ text: Type.String(), when: Type.Optional(Type.Unknown()) })),
    memory: Type.Optional(Type.Union([Type.Literal('transcript'), Type.Literal('thread')])),
    toolRounds: Type.Optional(Type.Integer()),
  }),
};
const catalog: KindCatalog = { get: (k) => (k === 'agent' ? agent : undefined) };
const layout = configLayout(catalog);

const flow = (): Flow =>
  ({
    version: 1,
    id: 'f',
    name: 'F',
    nodes: [
      {
        id: 'a',
        kind: 'agent',
        position: { x: 0, y: 0 },
        config: { model: 'default', role: 'Writer', prompt: [{ text: 'Hello' }] },
      },
    ],
    edges: [],
  }) as unknown as Flow;

function pair(): [Y.Doc, Y.Doc] {
  const a = new Y.Doc();
  seedDoc(a, flow(), layout);
  const b = new Y.Doc();
  Y.applyUpdate(b, Y.encodeStateAsUpdate(a));
  return [a, b];
}

function sync(a: Y.Doc, b: Y.Doc): void {
  Y.applyUpdate(b, Y.encodeStateAsUpdate(a, Y.encodeStateVector(b)));
  Y.applyUpdate(a, Y.encodeStateAsUpdate(b, Y.encodeStateVector(a)));
}

const config = (d: Y.Doc) => parts(d).nodes.get('a')!.get('config') as Y.Map<unknown>;
const cfgJson = (d: Y.Doc) => docToFlow(d, layout).nodes[0]!.config as Record<string, unknown>;

describe('fine-grained config layout', () => {
  it('holds fields as entries, free text as Y.Text, references and enums as plain values', () => {
    const [a] = pair();
    const c = config(a);
    expect(c.get('role')).toBeInstanceOf(Y.Text);
    expect(c.get('model')).toBe('default');
    const prompt = c.get('prompt') as Y.Array<Y.Map<unknown>>;
    expect(prompt).toBeInstanceOf(Y.Array);
    expect(prompt.get(0).get('text')).toBeInstanceOf(Y.Text);
    // The optional free-text field exists, empty, and reads as absent.
    expect(c.get('name')).toBeInstanceOf(Y.Text);
    expect(Object.keys(cfgJson(a))).toEqual(['role', 'model', 'prompt']);
  });

  it('merges concurrent edits to different fields of one node', () => {
    const [a, b] = pair();
    a.transact(() => setConfigField(config(a), 'role', 'Senior writer', layout.node('agent')));
    b.transact(() => setConfigField(config(b), 'toolRounds', 3, layout.node('agent')));
    b.transact(() => setConfigField(config(b), 'memory', 'thread', layout.node('agent')));
    sync(a, b);
    expect(cfgJson(a)).toEqual(cfgJson(b));
    expect(cfgJson(a)).toMatchObject({ role: 'Senior writer', toolRounds: 3, memory: 'thread' });
    // Canonical order, not arrival order.
    expect(Object.keys(cfgJson(a))).toEqual(['role', 'model', 'prompt', 'memory', 'toolRounds']);
    expect(serializeFlow(docToFlow(a, layout))).toBe(serializeFlow(docToFlow(b, layout)));
  });

  it('keeps both people typing into one text, each run contiguous', () => {
    const [a, b] = pair();
    const type = (d: Y.Doc, run: string) => {
      for (const ch of run) {
        const cur = (cfgJson(d).prompt as Array<{ text: string }>)[0]!.text;
        const next = `${cur}${ch}`;
        setTextEditHint(next, next.length);
        d.transact(
          () => setConfigField(config(d), 'prompt', [{ text: next }], layout.node('agent')),
          'local',
        );
      }
    };
    type(a, ' AAAA alpha');
    type(b, ' BBBB bravo');
    sync(a, b);
    const text = (cfgJson(a).prompt as Array<{ text: string }>)[0]!.text;
    expect(text).toBe((cfgJson(b).prompt as Array<{ text: string }>)[0]!.text);
    expect(text.length).toBe('Hello'.length + 22);
    expect(text.includes(' AAAA alpha')).toBe(true);
    expect(text.includes(' BBBB bravo')).toBe(true);
  });

  it('an emptied optional text reads as absent, and filling it again merges', () => {
    const [a, b] = pair();
    a.transact(() => setConfigField(config(a), 'name', 'Ann', layout.node('agent')));
    b.transact(() => setConfigField(config(b), 'name', 'Bob', layout.node('agent')));
    sync(a, b);
    const name = cfgJson(a).name as string;
    expect(name).toHaveLength(6);
    expect([...name].sort().join('')).toBe([...'AnnBob'].sort().join(''));
    a.transact(() => setConfigField(config(a), 'name', undefined, layout.node('agent')));
    expect('name' in cfgJson(a)).toBe(false);
  });

  it('seeds deterministically: two seeds of one flow are the same items', () => {
    expect(seedUpdate(flow(), layout)).toEqual(seedUpdate(flow(), layout));
    const a = new Y.Doc();
    seedDoc(a, flow(), layout);
    a.transact(() => setConfigField(config(a), 'role', 'Offline edit', layout.node('agent')));
    // The server restarted with no history and seeded the same flow again.
    const server = new Y.Doc();
    seedDoc(server, flow(), layout);
    sync(a, server);
    expect(cfgJson(server).role).toBe('Offline edit');
    expect(parts(server).nodes.size).toBe(1);
    expect(parts(server).nodeOrder.length).toBe(1);
    // Another flow seeds under another client id.
    const other = flow();
    other.name = 'G';
    const d1 = new Y.Doc();
    Y.applyUpdate(d1, seedUpdate(other, layout));
    expect([...d1.store.clients.keys()]).not.toEqual([...a.store.clients.keys()].slice(0, 1));
  });

  it('converts a document of the old layout (config one plain value) on load', () => {
    const old = new Y.Doc();
    const p = parts(old);
    old.transact(() => {
      p.meta.set('version', 1);
      p.meta.set('id', 'f');
      p.meta.set('name', 'F');
      const m = new Y.Map<unknown>();
      m.set('kind', 'agent');
      m.set('position', { x: 0, y: 0 });
      m.set('config', { role: 'Writer', model: 'default', prompt: [{ text: 'Hello' }] });
      p.nodes.set('a', m);
      p.nodeOrder.push(['a']);
    });
    const before = serializeFlow(docToFlow(old, layout));
    applyFlowToDoc(old, docToFlow(old, layout), layout, LOAD);
    expect(config(old)).toBeInstanceOf(Y.Map);
    expect(config(old).get('role')).toBeInstanceOf(Y.Text);
    expect(serializeFlow(docToFlow(old, layout))).toBe(before);
  });

  it('diffs text at the caret when the strings alone are ambiguous', () => {
    expect(textDiff('aa', 'aaa')).toEqual({ at: 2, del: 0, ins: 'a' });
    expect(textDiff('aa', 'aaa', 1)).toEqual({ at: 0, del: 0, ins: 'a' });
    expect(textDiff('abc', 'aXc')).toEqual({ at: 1, del: 1, ins: 'X' });
    expect(textDiff('a😀b', 'a😁b')).toEqual({ at: 1, del: 2, ins: '😁' });
  });
});

describe('input from peers', () => {
  it('a "__proto__" key a peer wrote never reaches an object’s prototype', () => {
    const [a] = pair();
    a.transact(() => {
      config(a).set('__proto__', { polluted: true });
      parts(a).meta.set('__proto__', { polluted: true });
      parts(a).nodes.get('a')!.set('__proto__', { polluted: true });
    });
    const f = docToFlow(a, layout) as unknown as Record<string, unknown>;
    const n = (f.nodes as Array<Record<string, unknown>>)[0]!;
    for (const o of [f, n, n.config as object]) {
      expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
      expect((o as { polluted?: boolean }).polluted).toBeUndefined();
    }
  });
});

describe('the flow’s description', () => {
  it('is a shared text: concurrent typing merges; empty reads as absent; a plain one is converted', () => {
    const [a, b] = pair();
    const meta = (d: Y.Doc) => parts(d).meta;
    expect(meta(a).get('description')).toBeInstanceOf(Y.Text);
    expect('description' in docToFlow(a, layout)).toBe(false);
    a.transact(() => setMetaValue(meta(a), 'description', 'Ann'));
    b.transact(() => setMetaValue(meta(b), 'description', 'Bob'));
    sync(a, b);
    expect(docToFlow(a, layout).description).toHaveLength(6);
    expect(docToFlow(a, layout).description).toBe(docToFlow(b, layout).description);
    // A document of the old layout held it as a plain string.
    const old = new Y.Doc();
    old.transact(() => {
      parts(old).meta.set('id', 'f');
      parts(old).meta.set('description', 'plain');
    });
    applyFlowToDoc(old, { ...flow(), description: 'plain' }, layout);
    expect(meta(old).get('description')).toBeInstanceOf(Y.Text);
    expect(docToFlow(old, layout).description).toBe('plain');
  });
});
