import { describe, expect, it } from 'vitest';
import { intersects, pathPoints, placeLabels, pointAlong } from './labelPlacement.js';

const line = (x0: number, y0: number, x1: number, y1: number) => [
  { x: x0, y: y0 },
  { x: x1, y: y1 },
];

describe('edge label placement', () => {
  it('takes the middle of the edge when it is free', () => {
    const p = placeLabels([{ id: 'e', points: line(0, 0, 400, 0), width: 80, height: 18 }], []);
    expect(p.get('e')).toEqual({ x: 200, y: 0, width: 80, overlaps: false });
  });

  it('slides along the edge off a node that sits on its middle', () => {
    const node = { x: 170, y: -30, width: 60, height: 60 };
    const p = placeLabels([{ id: 'e', points: line(0, 0, 600, 0), width: 80, height: 18 }], [node]).get('e')!;
    expect(p.overlaps).toBe(false);
    expect(intersects({ x: p.x - 40, y: p.y - 9, width: 80, height: 18 }, node)).toBe(false);
    expect(p.y).toBe(0);
  });

  it('keeps two labels of crossing edges apart', () => {
    const p = placeLabels(
      [
        { id: 'a', points: line(0, 0, 400, 0), width: 100, height: 18 },
        { id: 'b', points: line(200, -200, 200, 200), width: 100, height: 18 },
      ],
      [],
    );
    const box = (id: string) => {
      const q = p.get(id)!;
      return { x: q.x - q.width / 2, y: q.y - 9, width: q.width, height: 18 };
    };
    expect(intersects(box('a'), box('b'))).toBe(false);
    expect(p.get('a')!.overlaps || p.get('b')!.overlaps).toBe(false);
  });

  it('moves beside the edge, truncates when that is not enough, and says when nothing is free', () => {
    // Two tall nodes 80 px apart: no room beside the edge either.
    const left = { x: -100, y: -100, width: 100, height: 200 };
    const right = { x: 80, y: -100, width: 100, height: 200 };
    const short = placeLabels(
      [{ id: 'e', points: line(0, 0, 80, 0), width: 150, height: 18 }],
      [left, right],
    );
    expect(short.get('e')!.width).toBeLessThan(80);
    expect(short.get('e')!.overlaps).toBe(false);
    // Short nodes: the label clears them beside the edge at full width.
    const low = [
      { x: -100, y: -25, width: 100, height: 50 },
      { x: 80, y: -25, width: 100, height: 50 },
    ];
    const beside = placeLabels([{ id: 'e', points: line(0, 0, 80, 0), width: 150, height: 18 }], low).get(
      'e',
    )!;
    expect(beside).toMatchObject({ width: 150, overlaps: false });
    expect(Math.abs(beside.y)).toBeGreaterThan(25 + 9);
    const none = placeLabels(
      [{ id: 'e', points: line(0, 0, 10, 0), width: 150, height: 18 }],
      [{ x: -500, y: -500, width: 1000, height: 1000 }],
    );
    expect(none.get('e')!.overlaps).toBe(true);
  });

  it('finds points along a polyline by length', () => {
    const pts = [
      { x: 0, y: 0 },
      { x: 100, y: 0 },
      { x: 100, y: 100 },
    ];
    expect(pointAlong(pts, 0.25)).toMatchObject({ x: 50, y: 0 });
    expect(pointAlong(pts, 0.75)).toMatchObject({ x: 100, y: 50 });
  });

  it('reads the points of the paths React Flow draws', () => {
    expect(pathPoints('M0,0 L100,0L 100 50')).toEqual([
      { x: 0, y: 0 },
      { x: 100, y: 0 },
      { x: 100, y: 50 },
    ]);
    const q = pathPoints('M 0 0 Q 10 0 10 10', 2);
    expect(q).toHaveLength(3);
    expect(q[2]).toEqual({ x: 10, y: 10 });
    const c = pathPoints('M0,0 C50,0 50,100 100,100', 2);
    expect(c).toHaveLength(5);
    expect(c[4]).toEqual({ x: 100, y: 100 });
    expect(c[2]).toEqual({ x: 50, y: 50 });
    expect(pathPoints('')).toEqual([]);
  });
});
