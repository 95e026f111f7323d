/**
 * A node's size and handle boxes before the browser has measured it. On a large flow React Flow
 * renders only the nodes in view (`onlyRenderVisibleElements`); a node it never rendered has no
 * measured size, and without these estimates React Flow would render every such node once just to
 * measure it, the fit could not see the flow's bounds, and edges to it could not be drawn. Once a
 * node is rendered its measured size and handles replace these.
 */
import type { NodeKindDefinition, PortSpec } from '@switchboard/nodes';
import type { NodeHandle, Position } from '@xyflow/react';

type Size = { width: number; height: number };

/** A face's usual size (`.sb-node`: 170–240 px wide, a title and a summary line). */
export const ESTIMATED_FACE: Size = { width: 190, height: 56 };

/** Handles are 10 px squares sitting 6 px outside the node's side (styles.css, `.sb-handle`). */
const HANDLE = 10;
const OUTSIDE = 6;

/** Where each port's handle sits, as `Handles` in ui/nodes.tsx places it: spread evenly along its side. */
export function estimatedHandles(def: NodeKindDefinition, size: Size): NodeHandle[] {
  const bySide = new Map<PortSpec['side'], PortSpec[]>();
  for (const p of def.ports) bySide.set(p.side, [...(bySide.get(p.side) ?? []), p]);
  return def.ports.map((p) => {
    const list = bySide.get(p.side)!;
    const along = (list.indexOf(p) + 1) / (list.length + 1);
    const x =
      p.side === 'left'
        ? -OUTSIDE
        : p.side === 'right'
          ? size.width + OUTSIDE - HANDLE
          : along * size.width - HANDLE / 2;
    const y =
      p.side === 'top'
        ? -OUTSIDE
        : p.side === 'bottom'
          ? size.height + OUTSIDE - HANDLE
          : along * size.height - HANDLE / 2;
    return { id: p.id, type: p.type, position: p.side as Position, x, y, width: HANDLE, height: HANDLE };
  });
}
