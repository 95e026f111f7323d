/**
 * Co-editors on the canvas: everyone's pointer as a labelled cursor in their colour (flow
 * coordinates, so it points at the same spot whatever each person's zoom), and, when you follow
 * someone (their presence chip), your view moves with theirs until you pan or zoom yourself.
 * This editor publishes its own pointer and view the same way (throttled, pointers.ts).
 */
import { useOnViewportChange, useReactFlow, useStore, type Viewport, ViewportPortal } from '@xyflow/react';
import { useCallback, useEffect, useMemo, useSyncExternalStore } from 'react';
import type { Collab } from '../collab/collab.js';
import {
  CURSOR_FIELD,
  type FlowPoint,
  type FlowView,
  roundPoint,
  throttled,
  VIEW_FIELD,
} from '../collab/pointers.js';
import { useEditor } from './context.js';
import { useFollow } from './follow.js';

function Layer({ collab }: { collab: Collab }) {
  const rf = useReactFlow();
  const domNode = useStore((s) => s.domNode);
  const width = useStore((s) => s.width);
  const height = useStore((s) => s.height);
  const zoom = useStore((s) => s.transform[2]);
  const snap = useSyncExternalStore(collab.subscribe, collab.getSnapshot);
  const { following, setFollowing } = useFollow();

  // This editor's pointer, in flow coordinates; null once it leaves the canvas.
  useEffect(() => {
    if (!domNode) return;
    const send = throttled((p: FlowPoint | null) => collab.setLocalField(CURSOR_FIELD, p));
    const move = (e: PointerEvent) =>
      send(roundPoint(rf.screenToFlowPosition({ x: e.clientX, y: e.clientY })));
    const leave = () => send(null);
    domNode.addEventListener('pointermove', move);
    domNode.addEventListener('pointerleave', leave);
    return () => {
      domNode.removeEventListener('pointermove', move);
      domNode.removeEventListener('pointerleave', leave);
      send.cancel();
    };
  }, [domNode, collab, rf]);

  // This editor's view: the flow point at the centre of the canvas, and the zoom. A (re)joined
  // room starts from an empty awareness state, so what was sent before counts for nothing there.
  const liveRoom = snap.status === 'live' ? snap.room : undefined;
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new room needs the view sent again
  const sendView = useMemo(() => {
    let last = '';
    return throttled((v: FlowView) => {
      // Awareness sends every update to everyone, even an unchanged one.
      const key = `${v.x},${v.y},${v.zoom}`;
      if (key === last) return;
      last = key;
      collab.setLocalField(VIEW_FIELD, v);
    });
  }, [collab, liveRoom]);
  useEffect(() => () => sendView.cancel(), [sendView]);
  const publishView = useCallback(
    (vp: Viewport) => {
      if (!width || !height) return;
      const c = roundPoint({ x: (width / 2 - vp.x) / vp.zoom, y: (height / 2 - vp.y) / vp.zoom });
      sendView({ ...c, zoom: Math.round(vp.zoom * 1000) / 1000 });
    },
    [width, height, sendView],
  );
  useOnViewportChange({ onChange: publishView });
  useEffect(() => {
    if (liveRoom) publishView(rf.getViewport());
  }, [liveRoom, rf, publishView]);

  // Following: move with them; your own pan or zoom ends it.
  const view = snap.peers.find((p) => p.clientId === following && !p.self)?.view;
  const [vx, vy, vz] = view ? [view.x, view.y, view.zoom] : [];
  useEffect(() => {
    if (vx !== undefined && vy !== undefined && vz !== undefined) void rf.setCenter(vx, vy, { zoom: vz });
  }, [vx, vy, vz, rf]);
  useEffect(() => {
    if (!domNode || following === undefined) return;
    const stop = () => setFollowing(undefined);
    domNode.addEventListener('wheel', stop, { passive: true });
    domNode.addEventListener('pointerdown', stop);
    return () => {
      domNode.removeEventListener('wheel', stop);
      domNode.removeEventListener('pointerdown', stop);
    };
  }, [domNode, following, setFollowing]);

  const others = snap.peers.filter((p) => !p.self && p.cursor);
  return (
    <ViewportPortal>
      {others.map((p) => (
        <div
          key={p.clientId}
          className="sb-cursor"
          data-testid="cursor"
          data-name={p.name}
          data-color={p.color}
          aria-hidden
          style={{
            transform: `translate(${p.cursor!.x}px, ${p.cursor!.y}px) scale(${1 / zoom})`,
            color: p.color,
          }}
        >
          <svg width="16" height="20" viewBox="0 0 16 20" aria-hidden>
            <path d="M1 1 L1 16 L5 12 L8 19 L11 18 L8 11 L14 11 Z" fill="currentColor" stroke="white" />
          </svg>
          <span className="sb-cursor-label" style={{ background: p.color }}>
            {p.name}
          </span>
        </div>
      ))}
    </ViewportPortal>
  );
}

export function PresenceLayer() {
  const { collab } = useEditor();
  return collab ? <Layer collab={collab} /> : null;
}
