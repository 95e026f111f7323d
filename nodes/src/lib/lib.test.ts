import { describe, expect, it } from 'vitest';
import type { ConditionContext } from '../runtime-api.js';
import { evaluateCondition, readPath } from './condition.js';
import { getPath } from './path.js';
import { boundedTest, MAX_MATCH_INPUT, safeRegex } from './regex.js';
import { renderTemplate, templateFields } from './template.js';

const ctx: ConditionContext = {
  last: { content: 'Tests PASS: 12', author: 'tester', json: { score: 7, tags: ['a', 'b'] } },
  state: { mode: 'draft', plan: { steps: ['x', 'y'] } },
  counters: { turns: 4, steps: 9, tokens: 100, failures: { coder: 2 } },
  turn: { toolCalls: 0 },
  input: { task: 't', urgent: true },
};

describe('conditions', () => {
  it('reads the documented paths', () => {
    expect(readPath(ctx, 'last.content')).toBe('Tests PASS: 12');
    expect(readPath(ctx, 'last.json.score')).toBe(7);
    expect(readPath(ctx, 'state.plan.steps.1')).toBe('y');
    expect(readPath(ctx, 'counters.failures.coder')).toBe(2);
    expect(readPath(ctx, 'turn.toolCalls')).toBe(0);
    expect(readPath(ctx, 'input.urgent')).toBe(true);
    expect(readPath(ctx, 'nowhere.x')).toBeUndefined();
  });

  it('never reaches prototypes', () => {
    expect(getPath({}, '__proto__.constructor')).toBeUndefined();
    expect(readPath(ctx, 'state.constructor.name')).toBeUndefined();
  });

  const cases: Array<[unknown, boolean]> = [
    [{ path: 'last.content', op: 'contains', value: 'pass', ignoreCase: true }, true],
    [{ path: 'last.content', op: 'notContains', value: 'FAIL' }, true],
    [{ path: 'last.json.score', op: 'gte', value: 7 }, true],
    [{ path: 'last.json.score', op: 'lt', value: 7 }, false],
    [{ path: 'last.json.tags', op: 'contains', value: 'b' }, true],
    [{ path: 'state.mode', op: 'eq', value: 'DRAFT', ignoreCase: true }, true],
    [{ path: 'state.mode', op: 'ne', value: 'final' }, true],
    [{ path: 'state.missing', op: 'exists' }, false],
    [{ path: 'state.missing', op: 'empty' }, true],
    [{ path: 'last.content', op: 'regex', value: 'PASS: \\d+$' }, true],
    [
      {
        all: [
          { path: 'counters.turns', op: 'gt', value: 3 },
          { not: { path: 'input.urgent', op: 'eq', value: false } },
        ],
      },
      true,
    ],
    [{ any: [{ path: 'counters.turns', op: 'gt', value: 99 }, { always: true }] }, true],
    [{ path: 'counters.turns', op: 'gt', value: 'not a number' }, false],
  ];
  for (const [cond, expected] of cases)
    it(`evaluates ${JSON.stringify(cond)}`, () => {
      expect(evaluateCondition(cond as never, ctx)).toBe(expected);
    });

  it('bounds nesting depth', () => {
    let c: unknown = { always: true };
    for (let i = 0; i < 100; i++) c = { not: c };
    expect(() => evaluateCondition(c as never, ctx)).toThrow('nested deeper');
  });
});

describe('regexes from flows', () => {
  it('refuses nested quantifiers, backreferences and long patterns', () => {
    for (const p of ['(a+)+$', '(\\w*)*x', '(a|aa)+', '(.*a){3,}', '(a)\\1', 'x'.repeat(300)])
      expect(() => safeRegex(p)).toThrow();
    for (const p of ['^v[0-9]+\\.[0-9]+$', '(ab)+', 'foo|bar', '[a-z]+@[a-z]+'])
      expect(() => safeRegex(p)).not.toThrow();
  });

  it('matches against bounded input', () => {
    expect(boundedTest('end$', `${'x'.repeat(MAX_MATCH_INPUT)}end`)).toBe(false);
    expect(boundedTest('^x+$', 'x'.repeat(MAX_MATCH_INPUT * 10))).toBe(true);
  });
});

describe('templates', () => {
  it('substitutes paths, renders objects as JSON and unknown placeholders as empty', () => {
    const out = renderTemplate(
      'Task {{task}} / {{state.plan}} / {{ state.mode }} / {{nope.x}} / {{constructor}}',
      {
        task: 'T',
        state: { plan: { a: 1 }, mode: 'm' },
      },
    );
    expect(out).toBe('Task T / {"a":1} / m /  / ');
    expect(templateFields('{{task}} and {{state.x}}')).toEqual(['task', 'state.x']);
    expect(renderTemplate('{{task', { task: 'x' })).toBe('{{task');
  });
});
