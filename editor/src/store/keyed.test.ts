import { describe, expect, it } from 'vitest';
import { KeyedStore } from './keyed.js';

describe('KeyedStore.keysVersion', () => {
  it('changes when a key gains or loses its entry, not when a value changes', () => {
    const s = new KeyedStore<number>(0);
    const v0 = s.keysVersion;
    s.set('a', 1);
    const v1 = s.keysVersion;
    expect(v1).not.toBe(v0);
    s.set('a', 2);
    expect(s.keysVersion).toBe(v1);
    s.set('a', 0); // back to the fallback: the entry goes
    expect(s.keysVersion).not.toBe(v1);
    expect([...s.keys()]).toEqual([]);
  });

  it('replaceAll changes it only when the set of keys changes', () => {
    const s = new KeyedStore<number>(0);
    s.replaceAll(
      new Map([
        ['a', 1],
        ['b', 2],
      ]),
    );
    const v = s.keysVersion;
    s.replaceAll(
      new Map([
        ['a', 3],
        ['b', 4],
      ]),
    );
    expect(s.keysVersion).toBe(v);
    s.replaceAll(new Map([['a', 3]]));
    expect(s.keysVersion).not.toBe(v);
    expect([...s.keys()]).toEqual(['a']);
    const w = s.keysVersion;
    s.set('c', 1);
    expect(s.keysVersion).not.toBe(w);
  });
});
