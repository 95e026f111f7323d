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

/** `Guest Otter` → `GO`: chips stay small; the full name is in the tooltip and on nodes. */
export function initials(name: string): string {
  const words = name.trim().split(/\s+/).filter(Boolean);
  return words
    .slice(0, 2)
    .map((w) => [...w][0]!.toUpperCase())
    .join('');
}

function Chips({ collab }: { collab: Collab }) {
  const { store, toast } = useEditor();
  const snap = useSyncExternalStore(collab.subscribe, collab.getSnapshot);
  const joined = snap.joined;
  useEffect(() => {
    if (!joined) return;
    // The room's version replaced what was opened: say whose it is (the server keeps rooms saved).
    if (joined.adopted)
      toast(
        joined.others
          ? `Joined the live session of ${joined.room} (${joined.others} editing): you see their current version`
          : `Opened ${joined.room} as saved on the server`,
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
          className={`sb-peer${p.self ? ' sb-peer-self' : ''}`}
          data-testid={p.self ? 'peer-self' : 'peer'}
          data-name={p.name}
          style={{ background: p.color }}
          title={`${p.name}${p.self ? ' (you)' : ''}${
            !p.self && p.selection.length
              ? ` · has ${p.selection.map((id) => store.displayName(id)).join(', ')} selected`
              : ''
          }`}
          role="img"
          aria-label={p.self ? `${p.name} (you)` : p.name}
        >
          {initials(p.name)}
        </span>
      ))}
    </span>
  );
}

export function Presence() {
  const { collab } = useEditor();
  return collab ? <Chips collab={collab} /> : null;
}
