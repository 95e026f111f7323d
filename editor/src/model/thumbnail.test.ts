import { readFileSync } from 'node:fs';
import { defaultRegistry } from '@switchboard/nodes';
import { describe, expect, it } from 'vitest';
import { purposeOf, thumbnail } from './thumbnail.js';

describe('template thumbnails', () => {
  it('draws members inside their team, edges between centres, all inside the view box', () => {
    const flow = JSON.parse(
      readFileSync(new URL('../../../flows/support-triage.json', import.meta.url), 'utf8'),
    );
    const t = thumbnail(flow, defaultRegistry);
    expect(t.boxes).toHaveLength(flow.nodes.length);
    expect(t.lines).toHaveLength(flow.edges.length);
    const [vx, vy, vw, vh] = t.viewBox.split(' ').map(Number) as [number, number, number, number];
    for (const b of t.boxes) {
      expect(b.x).toBeGreaterThanOrEqual(vx);
      expect(b.y).toBeGreaterThanOrEqual(vy);
      expect(b.x + b.width).toBeLessThanOrEqual(vx + vw);
      expect(b.y + b.height).toBeLessThanOrEqual(vy + vh);
    }
    // A member is drawn inside its team's box (positions are relative to the team).
    const member = flow.nodes.find((n: { parent?: string }) => n.parent);
    const team = t.boxes.find((b) => b.id === member.parent)!;
    const m = t.boxes.find((b) => b.id === member.id)!;
    expect(team.group).toBe(true);
    expect(m.x).toBeGreaterThanOrEqual(team.x);
    expect(m.y).toBeGreaterThanOrEqual(team.y);
    // Teams come first so that members draw over them.
    expect(t.boxes[0]!.group).toBe(true);
  });

  it('survives a document that is not a flow', () => {
    expect(thumbnail(null, defaultRegistry).boxes).toEqual([]);
    const odd = thumbnail(
      { nodes: [{ id: 'a', kind: 'nope', parent: 'a', position: { x: 'x' } }], edges: [{}] },
      defaultRegistry,
    );
    expect(odd.boxes).toHaveLength(1);
    expect(odd.lines).toEqual([]);
  });

  it('says a purpose in one line', () => {
    expect(purposeOf('Routes a message. Then more.')).toBe('Routes a message.');
    expect(purposeOf('a\nb c')).toBe('a b c');
    expect(purposeOf('x'.repeat(300)).length).toBe(120);
    expect(purposeOf(undefined)).toBe('');
  });
});
