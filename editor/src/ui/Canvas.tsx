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
import {
  type DragEvent,
  type MouseEvent as ReactMouseEvent,
  useCallback,
  useEffect,
  useRef,
  useState,
  useSyncExternalStore,
} from 'react';
import type { SbEdge, SbNode } from '../store/editorStore.js';
import { openText } from './actions.js';
import { CanvasHint } from './CanvasHint.js';
import { ContextMenu, type MenuTarget } from './ContextMenu.js';
import { useEditor } from './context.js';
import { useEdgeLabelLayout } from './edgeLabels.js';
import { edgeTypes } from './edges.js';
import { nodeTypes } from './nodes.js';
import { PresenceLayer } from './PresenceLayer.js';
import { RunOverlay } from './RunOverlay.js';
import { fitLegibly, MINIMAP, type MinimapCorner, minimapCorner, VIRTUALIZE_ABOVE } from './viewFit.js';

export const KIND_MIME = 'application/x-switchboard-kind';
const SNAP: [number, number] = [16, 16];
const PRO_OPTIONS = { hideAttribution: true };
const MINIMAP_STYLE = { width: MINIMAP.width, height: MINIMAP.height };

// React Flow copies each of its props into its store when the prop's identity changes, and every
// copy wakes every node's and edge's store subscription: on a large flow the props given here
// keep their identity from one render to the next.
const onDragOver = (e: DragEvent) => {
  e.preventDefault();
  e.dataTransfer.dropEffect = 'copy';
};

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
  // Until the person does anything, the fit of the open follows the canvas's size: a panel that
  // settles a moment after the open (or a resized window) would leave it off centre.
  const following = useRef(false);
  const initialized = useNodesInitialized();
  // A large flow renders only the nodes in view: the others are never measured, so React Flow
  // never calls it initialized; their estimated sizes are enough to fit (viewFit.allMeasured).
  const virtualize = nodes.length > VIRTUALIZE_ABOVE;
  useEffect(
    () =>
      store.onLoad(() => {
        fitPending.current = true;
      }),
    [store],
  );
  useEffect(() => {
    if (!fitPending.current || !(initialized || virtualize) || nodes.length === 0) return;
    fitPending.current = false;
    // Nodes of a freshly loaded document may still wait for their sizes: try again next frame.
    let frame = 0;
    let tries = 0;
    const attempt = () => {
      void fitLegibly(rf).then((fit) => {
        if (fit) {
          following.current = true;
          setCorner(minimapCorner(rf, fit));
          // Counted for the benchmark and browser tests: the open is over once the view is fitted.
          const el = box.current;
          if (el) el.dataset.fits = String(Number(el.dataset.fits ?? 0) + 1);
        } else if (tries++ < 60) frame = requestAnimationFrame(attempt);
      });
    };
    attempt();
    return () => cancelAnimationFrame(frame);
  }, [initialized, virtualize, nodes, rf]);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    let last = `${el.clientWidth}x${el.clientHeight}`;
    const ro = new ResizeObserver(() => {
      const size = `${el.clientWidth}x${el.clientHeight}`;
      if (size === last) return;
      last = size;
      if (following.current && !fitPending.current)
        void fitLegibly(rf).then((fit) => fit && setCorner(minimapCorner(rf, fit)));
    });
    ro.observe(el);
    // Whatever the person does first (a click, a key, a wheel) ends it: from then on the view is
    // theirs, and a panel opening for what they did must not move the canvas under them.
    const stop = () => {
      following.current = false;
    };
    window.addEventListener('pointerdown', stop, true);
    window.addEventListener('keydown', stop, true);
    window.addEventListener('wheel', stop, { capture: true, passive: true });
    return () => {
      ro.disconnect();
      window.removeEventListener('pointerdown', stop, true);
      window.removeEventListener('keydown', stop, true);
      window.removeEventListener('wheel', stop, true);
    };
  }, [rf]);
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

  const onConnect = useCallback(
    (c: { source: string; sourceHandle: string | null; target: string; targetHandle: string | null }) => {
      const r = store.connect(c.source, c.sourceHandle, c.target, c.targetHandle);
      if ('reason' in r) toast(`Connection refused: ${r.reason}`, 'error', 'connection-refusal');
    },
    [store, toast],
  );
  const isValidConnection = useCallback(
    (c: { source: string; sourceHandle?: string | null; target: string; targetHandle?: string | null }) =>
      store.judge(c.source, c.sourceHandle, c.target, c.targetHandle).ok,
    [store],
  );
  const onInit = useCallback(
    (inst: { getViewport(): { x: number; y: number; zoom: number } }) => onMoveEnd(null, inst.getViewport()),
    [onMoveEnd],
  );
  const onNodeDragStop = useCallback(
    (_e: unknown, _n: unknown, dragged: SbNode[]) => store.commitDrag(dragged.map((d) => d.id)),
    [store],
  );
  const onNodeContextMenu = useCallback(
    (e: ReactMouseEvent, n: SbNode) => openMenu('node', n.id, e),
    [openMenu],
  );
  const onEdgeContextMenu = useCallback(
    (e: ReactMouseEvent, edge: SbEdge) => openMenu('edge', edge.id, e),
    [openMenu],
  );
  const onPaneContextMenu = useCallback(
    (e: ReactMouseEvent | MouseEvent) => {
      e.preventDefault();
      closeMenu();
    },
    [closeMenu],
  );
  const onMoveStartAll = useCallback(() => {
    onMoveStart();
    closeMenu();
  }, [onMoveStart, closeMenu]);

  return (
    <div className="sb-canvas" data-testid="canvas" ref={box}>
      <ReactFlow<SbNode, SbEdge>
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={store.applyNodeChanges}
        onEdgesChange={store.applyEdgeChanges}
        onConnect={onConnect}
        isValidConnection={isValidConnection}
        onConnectEnd={onConnectEnd}
        onMoveEnd={onMoveEnd}
        onInit={onInit}
        onDragOver={onDragOver}
        onDrop={onDrop}
        onNodeDragStop={onNodeDragStop}
        onNodeContextMenu={onNodeContextMenu}
        onEdgeContextMenu={onEdgeContextMenu}
        onPaneContextMenu={onPaneContextMenu}
        onMoveStart={onMoveStartAll}
        deleteKeyCode={null}
        selectionKeyCode="Shift"
        multiSelectionKeyCode={['Meta', 'Control']}
        onlyRenderVisibleElements={virtualize}
        snapToGrid
        snapGrid={SNAP}
        minZoom={0.05}
        colorMode={colorMode}
        proOptions={PRO_OPTIONS}
        aria-label="Flow canvas"
      >
        <Background variant={BackgroundVariant.Dots} gap={16} />
        <RunOverlay />
        {showMap && (
          <MiniMap<SbNode>
            pannable
            zoomable
            position={corner}
            style={MINIMAP_STYLE}
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
