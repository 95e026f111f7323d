import { describe, expect, it } from 'vitest';
import { acceptAnswer, fieldProblem, formFields, initialValues } from './elicitForm.js';

const FORM = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Name', default: 'Ada', minLength: 2 },
    email: { type: 'string', format: 'email' },
    count: { type: 'integer', minimum: 1, maximum: 5 },
    ok: { type: 'boolean', title: 'OK', default: true },
    size: { type: 'string', enum: ['s', 'm'], enumNames: ['Small', 'Medium'] },
    tier: { type: 'string', oneOf: [{ const: 'gold', title: 'Gold' }] },
    tags: { type: 'array', items: { anyOf: [{ const: 'a', title: 'A' }, { const: 'b' }] }, maxItems: 1 },
  },
  required: ['name', 'count'],
};

describe('elicitation forms', () => {
  it('reads every primitive shape MCP allows, with titles, defaults and limits', () => {
    const r = formFields(FORM);
    if ('error' in r) throw new Error(r.error);
    expect(r.fields.map((f) => [f.key, f.kind, f.required])).toEqual([
      ['name', 'text', true],
      ['email', 'text', false],
      ['count', 'integer', true],
      ['ok', 'boolean', false],
      ['size', 'choice', false],
      ['tier', 'choice', false],
      ['tags', 'choices', false],
    ]);
    expect(r.fields[4]!.options).toEqual([
      { value: 's', label: 'Small' },
      { value: 'm', label: 'Medium' },
    ]);
    const v = initialValues(r.fields);
    expect(v.get('name')).toBe('Ada');
    expect(v.get('ok')).toBe(true);
  });

  it('answers with the content as JSON, or says what is wrong by field', () => {
    const r = formFields(FORM);
    if ('error' in r) throw new Error(r.error);
    const v = initialValues(r.fields);
    const bad = acceptAnswer(r.fields, v);
    expect('problems' in bad && Object.fromEntries(bad.problems)).toEqual({ count: 'required' });
    v.set('count', 9);
    v.set('email', 'nope');
    v.set('tags', ['a', 'b']);
    const worse = acceptAnswer(r.fields, v);
    expect('problems' in worse && Object.fromEntries(worse.problems)).toEqual({
      count: 'at most 5',
      email: 'an email address',
      tags: 'at most 1 choices',
    });
    v.set('count', 2);
    v.set('email', 'ada@example.org');
    v.set('tags', ['b']);
    const good = acceptAnswer(r.fields, v);
    expect('text' in good && JSON.parse(good.text)).toEqual({
      name: 'Ada',
      email: 'ada@example.org',
      count: 2,
      ok: true,
      tags: ['b'],
    });
    expect(fieldProblem(r.fields[2]!, 2.5)).toBe('a whole number');
  });

  it('refuses forms it cannot show safely, naming why', () => {
    expect(formFields({ type: 'object' })).toEqual({ error: 'the form has no properties' });
    expect(formFields(JSON.parse('{"properties":{"__proto__":{"type":"string"}}}'))).toEqual({
      error: 'the form names a field "__proto__"',
    });
    expect(formFields({ properties: { x: { type: 'object' } } })).toEqual({
      error: 'field "x" has type "object"',
    });
    expect(formFields({ properties: { x: { type: 'array', items: { type: 'number' } } } })).toEqual({
      error: 'field "x" is a list of something other than choices',
    });
  });
});
