/**
 * Teams grow to hold what is dropped into them. A member's position is relative to its team
 * (`parent` in the flow); after a drop, the team's box is widened (to the right and down, or to
 * the left and up, moving its members by as much so they stay where they are on the canvas) until
 * every member sits inside it with a margin and below its head. A team that grew may now stick out
 * of its own team: that one grows too, up the chain.
 */
import { dict, ownValue, setOwn } from '@switchboard/schemas/core';
import type { NodePatch } from './edits.js';

export interface XY {
  x: number;
  y: number;
}
export interface Size {
  width: number;
  height: number;
}

/** Room kept inside a team: its face (kind and name) on top, a margin on the other sides. */
export const TEAM_PAD = { top: 48, side: 16 };

export interface Fit {
  position: XY;
  size: Size;
  /** How far every member moves (relative to the team) because the team grew left or up. */
  shift: XY;
}

/** The team's box once it holds `members` (boxes relative to the team); undefined when it already does. */
export function fitTeam(
  position: XY,
  size: Size,
  members: Array<XY & Size>,
  pad = TEAM_PAD,
): Fit | undefined {
  if (members.length === 0) return undefined;
  const minX = Math.min(...members.map((m) => m.x));
  const minY = Math.min(...members.map((m) => m.y));
  const maxX = Math.max(...members.map((m) => m.x + m.width));
  const maxY = Math.max(...members.map((m) => m.y + m.height));
  const dx = Math.max(0, Math.ceil(pad.side - minX));
  const dy = Math.max(0, Math.ceil(pad.top - minY));
  const width = Math.max(size.width + dx, Math.ceil(maxX + dx + pad.side));
  const height = Math.max(size.height + dy, Math.ceil(maxY + dy + pad.side));
  if (dx === 0 && dy === 0 && width === size.width && height === size.height) return undefined;
  return {
    position: { x: position.x - dx, y: position.y - dy },
    size: { width, height },
    shift: { x: dx, y: dy },
  };
}

export interface TeamGeometry {
  /** Position as the document will hold it (relative to the parent team). */
  positionOf(id: string): XY;
  sizeOf(id: string): Size;
  parentOf(id: string): string | undefined;
  membersOf(team: string): string[];
  isTeam(id: string): boolean;
}

/**
 * Adds to `patches` what makes each team in `teams` (and the teams holding them) contain its
 * members. Positions already in `patches` are taken as the members' new positions.
 */
export function growTeams(
  patches: Record<string, NodePatch>,
  teams: Iterable<string>,
  g: TeamGeometry,
): void {
  const pos = (id: string): XY => ownValue(patches, id)?.position ?? g.positionOf(id);
  const size = (id: string): Size => {
    const s = ownValue(patches, id)?.size;
    return s ?? g.sizeOf(id);
  };
  const patch = (id: string): NodePatch => {
    const p = ownValue(patches, id);
    if (p) return p;
    const fresh: NodePatch = {};
    setOwn(patches, id, fresh);
    return fresh;
  };
  const queue = [...new Set(teams)];
  const seen = dict<number>();
  while (queue.length > 0) {
    const team = queue.shift()!;
    // Bounded: a malformed chain of parents cannot loop forever.
    const visits = (ownValue(seen, team) ?? 0) + 1;
    setOwn(seen, team, visits);
    if (visits > 4 || !g.isTeam(team)) continue;
    const members = g.membersOf(team).map((id) => ({ ...pos(id), ...size(id) }));
    const fit = fitTeam(pos(team), size(team), members);
    if (!fit) continue;
    const p = patch(team);
    p.position = fit.position;
    p.size = fit.size;
    if (fit.shift.x || fit.shift.y)
      for (const id of g.membersOf(team)) {
        const at = pos(id);
        patch(id).position = { x: at.x + fit.shift.x, y: at.y + fit.shift.y };
      }
    const outer = g.parentOf(team);
    if (outer) queue.push(outer);
  }
}
