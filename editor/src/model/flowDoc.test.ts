import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultRegistry } from '@switchboard/nodes';
import { serializeFlow } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { richFlow } from '../testing/fixtures.js';
import { configLayout, docToFlow, flowToDoc, loadFlowIntoDoc, UnrepresentableFlowError } from './flowDoc.js';

const layout = configLayout(defaultRegistry);

const flowsDir = fileURLToPath(new URL('../../../flows/', import.meta.url));
const flowFiles = (() => {
  try {
    return readdirSync(flowsDir).filter((f) => f.endsWith('.json') && !f.endsWith('.tests.json'));
  } catch {
    return [];
  }
})();

function roundTrip(flow: unknown): string {
  return serializeFlow(docToFlow(flowToDoc(flow, layout), layout));
}

describe('flow ↔ Y.Doc', () => {
  it('round-trips a flow touching every kind byte for byte', () => {
    const f = richFlow();
    expect(roundTrip(f)).toBe(serializeFlow(f));
  });

  it('keeps node order and puts config keys in canonical order (schema, then unknown keys sorted)', () => {
    const f = richFlow();
    f.nodes.reverse();
    const cfg = f.nodes.find((n) => n.kind === 'agent')!.config as Record<string, unknown>;
    const shuffled = Object.fromEntries([
      ['zz', { y: 1, x: 2 }],
      ['aa', 1],
      ...Object.entries(cfg).reverse(),
    ]);
    f.nodes.find((n) => n.kind === 'agent')!.config = shuffled;
    const text = roundTrip(f);
    const back = JSON.parse(text);
    expect(back.nodes.map((n: { id: string }) => n.id)).toEqual(f.nodes.map((n) => n.id));
    const keys = Object.keys(back.nodes.find((n: { kind: string }) => n.kind === 'agent').config);
    expect(keys.slice(-2)).toEqual(['aa', 'zz']);
    expect(keys.slice(0, 2)).toEqual(Object.keys(cfg).slice(0, 2));
    // Whatever order came in, the same bytes go out.
    f.nodes.find((n) => n.kind === 'agent')!.config = Object.fromEntries(Object.entries(shuffled).reverse());
    expect(roundTrip(f)).toBe(text);
  });

  it('survives a sync to a second Y.Doc (what a collaborator receives)', () => {
    const a = flowToDoc(richFlow(), layout);
    const b = new Y.Doc();
    Y.applyUpdate(b, Y.encodeStateAsUpdate(a));
    expect(serializeFlow(docToFlow(b, layout))).toBe(roundTrip(richFlow()));
  });

  it('replaces the whole content on load', () => {
    const doc = flowToDoc(richFlow());
    const small = { version: 1, id: 'x', name: 'x', models: {}, nodes: [], edges: [] };
    loadFlowIntoDoc(doc, small);
    expect(serializeFlow(docToFlow(doc))).toBe(serializeFlow(small as never));
  });

  it('refuses documents it cannot hold, naming where', () => {
    expect(() => flowToDoc([])).toThrow(UnrepresentableFlowError);
    expect(() => flowToDoc({ nodes: {}, edges: [] })).toThrow('/nodes is not an array');
    expect(() => flowToDoc({ nodes: [{ id: 'a' }, { id: 'a' }], edges: [] })).toThrow(
      '/nodes/1/id "a" is used twice',
    );
    expect(() => flowToDoc({ nodes: [{ kind: 'x' }], edges: [] })).toThrow('/nodes/0/id is missing');
  });

  it.each(flowFiles)('round-trips flows/%s byte for byte', (file) => {
    const text = readFileSync(join(flowsDir, file), 'utf8');
    const flow = JSON.parse(text);
    expect(roundTrip(flow)).toBe(serializeFlow(flow));
  });
});
