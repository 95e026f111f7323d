import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { createRegistry, defaultRegistry, defineKind, validate } from './index.js';

const flowWith = (extra: object[]) => ({
  version: 1,
  id: 'custom',
  name: 'Custom kind',
  models: { default: { provider: 'scripted' } },
  nodes: [
    { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
    ...extra,
    { id: 'end', kind: 'end', position: { x: 0, y: 0 }, config: {} },
  ],
  edges: [
    { id: 'e1', kind: 'handover', source: 'start', target: 'x' },
    { id: 'e2', kind: 'handover', source: 'x', target: 'end' },
  ],
});

describe('kind registry', () => {
  it('holds every kind of the design', () => {
    expect(defaultRegistry.list().map((k) => k.kind)).toEqual([
      'start',
      'end',
      'agent',
      'team',
      'decider',
      'observer',
      'tool',
      'human',
      'note',
    ]);
    for (const k of defaultRegistry.list()) {
      expect(k.display.label).toBeTruthy();
      expect(k.display.color).toMatch(/^#/);
      // Every default config is valid for its own kind.
      const r = validate(
        flowWith([{ id: 'x', kind: k.kind, position: { x: 0, y: 0 }, config: k.defaults() }]),
      );
      expect(r.errors.filter((e) => e.code === 'config')).toEqual([]);
    }
  });

  it('refuses duplicate and unknown kinds loudly', () => {
    const r = createRegistry();
    expect(() => r.register(defaultRegistry.require('agent'))).toThrow(/already registered/);
    expect(() => r.require('nope')).toThrow(/Unknown node kind "nope"/);
  });

  it('accepts a third-party kind with one registration call and validates flows that use it', () => {
    const r = createRegistry();
    r.register(
      defineKind({
        kind: 'acme/translate',
        role: 'step',
        configSchema: Type.Object(
          { language: Type.String({ minLength: 2 }) },
          { additionalProperties: false },
        ),
        defaults: () => ({ language: 'fr' }),
        ports: [],
        display: {
          label: 'Translate',
          color: '#000000',
          icon: 'T',
          description: 'Translates.',
          category: 'actors',
        },
      }),
    );
    const good = flowWith([
      { id: 'x', kind: 'acme/translate', position: { x: 0, y: 0 }, config: { language: 'de' } },
    ]);
    expect(validate(good, { kinds: r }).ok).toBe(true);
    // The default registry does not know it, and says where.
    const unknown = validate(good);
    expect(unknown.errors).toContainEqual(
      expect.objectContaining({ code: 'unknown-kind', path: '/nodes/1/kind', nodeId: 'x' }),
    );
    const bad = flowWith([
      { id: 'x', kind: 'acme/translate', position: { x: 0, y: 0 }, config: { language: 1 } },
    ]);
    expect(validate(bad, { kinds: r }).errors).toContainEqual(
      expect.objectContaining({ code: 'config', path: '/nodes/1/config/language', nodeId: 'x' }),
    );
  });
});
