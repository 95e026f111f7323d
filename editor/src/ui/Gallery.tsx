/**
 * Open… and the first visit's welcome: the shipped examples as cards (a picture drawn from the
 * example's own nodes and edges, its purpose in one line, "Use this" → a new flow of one's own
 * from it), a blank flow, import, and the server's flows. The welcome shows once per browser
 * (unless the address names a flow); Open… in the toolbar brings the same gallery back.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { FlowSummary } from '../model/api.js';
import { type Template, templates } from '../model/templates.js';
import { purposeOf, thumbnail } from '../model/thumbnail.js';
import { newFlow, openText } from './actions.js';
import { useEditor } from './context.js';
import { Dialog } from './Dialogs.js';
import { FlowList } from './FlowList.js';
import { deleteFlow, newFromTemplate } from './flowLifecycle.js';

export const WELCOMED_KEY = 'switchboard:welcomed';

/** The address as the visitor typed it: the editor soon writes the room it opened into it. */
export const ARRIVED_WITH = typeof location === 'undefined' ? '' : location.search;

/** Whether this visit starts with the welcome: never seen here, and no flow named in the address. */
export function shouldWelcome(storage: Storage, search: string): boolean {
  const q = new URLSearchParams(search);
  if (q.has('flow') || q.has('bench')) return false;
  try {
    return storage.getItem(WELCOMED_KEY) === null;
  } catch {
    return false;
  }
}

export function markWelcomed(storage: Storage): void {
  try {
    storage.setItem(WELCOMED_KEY, new Date().toISOString());
  } catch {
    // Storage refused (private mode): the welcome may show again, nothing breaks.
  }
}

function Picture({ t }: { t: Template }) {
  const { store } = useEditor();
  const pic = useMemo(() => {
    try {
      return thumbnail(JSON.parse(t.text), store.registry);
    } catch {
      return undefined;
    }
  }, [t.text, store.registry]);
  if (!pic) return <div className="sb-thumb sb-thumb-empty" />;
  return (
    <svg
      className="sb-thumb"
      viewBox={pic.viewBox}
      preserveAspectRatio="xMidYMid meet"
      role="img"
      aria-label={`Picture of ${t.name}: ${pic.boxes.length} nodes, ${pic.lines.length} edges`}
      data-testid={`thumb-${t.file}`}
    >
      {pic.boxes
        .filter((b) => b.group)
        .map((b) => (
          <rect
            key={b.id}
            x={b.x}
            y={b.y}
            width={b.width}
            height={b.height}
            rx={16}
            fill={b.color}
            fillOpacity={0.08}
            stroke={b.color}
            strokeWidth={6}
            strokeDasharray="18 10"
          />
        ))}
      {pic.lines.map((l) => (
        <line key={l.id} x1={l.x1} y1={l.y1} x2={l.x2} y2={l.y2} className="sb-thumb-edge" strokeWidth={6} />
      ))}
      {pic.boxes
        .filter((b) => !b.group)
        .map((b) => (
          <rect
            key={b.id}
            x={b.x}
            y={b.y}
            width={b.width}
            height={b.height}
            rx={10}
            fill={b.color}
            className="sb-thumb-node"
          />
        ))}
    </svg>
  );
}

export function Gallery({ onClose, welcome = false }: { onClose(): void; welcome?: boolean }) {
  const services = useEditor();
  const list = templates();
  const [server, setServer] = useState<FlowSummary[] | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const file = useRef<HTMLInputElement>(null);
  const close = useCallback(() => {
    markWelcomed(localStorage);
    onClose();
  }, [onClose]);
  const refresh = useCallback(() => {
    services.api
      ?.list()
      .then(setServer)
      .catch(() => setServer([]));
  }, [services.api]);
  useEffect(refresh, [refresh]);
  const served = !!services.api && !!services.collab;
  return (
    <Dialog
      title={welcome ? 'Welcome to Switchboard' : 'Open a flow'}
      onClose={close}
      testid={welcome ? 'welcome' : 'gallery'}
    >
      {welcome && (
        <p className="sb-lead">
          Start from one of the examples below, from a blank flow, or import a flow file. This gallery is
          always one click away under <strong>Open…</strong>.
        </p>
      )}
      <div className="sb-gallery-start">
        <button
          type="button"
          data-testid="gallery-blank"
          onClick={() => {
            newFlow(services);
            close();
          }}
        >
          + Blank flow
        </button>
        <button type="button" data-testid="gallery-import" onClick={() => file.current?.click()}>
          Import a file…
        </button>
        <input
          ref={file}
          type="file"
          accept=".json,application/json"
          hidden
          data-testid="gallery-import-file"
          aria-label="Import a flow file"
          onChange={async (e) => {
            const f = e.target.files?.[0];
            e.target.value = '';
            if (f && openText(services, await f.text(), f.name)) close();
          }}
        />
      </div>
      <h3>{served ? 'Examples: each opens as a new flow of your own' : 'Examples'}</h3>
      {list.length === 0 && <p className="sb-help">No flows in flows/ were bundled with this build.</p>}
      <ul className="sb-gallery">
        {list.map((t) => (
          <li key={t.file} className="sb-card" data-testid={`card-${t.file}`}>
            <Picture t={t} />
            <strong className="sb-card-name">{t.name}</strong>
            <span className="sb-card-purpose" title={t.description}>
              {t.problem ?? purposeOf(t.description)}
            </span>
            <span className="sb-gallery-meta">
              {t.nodeCount} nodes · {t.file}.json
            </span>
            <button
              type="button"
              className="sb-primary"
              data-testid={`template-${t.file}`}
              disabled={!!t.problem || busy}
              aria-label={`Use ${t.name}`}
              onClick={async () => {
                setBusy(true);
                const ok = await newFromTemplate(services, t.file, t.text);
                setBusy(false);
                if (ok) close();
              }}
            >
              Use this
            </button>
          </li>
        ))}
      </ul>
      {services.api && (
        <>
          <h3>On the server</h3>
          {server === undefined ? (
            <p className="sb-help">Loading…</p>
          ) : server.length === 0 ? (
            <p className="sb-help">No flows saved yet.</p>
          ) : (
            <FlowList
              flows={server}
              open={async (f) => {
                try {
                  const text = await services.api!.get(f.id);
                  if (openText(services, text, f.id)) close();
                } catch (e) {
                  services.toast((e as Error).message, 'error');
                }
              }}
              remove={async (f) => {
                await deleteFlow(services, f.id);
                refresh();
              }}
            />
          )}
        </>
      )}
    </Dialog>
  );
}
