import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultRegistry } from '@switchboard/nodes';
import type { Flow } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import {
  conditionsIn,
  convertValue,
  parseValue,
  pathMatches,
  unbuildable,
  valueKind,
  valueText,
  withKey,
  withOp,
} from './conditionBuilder.js';
import { routeChoices } from './routes.js';
import type { JsonSchema } from './schemaForm.js';

const FLOWS = fileURLToPath(new URL('../../../flows/', import.meta.url));
const examples = readdirSync(FLOWS)
  .filter((f) => f.endsWith('.json') && !f.endsWith('.tests.json'))
  .map((f) => ({ file: f, flow: JSON.parse(readFileSync(join(FLOWS, f), 'utf8')) as Flow }));

function allConditions() {
  return examples.flatMap(({ file, flow }) =>
    flow.nodes.flatMap((n) => {
      const kind = defaultRegistry.get(n.kind);
      if (!kind) return [];
      return conditionsIn(kind.configSchema as unknown as JsonSchema, n.config).map(([path, value]) => ({
        where: `${file} ${n.id} ${path}`,
        value,
      }));
    }),
  );
}

describe('condition builder model', () => {
  it('finds the conditions of the shipped examples, and the builder can show every one', () => {
    const found = allConditions();
    // Deciders' rules, prompt segments and guards across the examples: every object-valued
    // "when" in the files is among them, so a walk that missed a place would fail here.
    const objectWhens = examples.reduce(
      (n, { flow }) => n + (JSON.stringify(flow).match(/"when":\{/g) ?? []).length,
      0,
    );
    expect(objectWhens).toBeGreaterThanOrEqual(7);
    expect(found.filter((f) => / [^ ]*when$/.test(f.where)).length).toBe(objectWhens);
    expect(found.some((f) => / rules\.\d+\.when$/.test(f.where))).toBe(true);
    for (const f of found) expect(unbuildable(f.value), f.where).toBeUndefined();
  });

  it('rewrites an unchanged field byte-identically, keys in their order', () => {
    for (const { value } of allConditions()) {
      const before = JSON.stringify(value);
      const walk = (c: unknown): unknown => {
        const o = c as Record<string, unknown>;
        if ('all' in o) return withKey(o, 'all', (o.all as unknown[]).map(walk));
        if ('any' in o) return withKey(o, 'any', (o.any as unknown[]).map(walk));
        if ('not' in o) return withKey(o, 'not', walk(o.not));
        if ('always' in o) return o;
        return withOp(withKey(o, 'path', o.path), o.op as never);
      };
      expect(JSON.stringify(walk(value))).toBe(before);
    }
  });

  it('refuses what is not a condition, saying why', () => {
    expect(unbuildable('x')).toBe('not an object');
    expect(unbuildable({ path: 'a', op: 'like' })).toMatch(/unknown operator "like"/);
    expect(unbuildable({ all: [{ path: 'a', op: 'eq', value: 1, extra: 1 }] })).toMatch(/unknown keys/);
    expect(unbuildable({ all: [], any: [] })).toMatch(/other keys/);
    expect(unbuildable({ always: false })).toMatch(/always/);
    let deep: unknown = { always: true };
    for (let i = 0; i < 40; i++) deep = { not: deep };
    expect(unbuildable(deep)).toMatch(/deeper/);
  });

  it('changes an operator keeping key order, dropping what no longer applies', () => {
    const c = { path: 'last.content', op: 'contains', value: 'x', ignoreCase: true };
    expect(JSON.stringify(withOp(c, 'exists'))).toBe('{"path":"last.content","op":"exists"}');
    expect(JSON.stringify(withOp(c, 'gt'))).toBe('{"path":"last.content","op":"gt","value":"x"}');
    expect(withOp({ path: 'a', op: 'exists' }, 'gte')).toEqual({ path: 'a', op: 'gte', value: 0 });
    expect(withOp({ path: 'a', op: 'contains', value: '' }, 'gte')).toEqual({
      path: 'a',
      op: 'gte',
      value: 0,
    });
    expect(withOp({ path: 'a', op: 'eq', value: '7' }, 'lt')).toEqual({ path: 'a', op: 'lt', value: 7 });
    expect(withOp({ path: 'a', op: 'eq', value: 'x' }, 'lt')).toEqual({ path: 'a', op: 'lt', value: 'x' });
    // Between numeric operators the value is left as it is.
    expect(withOp({ path: 'a', op: 'gt', value: '7' }, 'lt')).toEqual({ path: 'a', op: 'lt', value: '7' });
  });

  it('keeps a value typed: text, number, true/false, JSON', () => {
    expect(valueKind(3)).toBe('number');
    expect(valueKind(false)).toBe('boolean');
    expect(valueKind(['a'])).toBe('json');
    expect(parseValue('number', '4.5')).toEqual({ value: 4.5 });
    expect(parseValue('number', 'x')).toEqual({ error: '"x" is not a number' });
    expect(parseValue('json', '{"a":1}')).toEqual({ value: { a: 1 } });
    expect('error' in parseValue('json', '{')).toBe(true);
    expect(valueText('json', ['a'])).toBe('["a"]');
    expect(convertValue('12', 'number')).toBe(12);
    expect(convertValue(12, 'text')).toBe('12');
    // A hostile key in a value stays a value: withKey never writes through the prototype.
    const o = withKey({ path: 'a', op: 'eq' }, '__proto__', 1);
    expect(Object.hasOwn(o, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
  });

  it('matches route patterns with list indexes', () => {
    expect(pathMatches('rules.*.to', 'rules.3.to')).toBe(true);
    expect(pathMatches('rules.*.to', 'rules.3.when')).toBe(false);
    expect(pathMatches('default', 'default')).toBe(true);
    expect(pathMatches('noHandover.default', 'default')).toBe(false);
  });
});

describe('route choices', () => {
  it("offers a decider its own outgoing handovers, and an fsm decider its states' transitions", () => {
    for (const { file, flow } of examples)
      for (const n of flow.nodes) {
        if (defaultRegistry.get(n.kind)?.role !== 'decider') continue;
        const ids = routeChoices(flow, n.id, (x) => x).map((r) => r.id);
        const own = flow.edges.filter((e) => e.kind === 'handover' && e.source === n.id).map((e) => e.id);
        for (const e of own) expect(ids, `${file} ${n.id}`).toContain(e);
        // Every route the example's rules name is on offer (or "done", or a target node id).
        const rules = (n.config.rules ?? []) as Array<{ to: string | string[] }>;
        for (const r of rules)
          for (const to of [r.to].flat())
            if (to !== 'done' && !flow.nodes.some((x) => x.id === to))
              expect(ids, `${file} ${n.id} → ${to}`).toContain(to);
      }
    const rawko = examples.find((e) => e.file === 'rawko.json')!.flow;
    const team = rawko.nodes.find((n) => n.config.mode === 'fsm')!;
    const decider = team.config.decider as string;
    const offered = routeChoices(rawko, decider, (x) => x);
    const siblings = rawko.edges.filter(
      (e) =>
        e.kind === 'handover' &&
        e.source !== decider &&
        rawko.nodes.find((n) => n.id === e.source)?.parent === team.id,
    );
    expect(siblings.length).toBeGreaterThan(0);
    for (const e of siblings) expect(offered.map((o) => o.id)).toContain(e.id);
  });
});
