/**
 * Per node, what the canvas knows before the document does: the position of a drag in progress,
 * the size of a resize in progress, the size the browser measured. Written to the document only
 * when the action ends (`moves.ts`).
 */
import type { NodeChangeLike, NodeUi } from './types.js';

export class ViewState {
  private readonly ui = new Map<string, NodeUi>();

  get(id: string): NodeUi | undefined {
    return this.ui.get(id);
  }

  /** The entry of `id`, made when missing (for writing). */
  of(id: string): NodeUi {
    let ui = this.ui.get(id);
    if (!ui) {
      ui = {};
      this.ui.set(id, ui);
    }
    return ui;
  }

  delete(id: string): void {
    this.ui.delete(id);
  }

  /**
   * Forgets view state on a new document except measured sizes: a node whose id is in the new
   * document too keeps its element on the canvas, and React Flow measures an element again only
   * when its size changes; without its measured size the node would stay on its estimate.
   */
  keepMeasuredOnly(): void {
    for (const [id, ui] of this.ui) {
      if (ui.measured) this.ui.set(id, { measured: ui.measured });
      else this.ui.delete(id);
    }
  }

  /**
   * Takes React Flow's position and size changes (selection changes are the caller's); returns
   * the ids whose view state changed.
   */
  apply(changes: NodeChangeLike[]): Set<string> {
    const touched = new Set<string>();
    for (const c of changes) {
      if (!c.id) continue;
      if (c.type === 'position' && 'position' in c) {
        const ui = this.of(c.id);
        if (c.position) ui.position = c.position;
        ui.dragging = !!c.dragging;
        touched.add(c.id);
      } else if (c.type === 'dimensions' && 'dimensions' in c && c.dimensions) {
        const ui = this.of(c.id);
        if (c.setAttributes) ui.size = c.dimensions;
        else ui.measured = c.dimensions;
        touched.add(c.id);
      }
    }
    return touched;
  }
}
