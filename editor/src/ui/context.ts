/** The editor's services, handed to components through React context. */
import { createContext, useContext, useSyncExternalStore } from 'react';
import type { Collab } from '../collab/collab.js';
import type { FlowApi } from '../model/api.js';
import type { DraftStore } from '../model/persist.js';
import type { RunSession } from '../run/runSession.js';
import type { EditorStore } from '../store/editorStore.js';
import type { KeyedStore } from '../store/keyed.js';

export interface Toast {
  id: number;
  kind: 'info' | 'error';
  text: string;
  testid?: string;
}

export interface EditorServices {
  store: EditorStore;
  drafts: DraftStore;
  /** Present when a Switchboard server answered. */
  api: FlowApi | undefined;
  /** Runs on the server; present when a server answered. */
  runs?: RunSession;
  /** Co-editing through the server's Yjs rooms; present when a server answered. */
  collab?: Collab;
  toast(text: string, kind?: Toast['kind'], testid?: string): void;
}

export const EditorContext = createContext<EditorServices | null>(null);

export function useEditor(): EditorServices {
  const s = useContext(EditorContext);
  if (!s) throw new Error('useEditor() outside <EditorContext.Provider>');
  return s;
}

/** One entry of a keyed store; re-renders the caller only when that entry changes. */
export function useKeyed<V>(store: KeyedStore<V>, key: string): V {
  return useSyncExternalStore(
    (fn) => store.subscribe(key, fn),
    () => store.get(key),
  );
}

/** Re-renders on every document change (panels that show flow settings or a selected node). */
export function useDocVersion(store: EditorStore): number {
  return useSyncExternalStore(
    (fn) => store.onDocChange(fn),
    () => store.docVersion,
  );
}
