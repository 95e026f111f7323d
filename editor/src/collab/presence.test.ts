import { describe, expect, it } from 'vitest';
import { assignColors, cleanName, PALETTE } from './identity.js';
import { readCursor, readView, throttled } from './pointers.js';

const people = (n: number, color: (i: number) => string) =>
  Array.from({ length: n }, (_, i) => ({ clientId: 1000 - i * 7, color: color(i) }));

describe('colours people tell apart', () => {
  it('8 people who all prefer the same colour get 8 distinct colours', () => {
    const got = assignColors(people(8, () => PALETTE[0]!));
    expect(new Set(got.values()).size).toBe(8);
    for (const c of got.values()) expect(PALETTE).toContain(c);
  });

  it('every mix of preferences for up to 8 people ends distinct, and is the same in every browser', () => {
    for (let n = 1; n <= 8; n++)
      for (let seed = 0; seed < 50; seed++) {
        const ps = people(n, (i) => PALETTE[(i * 7 + seed * 3) % 3]!);
        const got = assignColors(ps);
        expect(new Set(got.values()).size).toBe(n);
        // Order of the awareness map does not matter: the client ids do.
        expect(assignColors([...ps].reverse())).toEqual(got);
      }
  });

  it('the lowest client id keeps its colour; a newcomer who wants it gets a free one', () => {
    const got = assignColors([
      { clientId: 50, color: PALETTE[3]! },
      { clientId: 10, color: PALETTE[3]! },
    ]);
    expect(got.get(10)).toBe(PALETTE[3]);
    expect(got.get(50)).toBe(PALETTE[0]);
  });

  it('a ninth person repeats a colour; a colour outside the palette is replaced', () => {
    const got = assignColors(people(9, () => '#123456'));
    expect(new Set(got.values()).size).toBe(8);
    expect([...got.values()].every((c) => PALETTE.includes(c))).toBe(true);
  });
});

describe('names and pointers from awareness', () => {
  it('cleans a typed name', () => {
    expect(cleanName('  Ada  ')).toBe('Ada');
    expect(cleanName('\u0007')).toBeUndefined();
    expect([...cleanName('é'.repeat(60))!].length).toBe(40);
  });

  it('takes only finite, bounded pointer and view numbers', () => {
    expect(readCursor({ x: 1, y: -2 })).toEqual({ x: 1, y: -2 });
    for (const bad of [null, 'x', { x: 1 }, { x: Number.NaN, y: 0 }, { x: 1e9, y: 0 }, { x: '1', y: 2 }])
      expect(readCursor(bad)).toBeUndefined();
    expect(readView({ x: 0, y: 0, zoom: 1.5 })).toEqual({ x: 0, y: 0, zoom: 1.5 });
    expect(readView({ x: 0, y: 0, zoom: 0 })).toBeUndefined();
    expect(readView({ x: 0, y: 0, zoom: 100 })).toBeUndefined();
  });

  it('a throttled sender sends at most once per interval and never loses the last value', async () => {
    const sent: number[] = [];
    const send = throttled((v: number) => sent.push(v), 40);
    for (let i = 1; i <= 20; i++) send(i);
    expect(sent).toEqual([1]);
    await new Promise((r) => setTimeout(r, 80));
    expect(sent).toEqual([1, 20]);
  });
});
