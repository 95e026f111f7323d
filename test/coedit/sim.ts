/**
 * The editors of the convergence tests: what each one does (the editor's own edit functions on
 * a real Y.Doc) and what it remembers (its caret in the shared prompt, what it typed, which
 * fields it touched), shared by the simulated network and the real server's version.
 */
import { defaultRegistry } from '@switchboard/nodes';
import type { Flow } from '@switchboard/schemas';
import { configLayout, docToFlow, parts, setTextEditHint } from '@switchboard/schemas/ydoc';
import fc from 'fast-check';
import * as Y from 'yjs';
import { addNodes, patchNodes, removeElements, setConfigValue } from '../../editor/src/model/edits.js';
import { simpleFlow } from '../server/helpers.js';

export const L = configLayout(defaultRegistry);

/** The flow every room starts from: start → a1 → a2 → end. */
export function baseFlow(): Flow {
  const f = simpleFlow('conv');
  const writer = f.nodes.find((n) => n.id === 'writer')!;
  f.nodes = f.nodes.filter((n) => n.id !== 'writer');
  const a1 = { ...structuredClone(writer), id: 'a1', position: { x: 200, y: 0 } };
  const a2 = { ...structuredClone(writer), id: 'a2', position: { x: 400, y: 0 } };
  (a1.config as Record<string, unknown>).prompt = [{ text: 'Shared:' }];
  f.nodes.splice(1, 0, a1, a2);
  f.edges = [
    { id: 'e1', kind: 'handover', source: 'start', target: 'a1' },
    { id: 'e2', kind: 'handover', source: 'a1', target: 'a2' },
    { id: 'e3', kind: 'handover', source: 'a2', target: 'end' },
  ];
  return f;
}

export type Op =
  | { t: 'type'; c: number }
  | { t: 'text'; c: number; node: 'a1' | 'a2'; field: 'role' | 'name'; at: number; del: number; ins: string }
  | { t: 'field'; c: number; node: 'a1' | 'a2'; field: 'toolRounds' | 'memory' | 'retries'; v: number }
  | { t: 'move'; c: number; pick: number; x: number; y: number }
  | { t: 'addNode'; c: number }
  | { t: 'removeNode'; c: number; pick: number }
  | { t: 'addEdge'; c: number; s: number; d: number }
  | { t: 'removeEdge'; c: number; pick: number }
  | { t: 'deliver'; c: number; up: boolean; pick: number; n: number }
  | { t: 'disconnect'; c: number }
  | { t: 'reconnect'; c: number };

