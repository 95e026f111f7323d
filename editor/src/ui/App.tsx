/** The editor: toolbar, palette, canvas, inspector, problems; shortcuts, theme and autosave. */
import { ReactFlowProvider, useReactFlow } from '@xyflow/react';
import {
  lazy,
  Suspense,
  useCallback,
  useEffect,
  useMemo,
  useRef,
  useState,
  useSyncExternalStore,
} from 'react';
import type { CollabSnapshot } from '../collab/collab.js';
import { roomSaveView } from '../collab/saveState.js';
import { isFragment } from '../model/clipboard.js';
import type { SbEdge, SbNode } from '../store/editorStore.js';
import { copyJson, exportFile, layout, newFlow, openText, saveToServer } from './actions.js';
import { Canvas } from './Canvas.js';
import { EditorContext, type EditorServices, type Toast, useDocVersion, useEditor } from './context.js';
import { HelpDialog, PasteDialog } from './Dialogs.js';
import { FollowContext, type FollowState } from './follow.js';
import { ARRIVED_WITH, Gallery, shouldWelcome } from './Gallery.js';
import { Inspector } from './Inspector.js';
import { DeleteDialog, RoomClosedBanner, SaveAsDialog } from './Lifecycle.js';
import { Palette } from './Palette.js';
import { Presence } from './Presence.js';
import { Problems } from './Problems.js';
import { RunPanel } from './RunPanel.js';
import { StorageBanner } from './StorageBanner.js';
import { fitLegibly } from './viewFit.js';

// Loaded when first shown, not with the editor (code splitting keeps the first load small). The
// run panel's bar and the dialogs stay: the bar is part of the first layout (loaded later, it
// would shrink the canvas under a view already fitted), and Lifecycle's banner needs the dialogs.
const TracePanel = lazy(() => import('./TracePanel.js').then((m) => ({ default: m.TracePanel })));

type Theme = 'light' | 'dark';
type DialogName = 'welcome' | 'gallery' | 'paste' | 'help' | 'save-as' | 'delete' | undefined;

function initialTheme(): Theme {
  const saved = localStorage.getItem('switchboard:theme');
  if (saved === 'light' || saved === 'dark') return saved;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

function isTyping(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  return !!el && (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName));
}

const NO_ROOM = (): CollabSnapshot | undefined => undefined;
const NO_SUBSCRIPTION = () => () => {};

/** How long the document must stay unchanged before the toolbar serializes it again. */
const SETTLE_MS = 300;

/**
 * The serialized flow, recomputed a moment after the last change instead of on every keystroke
 * (serializing a flow of a thousand nodes costs tens of milliseconds); `current` says whether it
 * is the document as it is now. The store caches the text per version, so autosave shares it.
 */
