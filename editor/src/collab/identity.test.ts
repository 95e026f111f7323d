import { describe, expect, it } from 'vitest';
import { initials } from '../ui/Presence.js';
import { isIdentity, loadIdentity } from './identity.js';

function memoryStorage(init: Record<string, string> = {}) {
  const m = new Map(Object.entries(init));
  return {
    getItem: (k: string) => m.get(k) ?? null,
    setItem: (k: string, v: string) => void m.set(k, v),
    removeItem: (k: string) => void m.delete(k),
    m,
  };
}

describe('identity', () => {
  it('is made once and kept', () => {
    const st = memoryStorage();
    const a = loadIdentity(st);
    expect(isIdentity(a)).toBe(true);
    expect(a.name).toMatch(/^Guest [A-Z][a-z]+$/);
    expect(loadIdentity(st)).toEqual(a);
  });

  it('a stored value that is not a well-formed identity is replaced', () => {
    for (const bad of ['not json', '{"name":"","color":"#ffffff"}', '{"name":"x","color":"red"}', 'null']) {
      const st = memoryStorage({ 'switchboard:identity': bad });
      const id = loadIdentity(st);
      expect(isIdentity(id)).toBe(true);
      expect(JSON.parse(st.m.get('switchboard:identity')!)).toEqual(id);
    }
    expect(isIdentity({ name: 'x'.repeat(41), color: '#ffffff' })).toBe(false);
  });

  it('works without storage', () => {
    expect(isIdentity(loadIdentity(undefined))).toBe(true);
  });

  it('initials for the presence chips', () => {
    expect(initials('Guest Otter')).toBe('O');
    expect(initials('Guest')).toBe('G');
    expect(initials('  ada  ')).toBe('A');
    expect(initials('Émile Zola Extra')).toBe('ÉZ');
  });
});