export const opArb = (clients: number): fc.Arbitrary<Op> => {
  const c = fc.integer({ min: 0, max: clients - 1 });
  const node = fc.constantFrom('a1' as const, 'a2' as const);
  return fc.oneof(
    { weight: 4, arbitrary: fc.record({ t: fc.constant('type' as const), c }) },
    {
      weight: 3,
      arbitrary: fc.record({
        t: fc.constant('text' as const),
        c,
        node,
        field: fc.constantFrom('role' as const, 'name' as const),
        at: fc.double({ min: 0, max: 1, noNaN: true }),
        del: fc.integer({ min: 0, max: 3 }),
        ins: fc.string({ maxLength: 3 }),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('field' as const),
        c,
        node,
        field: fc.constantFrom('toolRounds' as const, 'memory' as const, 'retries' as const),
        v: fc.integer({ min: 0, max: 5 }),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('move' as const),
        c,
        pick: fc.nat(),
        x: fc.integer({ min: -500, max: 500 }),
        y: fc.integer({ min: -500, max: 500 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('addNode' as const), c }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('removeNode' as const), c, pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('addEdge' as const), c, s: fc.nat(), d: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('removeEdge' as const), c, pick: fc.nat() }) },
    {
      weight: 6,
      arbitrary: fc.record({
        t: fc.constant('deliver' as const),
        c,
        up: fc.boolean(),
        pick: fc.nat(),
        n: fc.integer({ min: 1, max: 4 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('disconnect' as const), c }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('reconnect' as const), c }) },
  );
};

/** A node's config as JSON, through the shared layout. */
export const configOf = (doc: Y.Doc, id: string) =>
  docToFlow(doc, L).nodes.find((n) => n.id === id)?.config as Record<string, unknown> | undefined;

export interface Client {
  doc: Y.Doc;
  online: boolean;
  up: Uint8Array[];
  down: Uint8Array[];
  /** Where this editor's caret is in the shared prompt (sticks to its own last letter). */
  caret?: Y.RelativePosition;
  typed: string;
  added: number;
  letter: string;
}

/** What each editor last wrote into each field, and who touched it. */
export class Touches {
  readonly by = new Map<string, Map<number, unknown>>();
  note(key: string, c: number, value: unknown): void {
    let m = this.by.get(key);
    if (!m) {
      m = new Map();
      this.by.set(key, m);
    }
    m.set(c, value);
  }
}

export const promptText = (doc: Y.Doc): Y.Text | undefined => {
  const cfg = parts(doc).nodes.get('a1')?.get('config') as Y.Map<unknown> | undefined;
  const prompt = cfg?.get('prompt') as Y.Array<Y.Map<unknown>> | undefined;
  const t = prompt?.length ? prompt.get(0).get('text') : undefined;
  return t instanceof Y.Text ? t : undefined;
};
const nodeIds = (doc: Y.Doc) => [...parts(doc).nodes.keys()].sort();
const edgeIds = (doc: Y.Doc) => [...parts(doc).edges.keys()].sort();

/** A new editor on `doc` (which holds the room's flow already). */
export function newClient(doc: Y.Doc, index: number): Client {
  const t = promptText(doc)!;
  return {
    doc,
    online: true,
    up: [],
    down: [],
    // The caret starts at the end of the prompt and sticks to the letter before it, as the
    // inspector's does (a co-editor's text arriving at the caret goes after it).
    caret: Y.createRelativePositionFromTypeIndex(t, t.length, -1),
    typed: '',
    added: 0,
    letter: String.fromCharCode(0x3b1 + index), // α, β, γ…: nobody else types them
  };
}

/** Applies an editing op (not a network one) as editor `c` would; returns false if it was a no-op. */
export function applyEdit(cl: Client, op: Op, touches: Touches, removedNodes: Set<string>): void {
  const doc = cl.doc;
  switch (op.t) {
    case 'type': {
      const t = promptText(doc);
      if (!t) return;
      const abs = cl.caret ? Y.createAbsolutePositionFromRelativePosition(cl.caret, doc) : undefined;
      const at = abs?.type === t ? abs.index : t.length;
      const before = t.toString();
      const ch = cl.letter;
      const next = before.slice(0, at) + ch + before.slice(at);
      // As the inspector does: the whole new value, with where the caret ended up.
      setTextEditHint(next, at + 1);
      const segs = (configOf(doc, 'a1')!.prompt as Array<Record<string, unknown>>).map((s, i) =>
        i === 0 ? { ...s, text: next } : s,
      );
      setConfigValue(doc, { node: 'a1' }, 'prompt', segs, L);
      cl.typed += ch;
      cl.caret = Y.createRelativePositionFromTypeIndex(t, at + 1, -1);
      return;
    }
    case 'text': {
      const cur = (configOf(doc, op.node)?.[op.field] as string | undefined) ?? '';
      const at = Math.floor(op.at * cur.length);
      const next = cur.slice(0, at) + op.ins + cur.slice(Math.min(cur.length, at + op.del));
      if (next === cur || (op.field === 'role' && next === '')) return;
      setTextEditHint(next, at + op.ins.length);
      setConfigValue(doc, { node: op.node }, op.field, next === '' ? undefined : next, L);
      touches.note(`${op.node}/${op.field}`, op.c, configOf(doc, op.node)?.[op.field]);
      return;
    }
    case 'field': {
      const v = op.field === 'memory' ? ['transcript', 'thread', 'summary'][op.v % 3] : op.v;
      setConfigValue(doc, { node: op.node }, op.field, v, L);
      touches.note(`${op.node}/${op.field}`, op.c, v);
      return;
    }
    case 'move': {
      const ids = nodeIds(doc);
      const id = ids[op.pick % ids.length]!;
      patchNodes(doc, { [id]: { position: { x: op.x, y: op.y } } });
      touches.note(`${id}/position`, op.c, { x: op.x, y: op.y });
      return;
    }
    case 'addNode': {
      const id = `c${op.c}n${cl.added++}`;
      addNodes(
        doc,
        [
          {
            id,
            kind: 'note',
            position: { x: op.c * 10, y: cl.added * 10 },
            config: { text: `note of ${op.c}` },
          },
        ],
        [],
        L,
      );
      return;
    }
    case 'removeNode': {
      // The prompt's node and the start/end stay, so the text properties remain checkable.
      const ids = nodeIds(doc).filter((id) => /^c\d+n\d+$/.test(id));
      if (ids.length === 0) return;
      const id = ids[op.pick % ids.length]!;
      removeElements(doc, [id]);
      removedNodes.add(id);
      return;
    }
    case 'addEdge': {
      // Forward edges only (start < a1 < a2 < end): the flow stays valid, so the room saves it.
      const s = ['start', 'a1'][op.s % 2]!;
      const d = ['a2', 'end'][op.d % 2]!;
      addNodes(doc, [], [{ id: `c${op.c}e${cl.added++}`, kind: 'handover', source: s, target: d }], L);
      return;
    }
    case 'removeEdge': {
      // Editors' own edges: the base chain stays, so every node stays reachable.
      const ids = edgeIds(doc).filter((id) => /^c\d+e\d+$/.test(id));
      if (ids.length === 0) return;
      removeElements(doc, [], [ids[op.pick % ids.length]!]);
      return;
    }
    default:
      return;
  }
}

/** The assertions on the final flow: fields one editor alone touched, and the typed runs. */
export function checkFinal(
  saved: string,
  clients: Client[],
  touches: Touches,
  removedNodes: Set<string>,
  expectEq: (got: unknown, want: unknown, what: string) => void,
  expectContains: (text: string, part: string, what: string) => void,
): void {
  const final = JSON.parse(saved) as Flow;
  const nodeOf = (id: string) => final.nodes.find((n) => n.id === id);
  for (const [key, by] of touches.by) {
    if (by.size !== 1) continue;
    const [id, field] = key.split('/') as [string, string];
    if (removedNodes.has(id)) continue;
    const [value] = [...by.values()];
    const n = nodeOf(id);
    if (!n) continue;
    const got = field === 'position' ? n.position : (n.config as Record<string, unknown>)[field];
    expectEq(got, value, `${key}, touched by editor ${[...by.keys()][0]} only`);
  }
  const text = (nodeOf('a1')!.config as { prompt: Array<{ text: string }> }).prompt[0]!.text;
  for (const c of clients) if (c.typed) expectContains(text, c.typed, `editor ${c.letter}'s run`);
}
