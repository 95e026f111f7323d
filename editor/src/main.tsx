import '@xyflow/react/dist/style.css';
import './styles.css';
import { defaultRegistry } from '@switchboard/nodes/core';
import { StrictMode } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { Collab, ROOM_RE } from './collab/collab.js';
import { loadIdentity } from './collab/identity.js';
import { watchAccess } from './model/accessWatch.js';
import { FlowApi } from './model/api.js';
import { DraftStore } from './model/persist.js';
import { templates } from './model/templates.js';
import { adoptToken, TokenStore } from './model/token.js';
import { RunSession } from './run/runSession.js';
import { EditorStore } from './store/editorStore.js';
import { App } from './ui/App.js';
import { blankFlow, uniqueUntitledId } from './ui/actions.js';
import { BENCH_MODE } from './ui/bench.js';
import { TokenPrompt, type TokenReason } from './ui/TokenPrompt.js';

function parseOr(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    // A draft from an older editor that no longer parses: start fresh rather than fail.
    return undefined;
  }
}

const idOf = (v: unknown) => (v && typeof v === 'object' ? (v as { id?: unknown }).id : undefined);

/**
 * The flow to start with when served: `?flow=<id>` names a co-editing room (the shared link);
 * until the room answers it shows the draft of that flow, the server's copy, the template of
 * that name or a blank flow with that id. Without it, the draft or a new flow.
 */
async function firstFlow(api: FlowApi, draft: unknown, wanted: string | null): Promise<unknown> {
  if (!wanted || !ROOM_RE.test(wanted)) {
    // A draft from offline work is still called `untitled`: a room of its own, not everyone's.
    if (idOf(draft) === 'untitled') return { ...(draft as object), id: uniqueUntitledId() };
    return draft ?? blankFlow(uniqueUntitledId());
  }
  if (idOf(draft) === wanted) return draft;
  try {
    // Listed first, so that a flow the server does not have costs no failed request.
    if ((await api.list()).some((f) => f.id === wanted)) return JSON.parse(await api.get(wanted));
  } catch {
    // Not readable from the server: fall back to a template or a blank flow.
  }
  const t = templates().find((x) => x.file === wanted && !x.problem);
  const fromTemplate = parseOr(t?.text);
  if (idOf(fromTemplate) === wanted) return fromTemplate;
  return blankFlow(wanted);
}

/** A server that wants a token this editor lacks: ask for it instead of showing a broken editor. */
function askForToken(root: Root, reason: TokenReason, tokens: TokenStore): void {
  root.render(
    <StrictMode>
      <TokenPrompt
        reason={reason}
        check={(t) => new FlowApi(location.origin, t).access()}
        onAccepted={(t) => {
          tokens.set(t);
          // A fresh start with the token, on the same address (the room in `?flow=` included).
          location.reload();
        }}
      />
    </StrictMode>,
  );
}

async function boot() {
  const root = createRoot(document.getElementById('root')!);
  const tokens = new TokenStore(window.localStorage);
  // Taken from `?token=` (the address `switchboard serve` printed), kept, and removed from the
  // address bar before anything else can read or share the address.
  const token = adoptToken(tokens);
  // Writes name their author: this browser's display name (presence), read as it is now.
  const candidate = new FlowApi(
    location.origin,
    token,
    undefined,
    () => loadIdentity(window.localStorage).name,
  );
  const access = location.protocol.startsWith('http') ? await candidate.access() : 'absent';
  if (access === 'unauthorized' || access === 'rate-limited') {
    askForToken(root, access === 'rate-limited' ? 'rate-limited' : token ? 'refused' : 'missing', tokens);
    return;
  }
  const api = access === 'ok' ? candidate : undefined;
  const store = new EditorStore({
    registry: defaultRegistry,
    validationWorker: () =>
      new Worker(new URL('./store/validate.worker.ts', import.meta.url), { type: 'module' }),
  });
  const drafts = new DraftStore(window.localStorage);
  const draft = parseOr(drafts.load());

  let runs: RunSession | undefined;
  let collab: Collab | undefined;
  if (api) {
    const session = new RunSession({ api, store });
    runs = session;
    session.start();
    collab = new Collab({
      store,
      url: api.wsUrl('/api/yjs'),
      protocols: api.wsProtocols(),
      identity: loadIdentity(window.localStorage),
      onRoom(room) {
        // The address names the room, so it can be shared and reloaded.
        const q = new URLSearchParams(location.search);
        if (room) q.set('flow', room);
        else q.delete('flow');
        const search = q.toString();
        history.replaceState(null, '', `${location.pathname}${search ? `?${search}` : ''}`);
      },
    });
    // Runs are watched by the flow's id as the document says it now (runs carry that id), so
    // a renamed flow's runs still reach everyone editing it; renames settle before switching.
    const watchDocId = () => {
      const id = store.meta('id');
      if (typeof id === 'string' && id) void session.watchFlow(id);
    };
    let idTimer: ReturnType<typeof setTimeout> | undefined;
    store.onDocChange(() => {
      clearTimeout(idTimer);
      idTimer = setTimeout(watchDocId, 400);
    });
    store.onLoad(watchDocId);
    // The server restarted with another token: stop retrying (the retries would lock this address
    // out) and ask for the new one; the room was saved on the server, the draft in this browser.
    const live = collab;
    watchAccess({
      connections: [
        { subscribe: session.subscribe, down: () => session.getSnapshot().connection === 'closed' },
        { subscribe: live.subscribe, down: () => live.getSnapshot().status === 'offline' },
      ],
      check: () => api.access(),
      onRefused(why) {
        live.dispose();
        session.stop();
        askForToken(root, why === 'rate-limited' ? 'rate-limited' : 'refused', tokens);
      },
    });
    const start = await firstFlow(api, draft, new URLSearchParams(location.search).get('flow'));
    try {
      collab.open(start);
    } catch {
      collab.open(blankFlow(uniqueUntitledId()));
    }
    if (start !== draft) drafts.markSaved(store.serialize());
  } else {
    let restored = false;
    if (draft !== undefined) {
      try {
        store.load(draft);
        restored = true;
      } catch {
        // A draft the editor cannot hold: start fresh.
      }
    }
    if (!restored) {
      store.load(blankFlow());
      drafts.markSaved(store.serialize());
    }
  }
  if (BENCH_MODE)
    window.__SB__ = {
      store,
      runState: store.runState,
      runs,
      collab,
      load(text: string) {
        store.load(JSON.parse(text));
      },
      serialize: () => store.serialize(),
    };
  root.render(
    <StrictMode>
      <App store={store} drafts={drafts} api={api} runs={runs} collab={collab} />
    </StrictMode>,
  );
}

void boot();
