import { defaultRegistry } from '@switchboard/nodes';
import { type Flow, serializeFlow } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { emptyFlow, richFlow } from '../testing/fixtures.js';
import { describeCondition, describeHandover, edgeCaption } from './captions.js';
import { judgeConnection } from './connect.js';
import { autoLayout } from './layout.js';
import { DraftStore, type KeyValueStorage } from './persist.js';
import { fieldsOf, initialValue, type JsonSchema, jsonSchemaProblem, widgetFor } from './schemaForm.js';
import { checkTemplate } from './templateVars.js';

describe('captions', () => {
  it('describes conditions and handover protocols', () => {
    expect(
      describeCondition({ all: [{ path: 'state.n', op: 'gt', value: 2 }, { not: { always: true } }] }),
    ).toBe('state.n > 2 ∧ ¬(always)');
    expect(describeHandover({ context: { mode: 'state', keys: ['plan'] }, briefing: 'x' })).toBe(
      'state: plan · briefing',
    );
    expect(edgeCaption({ id: 'e', kind: 'tools', config: { allow: ['a', 'b'] } }, 'tool', {})).toBe(
      'allow: a, b',
    );
  });
});

describe('connections', () => {
  const end = (id: string, kind: string, handle?: string) => ({ id, kind, handle });
  it('infers the edge kind from the ports', () => {
    const v = judgeConnection(defaultRegistry, end('o', 'observer', 'observe'), end('a', 'agent', 'observe'));
    expect(v.ok && v.kind).toBe('observe');
  });
  it('refuses with the validator rule and names the reason', () => {
    const v = judgeConnection(defaultRegistry, end('a', 'agent', 'out'), end('s', 'start'));
    expect(v).toEqual({ ok: false, reason: 'a start has no incoming port here' });
    const w = judgeConnection(defaultRegistry, end('e', 'end'), end('a', 'agent'));
    expect(w.ok).toBe(false);
    const x = judgeConnection(defaultRegistry, end('a', 'agent', 'out'), end('a', 'agent', 'in'));
    expect(x).toEqual({ ok: false, reason: 'An edge joins a node to itself' });
  });
});

describe('schema form', () => {
  const agent = defaultRegistry.require('agent').configSchema as unknown as JsonSchema;
  const fields = Object.fromEntries(fieldsOf(agent).map((f) => [f.key, f]));
  it('picks widgets from the kind schema', () => {
    expect(widgetFor('memory', fields.memory!.schema)).toEqual({
      type: 'enum',
      options: ['transcript', 'thread', 'summary'],
    });
    expect(widgetFor('prompt', fields.prompt!.schema).type).toBe('objectList');
    const out = widgetFor('output', fields.output!.schema);
    expect(out.type === 'variant' && out.discriminator).toBe('type');
    expect(widgetFor('toolRounds', fields.toolRounds!.schema)).toMatchObject({
      type: 'number',
      integer: true,
      max: 50,
    });
    expect(fields.role!.required).toBe(true);
  });
  it('starts new list items and variants from the schema', () => {
    const prompt = widgetFor('prompt', fields.prompt!.schema);
    if (prompt.type !== 'objectList') throw new Error('objectList expected');
    expect(initialValue(prompt.item)).toEqual({ text: '' });
    const out = widgetFor('output', fields.output!.schema);
    if (out.type !== 'variant') throw new Error('variant expected');
    expect(initialValue(out.variants[1]!.schema)).toEqual({ type: 'json', schema: {} });
  });
  it('checks JSON Schema values', () => {
    expect(jsonSchemaProblem({ type: 'object' })).toBeUndefined();
    expect(jsonSchemaProblem([])).toMatch(/JSON object/);
    expect(jsonSchemaProblem({ type: 'obj' })).toMatch(/not a JSON type/);
  });
});

describe('template variables', () => {
  it('knows the runtime variables and flags the rest', () => {
    expect(checkTemplate('{{task}} {{ state.plan.step }} {{summary}}')).toEqual({
      used: ['task', 'state.plan.step', 'summary'],
      unknown: [],
      unclosed: false,
    });
    expect(checkTemplate('{{tsak}} and {{state}} {{last')).toEqual({
      used: ['tsak', 'state'],
      unknown: ['tsak', 'state'],
      unclosed: true,
    });
  });
});

describe('drafts', () => {
  it('keeps the draft and knows whether it was saved', () => {
    const m = new Map<string, string>();
    const storage: KeyValueStorage = {
      getItem: (k) => m.get(k) ?? null,
      setItem: (k, v) => void m.set(k, v),
      removeItem: (k) => void m.delete(k),
    };
    const d = new DraftStore(storage);
    d.save('a');
    expect(d.load()).toBe('a');
    expect(d.isSaved('a')).toBe(false);
    d.markSaved('a');
    expect(d.isSaved('a')).toBe(true);
    const broken = new DraftStore({
      getItem: () => {
        throw new Error('denied');
      },
      setItem: () => {
        throw new Error('quota');
      },
      removeItem: () => {},
    });
    broken.save('x');
    expect(broken.load()).toBeUndefined();
  });
});

describe('auto-layout (elkjs)', () => {
  it('places every node, keeps members inside their team and sizes the team', async () => {
    const flow: Flow = richFlow();
    const boxes = await autoLayout({
      flow,
      sizeOf: () => ({ width: 180, height: 60 }),
      isGroup: (id) => id === 'team1',
    });
    expect([...boxes.keys()].sort()).toEqual(flow.nodes.map((n) => n.id).sort());
    const team = boxes.get('team1')!;
    for (const id of ['writer', 'check']) {
      const b = boxes.get(id)!;
      expect(b.x).toBeGreaterThanOrEqual(0);
      expect(b.x + 180).toBeLessThanOrEqual(team.width!);
      expect(b.y + 60).toBeLessThanOrEqual(team.height!);
    }
    // Handovers run left to right.
    expect(boxes.get('start')!.x).toBeLessThan(team.x);
    expect(serializeFlow(emptyFlow())).toContain('"start"');
  });
});