function useSettledText(store: EditorServices['store']): { text: string; current: boolean } {
  const version = useDocVersion(store);
  const [settled, setSettled] = useState(() => ({ version: store.docVersion, text: store.serialize() }));
  useEffect(() => {
    if (settled.version === version) return;
    let live = true;
    const t = setTimeout(() => {
      const v = store.docVersion;
      void store.settledText().then((text) => {
        if (live && text !== undefined) setSettled({ version: v, text });
      });
    }, SETTLE_MS);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [store, version, settled.version]);
  return { text: settled.text, current: settled.version === version };
}

function SaveState() {
  const { store, drafts, collab } = useEditor();
  const { text, current } = useSettledText(store);
  const room = useSyncExternalStore(collab?.subscribe ?? NO_SUBSCRIPTION, collab?.getSnapshot ?? NO_ROOM);

  // In a live room the server saves; its status says more than this browser's drafts can.
  const live = room?.status === 'live';
  const saving = room?.saving;
  const savingKey = JSON.stringify(saving ?? null);
  const refused = room?.refused;
  const shown = current ? text : undefined;
  // biome-ignore lint/correctness/useExhaustiveDependencies: the status is compared by content (savingKey)
  const server = useMemo(
    () => (live || refused ? roomSaveView(saving, shown, refused) : undefined),
    [live, savingKey, shown, refused],
  );
  if (room?.closed)
    return (
      <span
        className="sb-save-state sb-unsaved"
        data-testid="save-state"
        data-saved={false}
        data-room-save="closed"
        title={`The server closed ${room.closed.room}: ${room.closed.reason}`}
      >
        not saved: the flow is closed
      </span>
    );
  if (server)
    return (
      <span
        className={`sb-save-state${server.saved ? '' : ' sb-unsaved'}`}
        data-testid="save-state"
        data-saved={server.saved}
        data-room-save={server.kind}
        title={server.title}
      >
        {server.label}
      </span>
    );
  const saved = current && drafts.isSaved(text);
  return (
    <span
      className={`sb-save-state${saved ? '' : ' sb-unsaved'}`}
      data-testid="save-state"
      data-saved={saved}
      title={
        saved
          ? 'Saved or exported as it is'
          : 'Unsaved changes, kept in this browser until you save or export'
      }
    >
      {saved ? 'saved' : 'unsaved changes'}
    </span>
  );
}

function Toolbar(props: { theme: Theme; setTheme(t: Theme): void; open(d: DialogName): void }) {
  const services = useEditor();
  const { store, api } = services;
  const rf = useReactFlow<SbNode, SbEdge>();
  const file = useRef<HTMLInputElement>(null);
  useDocVersion(store);
  const name = typeof store.meta('name') === 'string' ? (store.meta('name') as string) : '';
  // Short labels (full ones in the title and for screen readers): the toolbar stays one row at 1280 px.
  const b = (testid: string, label: string, onClick: () => void, title?: string) => (
    <button
      type="button"
      data-testid={testid}
      onClick={onClick}
      title={title ?? label}
      aria-label={title && title !== label ? `${label}: ${title}` : undefined}
    >
      {label}
    </button>
  );
  return (
    <header className="sb-toolbar" role="toolbar" aria-label="Editor actions">
      <strong className="sb-brand">Switchboard</strong>
      <span className="sb-flow-name" data-testid="flow-title">
        {name}
      </span>
      <SaveState />
      <Presence />
      <span className="sb-spacer" />
      {b('btn-new', 'New', () => newFlow(services))}
      {b('btn-templates', 'Open…', () => props.open('gallery'), 'Templates and server flows')}
      {b(
        'btn-import',
        'Import',
        () => file.current?.click(),
        'Import a flow file (or drop it on the canvas)',
      )}
      <input
        ref={file}
        type="file"
        accept=".json,application/json"
        hidden
        data-testid="import-file"
        aria-label="Import a flow file"
        onChange={async (e) => {
          const f = e.target.files?.[0];
          if (f) openText(services, await f.text(), f.name);
          e.target.value = '';
        }}
      />
      {b('btn-paste-json', 'Paste', () => props.open('paste'), 'Paste a flow as JSON')}
      {b('btn-export', 'Export', () => exportFile(services), 'Download the flow (Ctrl+E)')}
      {b('btn-copy-json', 'Copy JSON', () => void copyJson(services), 'Copy the flow as JSON')}
      {b(
        'btn-save',
        api ? 'Save' : 'Save (offline)',
        () => void saveToServer(services),
        'Save to the server (Ctrl+S)',
      )}
      {api &&
        b(
          'btn-save-as',
          'Save as…',
          () => props.open('save-as'),
          'Save a copy under a new id and move to it',
        )}
      {api &&
        b('btn-delete', 'Delete', () => props.open('delete'), 'Delete this flow on the server, for everyone')}
      <span className="sb-sep" />
      {b('btn-undo', '↶', () => store.undo(), 'Undo (Ctrl+Z)')}
      {b('btn-redo', '↷', () => store.redo(), 'Redo (Ctrl+Shift+Z)')}
      {b(
        'btn-layout',
        'Layout',
        () => void layout(services).then(() => fitLegibly(rf, 200)),
        'Auto-layout (Ctrl+Shift+L)',
      )}
      {b('btn-fit', 'Fit', () => void fitLegibly(rf, 200), 'Fit at a readable zoom (F)')}
      {b(
        'btn-theme',
        props.theme === 'dark' ? '☀' : '☾',
        () => props.setTheme(props.theme === 'dark' ? 'light' : 'dark'),
        'Switch theme',
      )}
      {b('btn-help', '?', () => props.open('help'), 'Keyboard shortcuts (?)')}
    </header>
  );
}

function Shortcuts({ open, dialog }: { open(d: DialogName): void; dialog: DialogName }) {
  const services = useEditor();
  const { store } = services;
  const rf = useReactFlow<SbNode, SbEdge>();
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const mod = e.ctrlKey || e.metaKey;
      const key = e.key.toLowerCase();
      if (mod && key === 's') {
        e.preventDefault();
        void saveToServer(services);
        return;
      }
      if (dialog || isTyping(e.target)) return;
      if (mod && key === 'z' && !e.shiftKey) store.undo();
      else if (mod && ((key === 'z' && e.shiftKey) || key === 'y')) store.redo();
      else if (mod && key === 'c') {
        const frag = store.copySelection();
        if (frag) navigator.clipboard?.writeText(JSON.stringify(frag)).catch(() => {});
        else return;
      } else if (mod && key === 'v') {
        if (store.paste().length === 0)
          navigator.clipboard
            ?.readText()
            .then((t) => {
              const v = JSON.parse(t);
              if (isFragment(v)) store.paste(v);
              else openText(services, t, 'the clipboard');
            })
            .catch(() => {});
      } else if (mod && key === 'd') store.duplicateSelection();
      else if (mod && key === 'a') {
        const snap = store.getSnapshot();
        store.select({ nodes: snap.nodes.map((n) => n.id), edges: snap.edges.map((x) => x.id) });
      } else if (mod && key === 'e') exportFile(services);
      else if (mod && e.shiftKey && key === 'l') void layout(services);
      else if (!mod && (e.key === 'Delete' || e.key === 'Backspace')) store.deleteSelection();
      else if (!mod && key === 'f' && e.shiftKey) void rf.fitView({ duration: 200 });
      else if (!mod && key === 'f') void fitLegibly(rf, 200);
      else if (!mod && e.key === '?') open('help');
      else if (e.key === 'Escape') store.select({});
      else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [services, store, rf, open, dialog]);
  return null;
}

