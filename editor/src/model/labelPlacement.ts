/**
 * Where edge labels go. Each label slides along its own edge until its box touches no node and
 * no label placed before it; if no spot along the edge is free at full width it tries narrower
 * (the label is then truncated, its full text on hover), and as a last resort takes the spot
 * with the least overlap. Pure geometry in flow coordinates, so the rule is tested without a
 * browser; the canvas samples the drawn paths and measures the texts.
 */

export interface XY {
  x: number;
  y: number;
}

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface LabelRequest {
  id: string;
  /** The edge's path, sampled in order from source to target (at least two points). */
  points: XY[];
  /** The label's full box size. */
  width: number;
  height: number;
}

export interface Placement {
  /** The label's centre. */
  x: number;
  y: number;
  /** The width it is drawn at (narrower than asked: truncated). */
  width: number;
  /** No free spot was found: it overlaps something. */
  overlaps: boolean;
}

/** Fractions of the edge's length tried, from its middle outwards. */
const FRACTIONS = (() => {
  const out = [0.5];
  for (let d = 0.05; d <= 0.4001; d += 0.05) out.push(0.5 - d, 0.5 + d);
  return out;
})();
/** Narrower widths tried when no spot is free at the full width (px). */
const NARROW = [96, 60, 40];
/** Offsets beside the edge (px, along its normal) tried when no spot on it is free: far enough to clear
 * the faces of two nodes that stand close together. */
const BESIDE = [0, 12, -12, 22, -22, 34, -34, 46, -46, 60, -60];
/** Space kept between a label and what it avoids. */
const GAP = 2;

export function intersects(a: Rect, b: Rect): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

function overlapArea(a: Rect, b: Rect): number {
  const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  return w > 0 && h > 0 ? w * h : 0;
}

/** The point at fraction `t` of a polyline's length, and the unit normal of the edge there. */
export function pointAlong(points: XY[], t: number): XY & { nx: number; ny: number } {
  let total = 0;
  for (let i = 1; i < points.length; i++)
    total += Math.hypot(points[i]!.x - points[i - 1]!.x, points[i]!.y - points[i - 1]!.y);
  let want = total * t;
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1]!;
    const b = points[i]!;
    const len = Math.hypot(b.x - a.x, b.y - a.y);
    if (want <= len && len > 0)
      return {
        x: a.x + ((b.x - a.x) * want) / len,
        y: a.y + ((b.y - a.y) * want) / len,
        nx: -(b.y - a.y) / len,
        ny: (b.x - a.x) / len,
      };
    want -= len;
  }
  const last = points[points.length - 1] ?? { x: 0, y: 0 };
  return { x: last.x, y: last.y, nx: 0, ny: 1 };
}

/**
 * A grid of boxes, so that a check looks at the few boxes near a label instead of all of them
 * (flows of a thousand nodes).
 */
class Grid {
  private readonly cells = new Map<string, Rect[]>();
  constructor(private readonly size = 200) {}
  private keys(r: Rect): string[] {
    const out: string[] = [];
    const x0 = Math.floor(r.x / this.size);
    const x1 = Math.floor((r.x + r.width) / this.size);
    const y0 = Math.floor(r.y / this.size);
    const y1 = Math.floor((r.y + r.height) / this.size);
    for (let x = x0; x <= x1; x++) for (let y = y0; y <= y1; y++) out.push(`${x},${y}`);
    return out;
  }
  add(r: Rect): void {
    for (const k of this.keys(r)) {
      const list = this.cells.get(k);
      if (list) list.push(r);
      else this.cells.set(k, [r]);
    }
  }
  /**
   * The area of `r` covered by boxes near it (a box in two cells counts twice: this ranks
   * spots, and 0 still means free); stops counting once it passes `enough`.
   */
  cost(r: Rect, enough: number): number {
    let sum = 0;
    for (const k of this.keys(r))
      for (const b of this.cells.get(k) ?? []) {
        sum += overlapArea(r, b);
        if (sum >= enough) return sum;
      }
    return sum;
  }
}

