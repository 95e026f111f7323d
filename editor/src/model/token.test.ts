import { describe, expect, it } from 'vitest';
import { adoptToken, splitToken, TokenStore, tokenFromInput } from './token.js';

function memory(): Map<string, string> & {
  getItem(k: string): string | null;
  setItem(k: string, v: string): void;
  removeItem(k: string): void;
} {
  const m = new Map<string, string>();
  return Object.assign(m, {
    getItem: (k: string) => m.get(k) ?? null,
    setItem: (k: string, v: string) => void m.set(k, v),
    removeItem: (k: string) => void m.delete(k),
  });
}

describe('the access token in the address', () => {
  it('is taken from ?token= or #token= and removed, keeping everything else', () => {
    expect(splitToken('http://h:1/?token=abc')).toEqual({ token: 'abc', rest: '/' });
    expect(splitToken('http://h:1/?flow=support-triage&token=a%2Bb&bench=1')).toEqual({
      token: 'a+b',
      rest: '/?flow=support-triage&bench=1',
    });
    expect(splitToken('http://h:1/x#token=abc&y=2')).toEqual({ token: 'abc', rest: '/x#y=2' });
    expect(splitToken('http://h:1/?flow=a')).toEqual({ token: undefined, rest: '/?flow=a' });
  });

  it('is stored and stripped from the address bar; a later load uses the stored one', () => {
    const storage = memory();
    const store = new TokenStore(storage);
    const calls: string[] = [];
    const hist = {
      state: null,
      replaceState: (_s: unknown, _t: string, url?: string | URL | null) => void calls.push(String(url)),
    };
    expect(adoptToken(store, { href: 'http://h:1/?token=t0k3n&flow=f' }, hist)).toBe('t0k3n');
    expect(calls).toEqual(['/?flow=f']);
    expect(storage.get('switchboard:token')).toBe('t0k3n');
    expect(adoptToken(store, { href: 'http://h:1/?flow=f' }, hist)).toBe('t0k3n');
    expect(calls).toHaveLength(1);
    store.clear();
    expect(adoptToken(store, { href: 'http://h:1/' }, hist)).toBeUndefined();
  });

  it('reads what people paste: the token, or the address the server printed', () => {
    expect(tokenFromInput('  abc123  ')).toBe('abc123');
    expect(tokenFromInput('"abc123"')).toBe('abc123');
    expect(tokenFromInput('http://10.0.0.5:5170/?token=ff00')).toBe('ff00');
    expect(tokenFromInput('http://10.0.0.5:5170/')).toBeUndefined();
    expect(tokenFromInput('two words')).toBeUndefined();
    expect(tokenFromInput('')).toBeUndefined();
  });
});