function Toasts({ toasts }: { toasts: Toast[] }) {
  return (
    <div className="sb-toasts" aria-live="polite">
      {toasts.map((t) => (
        <div
          key={t.id}
          className={`sb-toast sb-toast-${t.kind}`}
          role={t.kind === 'error' ? 'alert' : 'status'}
          data-testid={t.testid ?? 'toast'}
        >
          {t.text}
        </div>
      ))}
    </div>
  );
}

export function App(props: Omit<EditorServices, 'toast'>) {
  const [theme, setTheme] = useState<Theme>(initialTheme);
  const [dialog, setDialog] = useState<DialogName>(() =>
    shouldWelcome(localStorage, ARRIVED_WITH) ? 'welcome' : undefined,
  );
  const [toasts, setToasts] = useState<Toast[]>([]);
  const nextToast = useRef(1);
  const toast = useCallback((text: string, kind: Toast['kind'] = 'info', testid?: string) => {
    const id = nextToast.current++;
    setToasts((list) => [...list.slice(-3), { id, kind, text, testid }]);
    setTimeout(() => setToasts((list) => list.filter((t) => t.id !== id)), kind === 'error' ? 8000 : 3500);
  }, []);
  const services = useMemo<EditorServices>(() => ({ ...props, toast }), [props, toast]);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    localStorage.setItem('switchboard:theme', theme);
  }, [theme]);
  // Autosave: the serialized flow goes to localStorage shortly after each edit.
  const { store, drafts } = props;
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = store.onDocChange(() => {
      clearTimeout(timer);
      timer = setTimeout(
        () =>
          void store.settledText().then((text) => {
            if (text !== undefined) drafts.save(text);
          }),
        300,
      );
    });
    const flush = () => drafts.save(store.serialize());
    window.addEventListener('pagehide', flush);
    return () => {
      off();
      clearTimeout(timer);
      window.removeEventListener('pagehide', flush);
    };
  }, [store, drafts]);
  const sel = useSyncExternalStore(store.subscribe, store.getSelection);
  // The side panel shows what is selected; with nothing selected it is a narrow rail that opens
  // the flow's settings on demand, so that the canvas gets the room.
  const selected = sel.nodes.length + sel.edges.length > 0;
  const [settingsOpen, setSettingsOpen] = useState(false);
  const sideOpen = selected || settingsOpen;
  const [following, setFollowing] = useState<number | undefined>();
  const follow = useMemo<FollowState>(() => ({ following, setFollowing }), [following]);
  return (
    <EditorContext.Provider value={services}>
      <FollowContext.Provider value={follow}>
        <ReactFlowProvider>
          <div className="sb-app" data-testid="editor">
            <Toolbar theme={theme} setTheme={setTheme} open={setDialog} />
            <RoomClosedBanner saveAs={() => setDialog('save-as')} />
            <StorageBanner />
            <div className="sb-main">
              <Palette />
              <div className="sb-center">
                <Canvas colorMode={theme} />
                <RunPanel />
              </div>
              <aside
                className={`sb-side${sideOpen ? '' : ' sb-side-collapsed'}`}
                aria-label={selected ? 'Inspector' : 'Flow settings'}
                data-testid="side-panel"
                data-open={sideOpen}
              >
                {!selected && (
                  <button
                    type="button"
                    className="sb-side-toggle"
                    data-testid="btn-flow-settings"
                    aria-expanded={settingsOpen}
                    title={
                      settingsOpen
                        ? 'Hide the flow settings'
                        : 'Show the flow settings (name, models, servers)'
                    }
                    onClick={() => setSettingsOpen(!settingsOpen)}
                  >
                    {settingsOpen ? 'Flow settings ▸' : '◂ Flow settings'}
                  </button>
                )}
                {props.runs && sel.nodes.length === 1 && sel.edges.length === 0 && (
                  <Suspense fallback={null}>
                    <TracePanel runs={props.runs} nodeId={sel.nodes[0]!} />
                  </Suspense>
                )}
                {sideOpen && <Inspector />}
              </aside>
            </div>
            <Problems />
            <Shortcuts open={setDialog} dialog={dialog} />
            {dialog === 'welcome' && <Gallery welcome onClose={() => setDialog(undefined)} />}
            {dialog === 'gallery' && <Gallery onClose={() => setDialog(undefined)} />}
            {dialog === 'paste' && <PasteDialog onClose={() => setDialog(undefined)} />}
            {dialog === 'help' && <HelpDialog onClose={() => setDialog(undefined)} />}
            {dialog === 'save-as' && <SaveAsDialog onClose={() => setDialog(undefined)} />}
            {dialog === 'delete' && <DeleteDialog onClose={() => setDialog(undefined)} />}
            <Toasts toasts={toasts} />
          </div>
        </ReactFlowProvider>
      </FollowContext.Provider>
    </EditorContext.Provider>
  );
}
