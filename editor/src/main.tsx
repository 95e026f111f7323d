import '@xyflow/react/dist/style.css';
import './styles.css';
import { defaultRegistry } from '@switchboard/nodes';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { FlowApi, tokenFromHash } from './model/api.js';
import { DraftStore } from './model/persist.js';
import { EditorStore } from './store/editorStore.js';
import { App } from './ui/App.js';
import { blankFlow } from './ui/actions.js';
import { BENCH_MODE } from './ui/bench.js';

async function boot() {
  const store = new EditorStore({ registry: defaultRegistry });
  const drafts = new DraftStore(window.localStorage);
  // The token is read from the fragment and then removed from the address bar.
  const token = tokenFromHash(location.hash);
  if (token) history.replaceState(null, '', location.pathname + location.search);
  const candidate = new FlowApi(location.origin, token);
  const api = location.protocol.startsWith('http') && (await candidate.available()) ? candidate : undefined;

  const draft = drafts.load();
  let restored = false;
  if (draft) {
    try {
      store.load(JSON.parse(draft));
      restored = true;
    } catch {
      // A draft from an older editor that no longer loads: start fresh rather than fail.
    }
  }
  if (!restored) {
    store.load(blankFlow());
    drafts.markSaved(store.serialize());
  }
  if (BENCH_MODE)
    window.__SB__ = {
      store,
      runState: store.runState,
      load(text: string) {
        store.load(JSON.parse(text));
      },
      serialize: () => store.serialize(),
    };
  createRoot(document.getElementById('root')!).render(
    <StrictMode>
      <App store={store} drafts={drafts} api={api} />
    </StrictMode>,
  );
}

void boot();
