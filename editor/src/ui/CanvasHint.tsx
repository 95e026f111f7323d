/**
 * What to do on a canvas that has nothing to show yet: an empty one, or a new flow whose start
 * and end are not yet connected. Sits at the top of the canvas and goes once there is a flow.
 */
import { Panel } from '@xyflow/react';

export function CanvasHint({ nodes, edges }: { nodes: number; edges: number }) {
  if (nodes > 2 || edges > 0) return null;
  return (
    <Panel position="top-center" className="sb-canvas-hint" data-testid="canvas-hint">
      {nodes === 0 ? (
        <p>
          <strong>This canvas is empty.</strong> Drag a kind from the palette (or click it), drop a flow's
          .json file here, or pick an example under <strong>Open…</strong>.
        </p>
      ) : (
        <p>
          <strong>Next:</strong> add an agent from the palette (click or drag it), then drag from the
          right-hand dot of <em>start</em> to it and on to <em>end</em>. Or start from an example under{' '}
          <strong>Open…</strong>.
        </p>
      )}
    </Panel>
  );
}
