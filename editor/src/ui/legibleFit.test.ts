import { describe, expect, it } from 'vitest';
import { intersects, legibleViewport, MIN_FIT_ZOOM, TITLE_PX } from './legibleFit.js';

describe('legibleViewport', () => {
  it('keeps titles at 11 px or more', () => {
    expect(TITLE_PX * MIN_FIT_ZOOM).toBeGreaterThanOrEqual(11);
  });

  it('fits a small flow whole, centred, without blowing it up', () => {
    const v = legibleViewport({ x: 0, y: 0, width: 400, height: 200 }, undefined, {
      width: 1000,
      height: 800,
    });
    expect(v.overflows).toBe(false);
    expect(v.zoom).toBe(1.25);
    expect(v.x + 200 * v.zoom).toBeCloseTo(500);
    expect(v.y + 100 * v.zoom).toBeCloseTo(400);
  });

  it('opens a large flow at the readable zoom, centred on the start node', () => {
    const start = { x: 2000, y: 300, width: 180, height: 40 };
    const v = legibleViewport({ x: 0, y: 0, width: 5000, height: 3000 }, start, { width: 1000, height: 800 });
    expect(v.overflows).toBe(true);
    expect(v.zoom).toBe(MIN_FIT_ZOOM);
    expect(v.x + (start.x + 90) * v.zoom).toBeCloseTo(500);
    expect(v.y + (start.y + 20) * v.zoom).toBeCloseTo(400);
  });

  it('fits between the limits exactly', () => {
    const v = legibleViewport(
      { x: 0, y: 0, width: 1000, height: 100 },
      undefined,
      { width: 1000, height: 800 },
      0,
    );
    expect(v.zoom).toBe(1);
    expect(v.overflows).toBe(false);
  });
});

describe('intersects', () => {
  it('tells overlapping from touching rectangles', () => {
    expect(intersects({ x: 0, y: 0, width: 10, height: 10 }, { x: 5, y: 5, width: 10, height: 10 })).toBe(
      true,
    );
    expect(intersects({ x: 0, y: 0, width: 10, height: 10 }, { x: 10, y: 0, width: 10, height: 10 })).toBe(
      false,
    );
  });
});