/** Places every label (in the order given); `obstacles` are the node boxes labels avoid. */
export function placeLabels(labels: LabelRequest[], obstacles: Rect[]): Map<string, Placement> {
  const grid = new Grid();
  for (const o of obstacles)
    grid.add({ x: o.x - GAP, y: o.y - GAP, width: o.width + 2 * GAP, height: o.height + 2 * GAP });
  const out = new Map<string, Placement>();
  for (const l of labels) {
    if (l.points.length < 2) continue;
    const along = FRACTIONS.map((t) => pointAlong(l.points, t));
    const widths = [l.width, ...NARROW.filter((w) => w < l.width)];
    let best: { p: Placement; box: Rect; cost: number } | undefined;
    search: for (const width of widths)
      for (const off of BESIDE)
        for (const p of along) {
          const c = { x: p.x + p.nx * off, y: p.y + p.ny * off };
          const box = { x: c.x - width / 2, y: c.y - l.height / 2, width, height: l.height };
          const cost = grid.cost(box, best?.cost ?? Number.POSITIVE_INFINITY);
          if (cost === 0) {
            best = { p: { x: c.x, y: c.y, width, overlaps: false }, box, cost };
            break search;
          }
          if (!best || cost < best.cost) best = { p: { x: c.x, y: c.y, width, overlaps: true }, box, cost };
        }
    if (!best) continue;
    out.set(l.id, best.p);
    grid.add({
      x: best.box.x - GAP,
      y: best.box.y - GAP,
      width: best.box.width + 2 * GAP,
      height: best.box.height + 2 * GAP,
    });
  }
  return out;
}

/**
 * The points of an SVG path as React Flow draws edges (absolute `M`, `L`, `Q`, `C`), curves
 * sampled in a few steps. Reading the `d` attribute costs far less than asking the browser for
 * points along the path (microseconds per edge instead of a layout query per point).
 */
export function pathPoints(d: string, steps = 6): XY[] {
  const tokens = d.match(/[MLQCmlqcHVhvZz]|-?\d*\.?\d+(?:e[-+]?\d+)?/g) ?? [];
  const out: XY[] = [];
  let i = 0;
  let cmd = '';
  let at: XY = { x: 0, y: 0 };
  const num = () => Number(tokens[i++]);
  const pt = (): XY => ({ x: num(), y: num() });
  const isNum = (t: string | undefined) => t !== undefined && !/^[A-Za-z]$/.test(t);
  while (i < tokens.length) {
    if (!isNum(tokens[i])) cmd = tokens[i++]!;
    if (!isNum(tokens[i])) continue;
    if (cmd === 'M' || cmd === 'L') {
      at = pt();
      out.push(at);
    } else if (cmd === 'Q') {
      const c = pt();
      const e = pt();
      for (let s = 1; s <= steps; s++) {
        const t = s / steps;
        const u = 1 - t;
        out.push({
          x: u * u * at.x + 2 * u * t * c.x + t * t * e.x,
          y: u * u * at.y + 2 * u * t * c.y + t * t * e.y,
        });
      }
      at = e;
    } else if (cmd === 'C') {
      const c1 = pt();
      const c2 = pt();
      const e = pt();
      for (let s = 1; s <= steps * 2; s++) {
        const t = s / (steps * 2);
        const u = 1 - t;
        out.push({
          x: u * u * u * at.x + 3 * u * u * t * c1.x + 3 * u * t * t * c2.x + t * t * t * e.x,
          y: u * u * u * at.y + 3 * u * u * t * c1.y + 3 * u * t * t * c2.y + t * t * t * e.y,
        });
      }
      at = e;
    } else {
      // A command React Flow does not draw edges with: skip its numbers.
      i++;
    }
  }
  return out;
}
