import { describe, expect, it } from 'vitest';
import { dict, isReservedName, ownValue, RESERVED_NAMES, setOwn } from './names.js';
import { scriptPathRule } from './script-path.js';

describe('names keyed by data', () => {
  it('reserved names are the three that reach a prototype', () => {
    expect([...RESERVED_NAMES].sort()).toEqual(['__proto__', 'constructor', 'prototype']);
    expect(isReservedName('__proto__')).toBe(true);
    expect(isReservedName('toString')).toBe(false);
    expect(isReservedName(42)).toBe(false);
  });

  it('dict() has no prototype: every key is an ordinary key, and JSON is unchanged', () => {
    const d = dict<number>();
    expect(Object.getPrototypeOf(d)).toBeNull();
    expect(d.toString).toBeUndefined();
    // A plain write, as data code does it: on a dict it is an own key like any other.
    for (const [k, v] of [
      ['__proto__', 1],
      ['constructor', 2],
    ] as const)
      d[k] = v;
    expect(Object.keys(d)).toEqual(['__proto__', 'constructor']);
    expect(JSON.stringify(d)).toBe('{"__proto__":1,"constructor":2}');
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    // Copies own entries only, `__proto__` included.
    const from = dict(JSON.parse('{"__proto__": {"polluted": 1}, "a": 2}') as Record<string, unknown>);
    expect(Object.keys(from)).toEqual(['__proto__', 'a']);
    expect(dict(new Map([['k', 1]]))).toEqual({ k: 1 });
  });

  it('ownValue never returns an inherited value; setOwn never sets a prototype', () => {
    expect(ownValue({}, 'toString')).toBeUndefined();
    expect(ownValue({ a: 1 }, 'a')).toBe(1);
    expect(ownValue(undefined, 'a')).toBeUndefined();
    const o: Record<string, unknown> = {};
    setOwn(o, '__proto__', { polluted: 1 });
    expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
    expect(Object.hasOwn(o, '__proto__')).toBe(true);
    expect((o as { polluted?: unknown }).polluted).toBeUndefined();
  });
});

describe('scriptPathRule', () => {
  it.each([
    ['replies.json', undefined],
    ['scripts/replies.json', undefined],
    ['./a.json', undefined],
    ['', /empty/],
    ['/etc/passwd', /absolute/],
    ['\\\\server\\share', /absolute/],
    ['C:/x.json', /absolute/],
    ['../x.json', /leave/],
    ['a/../../x.json', /leave/],
    ['a\\..\\x.json', /leave/],
    ['a\0b', /NUL/],
  ])('%j', (path, rule) => {
    const r = scriptPathRule(path);
    if (rule === undefined) expect(r).toBeUndefined();
    else expect(r).toMatch(rule);
  });
});
