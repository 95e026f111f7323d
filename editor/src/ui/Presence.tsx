/**
 * Who is editing this flow: one chip per person in the co-editing room (this editor first),
 * with the node each has selected. Your own chip sets your display name (kept in this browser);
 * another's follows their view (canvas: PresenceLayer.tsx). Absent without a server.
 */
import { useEffect, useState, useSyncExternalStore } from 'react';
import type { Collab } from '../collab/collab.js';
import { cleanName, loadIdentity, saveIdentity } from '../collab/identity.js';
import { useEditor } from './context.js';
import { useFollow } from './follow.js';

const STATUS: Record<string, string> = {
  connecting: 'joining…',
  live: 'live',
  offline: 'offline: edits are kept and sent when the server is back',
};

/**
 * `Ada Lovelace` → `AL`, `Guest Otter` → `O` (every guest would be a `G`): chips stay small; the
 * full name is in the tooltip, on nodes and on cursors.
 */
export function initials(name: string): string {
  let words = name.trim().split(/\s+/).filter(Boolean);
  if (words.length > 1 && words[0] === 'Guest') words = words.slice(1);
  return words
    .slice(0, 2)
    .map((w) => [...w][0]!.toUpperCase())
    .join('');
}

/** Your own chip: your name, which you can change (kept in this browser for next time). */
function NameEditor({ collab, name, onDone }: { collab: Collab; name: string; onDone(): void }) {
  const [value, setValue] = useState(name);
  return (
    <form
      className="sb-name-editor"
      data-testid="name-editor"
      onSubmit={(e) => {
        e.preventDefault();
        const clean = cleanName(value);
        if (clean) {
          const identity = { ...loadIdentity(window.localStorage), name: clean };
          saveIdentity(window.localStorage, identity);
          collab.setIdentity(identity);
        }
        onDone();
      }}
    >
      <label htmlFor="sb-my-name">Your name, as others see it</label>
      <input
        id="sb-my-name"
        data-testid="my-name"
        value={value}
        maxLength={40}
        // biome-ignore lint/a11y/noAutofocus: the popover opens to type a name
        autoFocus
        onChange={(e) => setValue(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Escape') onDone();
        }}
      />
      <button type="submit" data-testid="my-name-save">
        OK
      </button>
    </form>
  );
}

function Chips({ collab }: { collab: Collab }) {
  const { store, toast } = useEditor();
  const { following, setFollowing } = useFollow();
  const [editing, setEditing] = useState(false);
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
  // Whoever you follow left: stop following.
  const followed = snap.peers.find((p) => p.clientId === following && !p.self);
  useEffect(() => {
    if (following !== undefined && !followed) setFollowing(undefined);
  }, [following, followed, setFollowing]);
  if (!snap.room) return null;
  const self = snap.peers.find((p) => p.self);
  return (
    <span
      className="sb-presence"
      data-testid="presence"
      data-room={snap.room}
      data-status={snap.status}
      data-peers={snap.peers.length}
      data-following={followed?.name ?? ''}
      title={`Co-editing room ${snap.room}: ${STATUS[snap.status] ?? snap.status}`}
    >
      <span className={`sb-presence-dot sb-presence-${snap.status}`} aria-hidden />
      {snap.peers.map((p) => (
        <button
          type="button"
          key={p.clientId}
          className={`sb-peer${p.self ? ' sb-peer-self' : ''}${p.clientId === following ? ' sb-peer-followed' : ''}`}
          data-testid={p.self ? 'peer-self' : 'peer'}
          data-name={p.name}
          data-color={p.color}
          style={{ background: p.color }}
          aria-pressed={p.self ? undefined : p.clientId === following}
          title={
            p.self
              ? `${p.name} (you) · click to change your name`
              : `${p.name}${
                  p.selection.length
                    ? ` · has ${p.selection.map((id) => store.displayName(id)).join(', ')} selected`
                    : ''
                } · click to ${p.clientId === following ? 'stop following' : 'follow their view'}`
          }
          aria-label={
            p.self
              ? `${p.name} (you): change your name`
              : `${p.clientId === following ? 'Stop following' : 'Follow'} ${p.name}`
          }
          onClick={() => {
            if (p.self) setEditing((v) => !v);
            else setFollowing(p.clientId === following ? undefined : p.clientId);
          }}
        >
          {initials(p.name)}
        </button>
      ))}
      {followed && (
        <span className="sb-following" data-testid="following">
          following {followed.name}
        </span>
      )}
      {editing && self && <NameEditor collab={collab} name={self.name} onDone={() => setEditing(false)} />}
    </span>
  );
}

export function Presence() {
  const { collab } = useEditor();
  return collab ? <Chips collab={collab} /> : null;
}
