/**
 * The flow lifecycle in the editor: "Save as…" (a copy under a new id; the editor moves to it),
 * "Delete" with a confirmation, and the banner shown when the flow was deleted under you (who
 * deleted it; your canvas is kept, unshared, and can be saved as a copy).
 */
import { useEffect, useState, useSyncExternalStore } from 'react';
import type { CollabSnapshot } from '../collab/collab.js';
import { useEditor } from './context.js';
import { Dialog } from './Dialogs.js';
import {
  copyId,
  deletedBy,
  deletedHere,
  deleteFlow,
  ROOM_DELETED_CLOSE,
  saveAsCopy,
} from './flowLifecycle.js';

const NO_ROOM = (): CollabSnapshot | undefined => undefined;
const NO_SUBSCRIPTION = () => () => {};

export function SaveAsDialog({ onClose, title = 'Save as a new flow' }: { onClose(): void; title?: string }) {
  const services = useEditor();
  const { store, api } = services;
  const current = typeof store.meta('id') === 'string' ? (store.meta('id') as string) : 'flow';
  const currentName = typeof store.meta('name') === 'string' ? (store.meta('name') as string) : '';
  const [id, setId] = useState(() => copyId(current, new Set([current])));
  const [name, setName] = useState(() => (currentName ? `${currentName} (copy)` : 'Copy'));
  const [busy, setBusy] = useState(false);
  // Suggest an id the server does not hold yet.
  useEffect(() => {
    let live = true;
    api
      ?.list()
      .then((list) => {
        if (live) setId(copyId(current, new Set([current, ...list.map((f) => f.id)])));
      })
      .catch(() => {});
    return () => {
      live = false;
    };
  }, [api, current]);
  return (
    <Dialog title={title} onClose={onClose} testid="save-as-dialog">
      <form
        className="sb-form"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          const ok = await saveAsCopy(services, id.trim(), name.trim() || id.trim());
          setBusy(false);
          if (ok) onClose();
        }}
      >
        <label htmlFor="sb-save-as-id">New id</label>
        <input
          id="sb-save-as-id"
          data-testid="save-as-id"
          value={id}
          maxLength={128}
          onChange={(e) => setId(e.target.value)}
        />
        <label htmlFor="sb-save-as-name">Name</label>
        <input
          id="sb-save-as-name"
          data-testid="save-as-name"
          value={name}
          maxLength={200}
          onChange={(e) => setName(e.target.value)}
        />
        <p className="sb-help">
          The copy is a flow of its own; you move to it (the address follows). {current} stays as it is.
        </p>
        <div className="sb-dialog-actions">
          <button type="submit" data-testid="save-as-confirm" disabled={busy || !id.trim()}>
            Save copy
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function DeleteDialog({ onClose }: { onClose(): void }) {
  const services = useEditor();
  const { store, collab } = services;
  const id = typeof store.meta('id') === 'string' ? (store.meta('id') as string) : '';
  const name = typeof store.meta('name') === 'string' ? (store.meta('name') as string) : id;
  const others = collab ? collab.getSnapshot().peers.filter((p) => !p.self).length : 0;
  const [busy, setBusy] = useState(false);
  return (
    <Dialog title="Delete this flow?" onClose={onClose} testid="delete-dialog">
      <p>
        <strong>{name}</strong> ({id}) is deleted on the server for everyone
        {others ? `; the ${others} other ${others === 1 ? 'person' : 'people'} editing it are told` : ''}. Its
        id cannot be reopened; anyone may save what they see as a copy.
      </p>
      <div className="sb-dialog-actions">
        <button type="button" onClick={onClose}>
          Keep it
        </button>
        <button
          type="button"
          className="sb-danger"
          data-testid="delete-confirm"
          disabled={busy || !id}
          onClick={async () => {
            setBusy(true);
            await deleteFlow(services, collab?.room ?? id);
            setBusy(false);
            onClose();
          }}
        >
          Delete {id}
        </button>
      </div>
    </Dialog>
  );
}

/** Shown when the server closed the room for good: who deleted the flow, and what you can do. */
export function RoomClosedBanner({ saveAs }: { saveAs(): void }) {
  const { collab } = useEditor();
  const snap = useSyncExternalStore(collab?.subscribe ?? NO_SUBSCRIPTION, collab?.getSnapshot ?? NO_ROOM);
  const closed = snap?.closed;
  if (!closed) return null;
  const by = closed.code === ROOM_DELETED_CLOSE ? deletedBy(closed.reason) : undefined;
  return (
    <div
      className="sb-banner"
      role="alert"
      data-testid="room-closed"
      data-code={closed.code}
      data-deleted-by={by ?? ''}
    >
      <span>
        {closed.code === ROOM_DELETED_CLOSE
          ? `${closed.room} was deleted by ${by ?? 'someone'}${deletedHere.has(closed.room) ? ' (you)' : ''}.`
          : `The server closed ${closed.room}: ${closed.reason || `code ${closed.code}`}.`}{' '}
        What you see stays in this browser only.
      </span>
      <button type="button" data-testid="save-copy" onClick={saveAs}>
        Save as a copy
      </button>
    </div>
  );
}
