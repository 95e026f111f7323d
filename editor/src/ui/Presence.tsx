/**
 * Who is editing this flow: one chip per person in the co-editing room (this editor first),
 * with the node each has selected. Absent when the editor works without a server.
 */
import { useEffect, useSyncExternalStore } from 'react';
import type { Collab } from '../collab/collab.js';
import { useEditor } from './context.js';

const STATUS: Record<string, string> = {
  connecting: 'joining…',
  live: 'live',
  offline: 'offline: edits are kept and sent when the server is back',
};

function Chips({ collab }: { collab: Collab }) {
  const { store, toast } = useEditor();
  const snap = useSyncExternalStore(collab.subscribe, collab.getSnapshot);
  const joined = snap.joined;
  useEffect(() => {
    if (!joined) return;
    if (joined.adopted)
      toast(
        `Joined the live session of ${joined.room}${joined.others ? ` (${joined.others} editing)` : ''}: you see their current version`,
        'info',
        'collab-joined',
      );
  }, [joined, toast]);
  if (!snap.room) return null;
  return (
    <span
      className="sb-presence"
      data-testid="presence"
      data-room={snap.room}
      data-status={snap.status}
      data-peers={snap.peers.length}
      title={`Co-editing room ${snap.room}: ${STATUS[snap.status] ?? snap.status}`}
    >
      <span className={`sb-presence-dot sb-presence-${snap.status}`} aria-hidden />
      {snap.peers.map((p) => (
        <span
          key={p.clientId}
          className="sb-peer"
          data-testid={p.self ? 'peer-self' : 'peer'}
          data-name={p.name}
          style={{ borderColor: p.color }}
          title={p.selection.length ? `${p.name} has ${p.selection.join(', ')} selected` : p.name}
        >
          <span className="sb-peer-dot" style={{ background: p.color }} aria-hidden />
          {p.name}
          {p.self ? ' (you)' : ''}
          {!p.self && p.selection.length === 1 ? ` · ${store.displayName(p.selection[0]!)}` : ''}
        </span>
      ))}
    </span>
  );
}

export function Presence() {
  const { collab } = useEditor();
  return collab ? <Chips collab={collab} /> : null;
}
