/**
 * Where nodes are and how big, as drawn: view state (a drag or resize in progress, measured
 * sizes) over the document, over the kind's default. Members' positions are relative to their team.
 */
import { ownValue } from '@switchboard/schemas/core';
import type { NodePatch } from '../model/edits.js';
import { growTeams, type TeamGeometry } from '../model/teamFit.js';
import type { FlowDocument } from './document.js';
import type { SbNode, Size, XY } from './types.js';
import type { ViewState } from './viewState.js';

/** What geometry reads of the projection: the drawn nodes and their (valid) teams. */
export interface DrawnNodes {
  readonly drawn: readonly SbNode[];
  parentOf(id: string): string | undefined;
  parents(): Iterable<[string, { parent?: string }]>;
}

export class Geometry {
  constructor(
    private readonly doc: FlowDocument,
    private readonly ui: ViewState,
    private readonly view: DrawnNodes,
  ) {}

  /** The size a node is drawn with: resized, stored, measured, or its kind's default. */
  sizeOf(id: string): Size {
    const ui = this.ui.get(id);
    const m = this.doc.parts.nodes.get(id);
    const def = this.doc.kindOf(id);
    return (
      ui?.size ??
      (m?.get('size') as Size | undefined) ??
      ui?.measured ??
      def?.display.size ?? { width: 180, height: 60 }
    );
  }

  /** The position a node is drawn at (relative to its team, if any). */
  positionOf(id: string): XY {
    return (
      this.ui.get(id)?.position ??
      (this.doc.parts.nodes.get(id)?.get('position') as XY | undefined) ?? { x: 0, y: 0 }
    );
  }

  /** Absolute canvas position of a node (positions of members are relative to their team). */
  absolutePosition(id: string): XY {
    let { x, y } = this.positionOf(id);
    let parent = this.view.parentOf(id);
    let guard = 0;
    while (parent && guard++ < 100) {
      const p = this.positionOf(parent);
      x += p.x;
      y += p.y;
      parent = this.view.parentOf(parent);
    }
    return { x, y };
  }

  /** The innermost team whose box holds `point`, leaving out `exclude` and its members. */
  teamAt(point: XY, exclude: Set<string> = new Set()): string | undefined {
    const banned = exclude.size ? this.descendants(exclude) : exclude;
    let best: { id: string; depth: number; index: number } | undefined;
    this.view.drawn.forEach((n, index) => {
      if (n.type !== 'group' || banned.has(n.id)) return;
      const a = this.absolutePosition(n.id);
      const s = this.sizeOf(n.id);
      if (point.x < a.x || point.y < a.y || point.x > a.x + s.width || point.y > a.y + s.height) return;
      let depth = 0;
      for (let p = this.view.parentOf(n.id); p && depth < 100; p = this.view.parentOf(p)) depth++;
      if (!best || depth > best.depth || (depth === best.depth && index > best.index))
        best = { id: n.id, depth, index };
    });
    return best?.id;
  }

  private descendants(ids: Set<string>): Set<string> {
    const out = new Set(ids);
    let grew = true;
    while (grew) {
      grew = false;
      for (const [id, e] of this.view.parents())
        if (e.parent && out.has(e.parent) && !out.has(id)) {
          out.add(id);
          grew = true;
        }
    }
    return out;
  }

  /** Adds to `patches` what makes `teams` (and the teams around them) hold their members; whether it did. */
  teamPatches(patches: Record<string, NodePatch>, teams: Iterable<string>): boolean {
    const before = Object.keys(patches).length;
    const sizes = JSON.stringify(patches);
    const parentOf = (id: string): string | undefined => {
      const p = ownValue(patches, id)?.parent;
      return p === undefined ? this.view.parentOf(id) : (p ?? undefined);
    };
    const g: TeamGeometry = {
      positionOf: (id) => this.positionOf(id),
      sizeOf: (id) => this.sizeOf(id),
      parentOf,
      membersOf: (team) => [...this.view.parents()].map(([id]) => id).filter((id) => parentOf(id) === team),
      isTeam: (id) => !!this.doc.kindOf(id)?.display.group,
    };
    growTeams(patches, teams, g);
    return Object.keys(patches).length !== before || JSON.stringify(patches) !== sizes;
  }
}
