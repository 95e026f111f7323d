/** The canvas: React Flow bound to the editor store, with drop-to-add and guarded connections. */
import {
  Background,
  BackgroundVariant,
  type ColorMode,
  Controls,
  type FinalConnectionState,
  MiniMap,
  Panel,
  ReactFlow,
  useConnection,
  useNodesInitialized,
  useReactFlow,
} from '@xyflow/react';
import { type DragEvent, useCallback, useEffect, useRef, useSyncExternalStore } from 'react';
import type { SbEdge, SbNode } from '../store/editorStore.js';
import { useEditor } from './context.js';
import { edgeTypes } from './edges.js';
import { nodeTypes } from './nodes.js';
import { PresenceLayer } from './PresenceLayer.js';

export const KIND_MIME = 'application/x-switchboard-kind';
const SNAP: [number, number] = [16, 16];

/** While a connection is dragged over a handle it may not join, says why. */
function ConnectionHint() {
  const { store } = useEditor();
  const reason = useConnection((c) => {
    if (!c.inProgress || !c.toNode || c.isValid !== false) return '';
    const from = c.fromHandle;
    const v =
      from.type === 'source'
        ? store.judge(c.fromNode.id, from.id, c.toNode.id, c.toHandle?.id)
        : store.judge(c.toNode.id, c.toHandle?.id, c.fromNode.id, from.id);
    return v.ok ? '' : v.reason;
  });
  if (!reason) return null;
  return (
    <Panel position="top-center" className="sb-connection-hint" data-testid="connection-hint" role="status">
      Not allowed: {reason}
    </Panel>
  );
}

function minimapColor(n: SbNode): string {
  return n.type === 'group' ? 'rgba(100,116,139,0.25)' : '#94a3b8';
}

export function Canvas({ colorMode }: { colorMode: ColorMode }) {
  const { store, toast } = useEditor();
  const rf = useReactFlow<SbNode, SbEdge>();
  const { nodes, edges } = useSyncExternalStore(store.subscribe, store.getSnapshot);
  const box = useRef<HTMLDivElement>(null);
  // A flow that was just opened is fitted into view once its nodes have been measured.
  const fitPending = useRef(false);
  const initialized = useNodesInitialized();
  useEffect(
    () =>
      store.onLoad(() => {
        fitPending.current = true;
      }),
    [store],
  );
  useEffect(() => {
    if (!fitPending.current || !initialized || nodes.length === 0) return;
    fitPending.current = false;
    void rf.fitView();
  }, [initialized, nodes, rf]);
  // Rendering aids that touch no React state: while the view moves, the viewport is its own
  // compositor layer (panning moves pixels instead of repainting every node); zoomed far out,
  // handles and detail lines are hidden (they are too small to use and cost paint per node).
  const onMoveStart = useCallback(() => box.current?.classList.add('sb-moving'), []);
  const onMoveEnd = useCallback((_e: unknown, vp: { zoom: number }) => {
    box.current?.classList.remove('sb-moving');
    box.current?.classList.toggle('sb-far', vp.zoom < 0.45);
  }, []);

  const onDrop = useCallback(
    (e: DragEvent) => {
      const kind = e.dataTransfer.getData(KIND_MIME);
      if (!kind) return;
      e.preventDefault();
      const at = rf.screenToFlowPosition({ x: e.clientX, y: e.clientY });
      try {
        store.addNode(kind, at);
      } catch (err) {
        toast((err as Error).message, 'error');
      }
    },
    [rf, store, toast],
  );

  const onConnectEnd = useCallback(
    (_e: MouseEvent | TouchEvent, c: FinalConnectionState) => {
      if (c.isValid !== false || !c.toNode || !c.fromNode || !c.fromHandle) return;
      const from = c.fromHandle;
      const v =
        from.type === 'source'
          ? store.judge(c.fromNode.id, from.id, c.toNode.id, c.toHandle?.id)
          : store.judge(c.toNode.id, c.toHandle?.id, c.fromNode.id, from.id);
      if (!v.ok) toast(`Connection refused: ${v.reason}`, 'error', 'connection-refusal');
    },
    [store, toast],
  );

  return (
    <div className="sb-canvas" data-testid="canvas" ref={box}>
      <ReactFlow<SbNode, SbEdge>
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={store.applyNodeChanges}
        onEdgesChange={store.applyEdgeChanges}
        onConnect={(c) => {
          const r = store.connect(c.source, c.sourceHandle, c.target, c.targetHandle);
          if ('reason' in r) toast(`Connection refused: ${r.reason}`, 'error', 'connection-refusal');
        }}
        isValidConnection={(c) => store.judge(c.source, c.sourceHandle, c.target, c.targetHandle).ok}
        onConnectEnd={onConnectEnd}
        onMoveStart={onMoveStart}
        onMoveEnd={onMoveEnd}
        onInit={(inst) => onMoveEnd(null, inst.getViewport())}
        onDragOver={(e) => e.preventDefault()}
        onDrop={onDrop}
        onNodeDragStop={(_e, _n, dragged) => store.commitDrag(dragged.map((d) => d.id))}
        deleteKeyCode={null}
        selectionKeyCode="Shift"
        multiSelectionKeyCode={['Meta', 'Control']}
        snapToGrid
        snapGrid={SNAP}
        fitView
        minZoom={0.05}
        colorMode={colorMode}
        proOptions={{ hideAttribution: true }}
        aria-label="Flow canvas"
      >
        <Background variant={BackgroundVariant.Dots} gap={16} />
        <MiniMap<SbNode> pannable zoomable nodeColor={minimapColor} ariaLabel="Mini map" />
        <Controls aria-label="Zoom controls" />
        <ConnectionHint />
        <PresenceLayer />
      </ReactFlow>
    </div>
  );
}
