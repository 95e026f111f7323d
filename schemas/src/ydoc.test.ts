/**
 * `applyFlowToDoc`: a flow written from elsewhere (the REST API into an open room, the catalog
 * into a room restored from its history) lands as the smallest change.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import type { Flow } from './flow.js';
import { serializeFlow } from './serialize.js';
import { applyFlowToDoc, docToFlow, flowToDoc, isEmptyFlowDoc, jsonEqual, parts } from './ydoc.js';

const triage = (): Flow =>
  JSON.parse(
    readFileSync(fileURLToPath(new URL('../../flows/support-triage.json', import.meta.url)), 'utf8'),
  ) as Flow;
/** The canonical text of a flow as the shared document holds it (config keys sorted: no schemas here). */
const canon = (f: Flow) => serializeFlow(docToFlow(flowToDoc(f)));

function updatesOf(doc: Y.Doc, fn: () => void): number {
  let n = 0;
  const count = () => n++;
  doc.on('update', count);
  fn();
  doc.off('update', count);
  return n;
}

describe('applyFlowToDoc', () => {
  it('changes nothing when the document holds the flow already', () => {
    const doc = flowToDoc(triage());
    expect(updatesOf(doc, () => applyFlowToDoc(doc, triage()))).toBe(0);
    expect(serializeFlow(docToFlow(doc))).toBe(canon(triage()));
  });

  it('touches only what differs: an unchanged node keeps its Yjs map', () => {
    const doc = flowToDoc(triage());
    const before = parts(doc).nodes.get('triage');
    const f = triage();
    f.name = 'Renamed';
    (f.nodes.find((n) => n.id === 'sender')!.config as Record<string, unknown>).role = 'Polite sender';
    f.nodes = f.nodes.filter((n) => n.id !== 'readme');
    f.edges = f.edges.filter((e) => e.source !== 'readme' && e.target !== 'readme');
    f.nodes.push({ id: 'extra', kind: 'note', position: { x: 5, y: 5 }, config: { text: 'hi' } });
    f.edges.reverse();
    expect(updatesOf(doc, () => applyFlowToDoc(doc, f))).toBe(1);
    expect(parts(doc).nodes.get('triage')).toBe(before);
    expect(parts(doc).nodes.has('readme')).toBe(false);
    expect(serializeFlow(docToFlow(doc))).toBe(canon(f));
    // What a co-editor receives is the same flow.
    const peer = new Y.Doc();
    Y.applyUpdate(peer, Y.encodeStateAsUpdate(doc));
    expect(serializeFlow(docToFlow(peer))).toBe(canon(f));
  });

  it('reads configs in canonical key order whatever order they were written in', () => {
    const doc = flowToDoc(triage());
    const f = triage();
    const n = f.nodes.find((x) => Object.keys(x.config ?? {}).length > 1)!;
    n.config = Object.fromEntries(Object.entries(n.config as object).reverse());
    expect(updatesOf(doc, () => applyFlowToDoc(doc, f))).toBe(0);
    expect(serializeFlow(docToFlow(doc))).toBe(canon(triage()));
    expect(jsonEqual({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(jsonEqual({ a: [1, { b: null }] }, { a: [1, { b: null }] })).toBe(true);
  });

  it('fills an empty document and refuses what the editor cannot hold', () => {
    const doc = new Y.Doc();
    expect(isEmptyFlowDoc(doc)).toBe(true);
    applyFlowToDoc(doc, triage());
    expect(isEmptyFlowDoc(doc)).toBe(false);
    expect(serializeFlow(docToFlow(doc))).toBe(canon(triage()));
    expect(() => applyFlowToDoc(doc, { nodes: 1, edges: [] })).toThrow('/nodes is not an array');
    expect(serializeFlow(docToFlow(doc))).toBe(canon(triage()));
  });
});
