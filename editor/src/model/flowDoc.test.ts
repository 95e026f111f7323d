import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serializeFlow } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { richFlow } from '../testing/fixtures.js';
import { docToFlow, flowToDoc, loadFlowIntoDoc, UnrepresentableFlowError } from './flowDoc.js';

const flowsDir = fileURLToPath(new URL('../../../flows/', import.meta.url));
const flowFiles = (() => {
  try {
    return readdirSync(flowsDir).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
})();

function roundTrip(flow: unknown): string {
  return serializeFlow(docToFlow(flowToDoc(flow)));
}

describe('flow ↔ Y.Doc', () => {
  it('round-trips a flow touching every kind byte for byte', () => {
    const f = richFlow();
    expect(roundTrip(f)).toBe(serializeFlow(f));
  });

  it('keeps the order of unknown keys, nested config keys and node order', () => {
    const f = richFlow();
    f.nodes.reverse();
    (f.nodes[0]!.config as Record<string, unknown>).zz = { y: 1, x: 2 };
    const text = roundTrip(f);
    expect(text).toBe(serializeFlow(f));
    expect(text.indexOf('"zz"')).toBeGreaterThan(0);
  });

  it('survives a sync to a second Y.Doc (what a collaborator receives)', () => {
    const a = flowToDoc(richFlow());
    const b = new Y.Doc();
    Y.applyUpdate(b, Y.encodeStateAsUpdate(a));
    expect(serializeFlow(docToFlow(b))).toBe(serializeFlow(richFlow()));
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
