import { defaultRegistry } from '@switchboard/nodes';
import { serializeFlow } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { patchNodes, setConfigValue } from '../model/edits.js';
import { configLayout, loadFlowIntoDoc } from '../model/flowDoc.js';
import { richFlow } from '../testing/fixtures.js';
import { FlowDocument } from './document.js';

function open(): FlowDocument {
  const layout = configLayout(defaultRegistry);
  const doc = new Y.Doc();
  loadFlowIntoDoc(doc, richFlow(), layout);
  return new FlowDocument(doc, defaultRegistry, layout);
}

describe('FlowDocument', () => {
  it('reads back the flow it holds, serialized once per version', () => {
    const d = open();
    expect(d.serialize()).toBe(serializeFlow(richFlow()));
    expect(d.hasText).toBe(true);
    d.bump();
    expect(d.hasText).toBe(false);
    expect(d.version).toBe(1);
  });

  it('a transaction drops the cached JSON of what it touched only', () => {
    const d = open();
    const before = d.flow();
    const trs: Y.Transaction[] = [];
    d.doc.on('afterTransaction', (tr: Y.Transaction) => trs.push(tr));
    setConfigValue(d.doc, { node: 'writer' }, 'role', 'Edits', d.layout);
    const t = d.touchedBy(trs[0]!);
    expect([...t.nodeIds]).toEqual(['writer']);
    expect(t.edgeIds.size).toBe(0);
    expect(t.order).toBe(false);
    const after = d.flow();
    const byId = (f: typeof before, id: string) => f.nodes.find((n) => n.id === id);
    expect(byId(after, 'writer')).not.toBe(byId(before, 'writer'));
    expect(byId(after, 'writer')?.config.role).toBe('Edits');
    expect(byId(after, 'planner')).toBe(byId(before, 'planner'));
  });

  it('names a node by its label, else its config name, else its id; links say what edges do', () => {
    const d = open();
    expect(d.displayName('team1')).toBe('Writers');
    expect(d.links().get('writer')).toBe('1 tool');
    patchNodes(d.doc, { team1: { label: null } });
    expect(d.displayName('team1')).toBe('team1');
  });

  it('moving to another document drops every cache and moves the version on', () => {
    const d = open();
    const text = d.serialize();
    d.replace(new Y.Doc());
    expect(d.version).toBe(1);
    expect(d.hasText).toBe(false);
    expect(d.serialize()).not.toBe(text);
    expect(d.nodeCount).toBe(0);
  });
});
