/**
 * Ending a move on the canvas: a drag (nodes into and out of teams), a team's resize, an
 * auto-layout. The view state of the gesture is written to the document as one undo step, and a
 * team grows to hold what was dropped into it (`model/teamFit.ts`).
 */
import { dict } from '@switchboard/schemas/core';
import { type NodePatch, patchNodes } from '../model/edits.js';
import type { FlowDocument } from './document.js';
import type { DrawnNodes, Geometry } from './geometry.js';
import type { History } from './history.js';
import { ROUND, type XY } from './types.js';
import type { ViewState } from './viewState.js';

export class Moves {
  /**
   * @param redraw redraws nodes whose view state changed while the document did not
   */
  constructor(
    private readonly doc: FlowDocument,
    private readonly ui: ViewState,
    private readonly geometry: Geometry,
    private readonly view: DrawnNodes,
    private readonly history: History,
    private readonly redraw: (ids: Iterable<string>) => void,
  ) {}

  /**
   * Ends a drag: writes the final positions, and moves each dragged node into the team under
   * its centre or out of the team it left (positions converted between relative and absolute).
   */
  commitDrag(ids: string[]): void {
    const g = this.geometry;
    const nodes = this.doc.parts.nodes;
    const dragged = new Set(ids.filter((id) => nodes.has(id)));
    const patches = dict<NodePatch>();
    for (const id of dragged) {
      const current = this.view.parentOf(id);
      if (current && dragged.has(current)) {
        // Moves along with its team; its relative position is unchanged.
        const pos = g.positionOf(id);
        patches[id] = { position: { x: ROUND(pos.x), y: ROUND(pos.y) } };
        continue;
      }
      const abs = g.absolutePosition(id);
      const size = g.sizeOf(id);
      const centre = { x: abs.x + size.width / 2, y: abs.y + size.height / 2 };
      const team = g.teamAt(centre, new Set([id]));
      if (team !== current) {
        const origin = team ? g.absolutePosition(team) : { x: 0, y: 0 };
        patches[id] = {
          parent: team ?? null,
          position: { x: ROUND(abs.x - origin.x), y: ROUND(abs.y - origin.y) },
        };
      } else {
        const pos = g.positionOf(id);
        patches[id] = { position: { x: ROUND(pos.x), y: ROUND(pos.y) } };
      }
    }
    // A team grows to hold what was dropped into it (or dragged across its border).
    const teams = new Set<string>();
    for (const [id, patch] of Object.entries(patches)) {
      const team = patch.parent === undefined ? this.view.parentOf(id) : patch.parent;
      if (team) teams.add(team);
    }
    const grown = g.teamPatches(patches, teams);
    for (const id of dragged) {
      const ui = this.ui.get(id);
      if (ui) {
        delete ui.position;
        ui.dragging = false;
      }
    }
    const changed = Object.entries(patches).some(([id, patch]) => {
      const m = nodes.get(id)!;
      const pos = m.get('position') as XY | undefined;
      return (
        patch.parent !== undefined ||
        patch.size !== undefined ||
        !pos ||
        pos.x !== patch.position?.x ||
        pos.y !== patch.position?.y
      );
    });
    if (changed || grown) this.history.step(() => patchNodes(this.doc.doc, patches));
    else this.redraw(dragged);
  }

  /** Grows `teams` now, inside the caller's step (after a node was added into one). */
  growTeams(teams: string[]): void {
    const patches = dict<NodePatch>();
    if (this.geometry.teamPatches(patches, teams)) patchNodes(this.doc.doc, patches);
  }

  /** Ends a resize of a team: its box (position may move when resized from the top or left). */
  commitResize(id: string, box: { x: number; y: number; width: number; height: number }): void {
    const ui = this.ui.get(id);
    if (ui) {
      delete ui.size;
      delete ui.position;
    }
    const patches = dict<NodePatch>();
    patches[id] = {
      position: { x: ROUND(box.x), y: ROUND(box.y) },
      size: { width: ROUND(box.width), height: ROUND(box.height) },
    };
    // Resizing from the top or left moves the members so they stay put on the canvas.
    for (const [child, entry] of this.view.parents()) {
      const cui = this.ui.get(child);
      if (entry.parent !== id || !cui?.position) continue;
      patches[child] = { position: { x: ROUND(cui.position.x), y: ROUND(cui.position.y) } };
      delete cui.position;
    }
    this.history.step(() => patchNodes(this.doc.doc, patches));
  }

  /** Writes positions (and team sizes) computed by auto-layout, as one undo step. */
  applyLayout(boxes: Map<string, { x: number; y: number; width?: number; height?: number }>): void {
    const patches = dict<NodePatch>();
    for (const [id, b] of boxes) {
      if (!this.doc.hasNode(id)) continue;
      const patch: NodePatch = { position: { x: ROUND(b.x), y: ROUND(b.y) } };
      if (b.width !== undefined && b.height !== undefined && this.doc.kindOf(id)?.display.group)
        patch.size = { width: ROUND(b.width), height: ROUND(b.height) };
      patches[id] = patch;
    }
    this.history.step(() => patchNodes(this.doc.doc, patches));
  }
}
