/**
 * The run counters and streamed text of every node that ran, drawn on a layer of their own above
 * the nodes instead of inside each face. During a fan-out a hundred of these lines change several
 * times a second; inside the faces each change made the browser raster again the tiles of the
 * canvas under it (nodes, edges, background: most of the canvas, every frame). On their own
 * compositor layer (`.sb-run-overlay`, see styles.css) a change re-rasters a few lines of text.
 * Each line sits under its node's face, where it was before, and follows the node when it moves.
 */
import { useInternalNode, ViewportPortal } from '@xyflow/react';
import { type CSSProperties, memo, useMemo, useSyncExternalStore } from 'react';
import type { KeyedStore } from '../store/keyed.js';
import { useEditor } from './context.js';
import { NodeCounters } from './NodeCounters.js';

/** The face's left border and top border (the line starts inside them, as it did within the face). */
const INSET_X = 4;
const INSET_Y = 1;
const GAP = 2;

/** The ids of the nodes that have counters; a new array only when that set changes. */
function useKeys<V>(store: KeyedStore<V>): string[] {
  const version = useSyncExternalStore(
    (fn) => store.subscribeAll(fn),
    () => store.keysVersion,
  );
  // biome-ignore lint/correctness/useExhaustiveDependencies: `version` says when the keys changed
  return useMemo(() => [...store.keys()], [store, version]);
}

const RunLine = memo(function RunLine({ id }: { id: string }) {
  const node = useInternalNode(id);
  if (!node || node.hidden) return null;
  const { x, y } = node.internals.positionAbsolute;
  const width = node.measured.width ?? node.width ?? 0;
  const height = node.measured.height ?? node.height ?? 0;
  const style: CSSProperties = {
    left: x + INSET_X,
    top: y + height - INSET_Y + GAP,
    width: Math.max(0, width - INSET_X - INSET_Y),
  };
  return <NodeCounters id={id} style={style} />;
});

export function RunOverlay() {
  const { store } = useEditor();
  const ids = useKeys(store.runState.counters);
  if (ids.length === 0) return null;
  return (
    <ViewportPortal>
      <div className="sb-run-overlay" data-testid="run-overlay">
        {ids.map((id) => (
          <RunLine key={id} id={id} />
        ))}
      </div>
    </ViewportPortal>
  );
}
