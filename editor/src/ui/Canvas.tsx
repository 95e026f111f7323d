/** The canvas: React Flow bound to the editor store, with drop-to-add and guarded connections. */
import {
  Background,
  BackgroundVariant,
  type ColorMode,
  ControlButton,
  Controls,
  type FinalConnectionState,
  MiniMap,
  Panel,
  ReactFlow,
  useConnection,
  useNodesInitialized,
  useReactFlow,
} from '@xyflow/react';
import { type DragEvent, useCallback, useEffect, useRef, useState, useSyncExternalStore } from 'react';
import type { SbEdge, SbNode } from '../store/editorStore.js';
import { openText } from './actions.js';
import { CanvasHint } from './CanvasHint.js';
import { ContextMenu, type MenuTarget } from './ContextMenu.js';
import { useEditor } from './context.js';
import { useEdgeLabelLayout } from './edgeLabels.js';
import { edgeTypes } from './edges.js';
import { nodeTypes } from './nodes.js';
import { PresenceLayer } from './PresenceLayer.js';
import { fitLegibly, MINIMAP, type MinimapCorner, minimapCorner } from './viewFit.js';

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

/** A `.json` file among the dropped ones, if any. */
function droppedFlowFile(e: DragEvent): File | undefined {
  return [...e.dataTransfer.files].find((f) => /\.json$/i.test(f.name) || f.type === 'application/json');
}

export function Canvas({ colorMode }: { colorMode: ColorMode }) {
  const services = useEditor();
  const { store, toast } = services;
  const rf = useReactFlow<SbNode, SbEdge>();
  const { nodes, edges } = useSyncExternalStore(store.subscribe, store.getSnapshot);
  const box = useRef<HTMLDivElement>(null);
  const [showMap, setShowMap] = useState(true);
  const [corner, setCorner] = useState<MinimapCorner>('bottom-right');
  const [menu, setMenu] = useState<MenuTarget | undefined>();
  const closeMenu = useCallback(() => setMenu(undefined), []);
  const openMenu = useCallback(
    (
      kind: MenuTarget['kind'],
      id: string,
      e: { clientX: number; clientY: number; target: EventTarget; preventDefault(): void },
    ) => {
      e.preventDefault();
      const b = box.current?.getBoundingClientRect();
      if (!b) return;
      // From the keyboard (Shift+F10, the menu key) there is no pointer: open at the element.
      let at = { x: e.clientX, y: e.clientY };
      if (at.x === 0 && at.y === 0) {
        const r = (e.target as Element)
          .closest?.('.react-flow__node, .react-flow__edge')
          ?.getBoundingClientRect();
        if (r) at = { x: r.left + 8, y: r.bottom };
      }
      // Kept inside the canvas, so that no item opens out of reach.
      setMenu({
        kind,
        id,
        x: Math.max(0, Math.min(at.x - b.left, b.width - 180)),
        y: Math.max(0, Math.min(at.y - b.top, b.height - 150)),
      });
    },
    [],
  );
  // A flow that was just opened (the first one included) is fitted into view once its nodes have
  // been measured, at a zoom where its titles stay readable.
  const fitPending = useRef(true);
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
    // Nodes of a freshly loaded document may still wait for their sizes: try again next frame.
    let frame = 0;
    let tries = 0;
    const attempt = () => {
      void fitLegibly(rf).then((fit) => {
        if (fit) setCorner(minimapCorner(rf, fit));
        else if (tries++ < 60) frame = requestAnimationFrame(attempt);
      });
    };
    attempt();
    return () => cancelAnimationFrame(frame);
  }, [initialized, nodes, rf]);
  useEdgeLabelLayout(rf, box, nodes, edges, initialized);
  // Rendering aids that touch no React state: while the view moves, the viewport is its own
  // compositor layer (panning moves pixels instead of repainting every node); zoomed far out,
  // handles and detail lines are hidden (they are too small to use and cost paint per node).
  const onMoveStart = useCallback(() => box.current?.classList.add('sb-moving'), []);
  const onMoveEnd = useCallback(
    (_e: unknown, vp: { x: number; y: number; zoom: number }) => {
      box.current?.classList.remove('sb-moving');
      box.current?.classList.toggle('sb-far', vp.zoom < 0.45);
      // The minimap moves out of the way of the start node.
      setCorner(minimapCorner(rf, vp));
    },
    [rf],
  );

  const onDrop = useCallback(
    (e: DragEvent) => {
      const file = droppedFlowFile(e);
      if (file) {
        e.preventDefault();
        void file.text().then((text) => {
          if (openText(services, text, file.name)) fitPending.current = true;
        });
        return;
      }
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
    [rf, store, toast, services],
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
        onMoveEnd={onMoveEnd}
        onInit={(inst) => onMoveEnd(null, inst.getViewport())}
        onDragOver={(e) => {
          e.preventDefault();
          e.dataTransfer.dropEffect = 'copy';
        }}
        onDrop={onDrop}
        onNodeDragStop={(_e, _n, dragged) => store.commitDrag(dragged.map((d) => d.id))}
        onNodeContextMenu={(e, n) => openMenu('node', n.id, e)}
        onEdgeContextMenu={(e, edge) => openMenu('edge', edge.id, e)}
        onPaneContextMenu={(e) => {
          e.preventDefault();
          closeMenu();
        }}
        onMoveStart={() => {
          onMoveStart();
          closeMenu();
        }}
        deleteKeyCode={null}
        selectionKeyCode="Shift"
        multiSelectionKeyCode={['Meta', 'Control']}
        snapToGrid
        snapGrid={SNAP}
        minZoom={0.05}
        colorMode={colorMode}
        proOptions={{ hideAttribution: true }}
        aria-label="Flow canvas"
      >
        <Background variant={BackgroundVariant.Dots} gap={16} />
        {showMap && (
          <MiniMap<SbNode>
            pannable
            zoomable
            position={corner}
            style={{ width: MINIMAP.width, height: MINIMAP.height }}
            nodeColor={minimapColor}
            ariaLabel="Mini map"
          />
        )}
        <Controls aria-label="Zoom controls" showFitView={false}>
          <ControlButton
            onClick={() => void fitLegibly(rf, 200)}
            title="Fit at a readable zoom (F)"
            aria-label="Fit at a readable zoom"
            data-testid="ctl-fit"
          >
            ⤢
          </ControlButton>
          <ControlButton
            onClick={() => void rf.fitView({ duration: 200 })}
            title="Show the whole flow, however small (Shift+F)"
            aria-label="Show the whole flow"
            data-testid="ctl-fit-all"
          >
            ⛶
          </ControlButton>
          <ControlButton
            onClick={() => setShowMap(!showMap)}
            title={showMap ? 'Hide the minimap' : 'Show the minimap'}
            aria-label={showMap ? 'Hide the minimap' : 'Show the minimap'}
            aria-pressed={showMap}
            data-testid="btn-minimap"
          >
            ▦
          </ControlButton>
        </Controls>
        <ConnectionHint />
        <CanvasHint nodes={nodes.length} edges={edges.length} />
        <PresenceLayer />
      </ReactFlow>
      {menu && <ContextMenu target={menu} onClose={closeMenu} />}
    </div>
  );
}
