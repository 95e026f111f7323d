/**
 * Co-editing through `switchboard serve`: the flow on the canvas lives in the server's Yjs room
 * named after its id (`/api/yjs/<flow id>`, y-protocols sync and awareness over y-websocket).
 *
 * Opening a flow joins its room with a fresh Y.Doc (two documents with separate histories
 * cannot be merged without duplicating or losing entries). Until the room answers, the flow
 * shows from a local copy; then either the room already holds the flow — the server opens a
 * room on the flow saved in its catalog, and someone may be editing it — and the canvas
 * switches to that version, or the room is empty (a flow the server does not have) and is
 * seeded with the local copy (edits made meanwhile included), by the deterministic seed of
 * `seedDoc`, so that two editors seeding the same flow make the same Yjs items. The server saves the room back
 * to its catalog as it changes. Re-opening a flow with the id of the room the editor is in
 * replaces the shared document, for everyone, as one change.
 *
 * Awareness carries each editor's name, colour and selected nodes; `EditorStore.presence`
 * gets, per node, who else has it selected, so only those node faces re-render.
 */

import { MAX_ID_LENGTH } from '@switchboard/schemas/core';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import {
  assertRepresentable,
  isEmptyFlowDoc,
  ROOM_STATUS_FIELD,
  type RoomSaveStatus,
  readRoomStatus,
  seedDoc,
} from '../model/flowDoc.js';
import type { EditorStore } from '../store/editorStore.js';
import { assignColors, type Identity, isIdentity } from './identity.js';
import { CURSOR_FIELD, type FlowPoint, type FlowView, readCursor, readView, VIEW_FIELD } from './pointers.js';

/** Close code of a room refusing a change (room-limits.ts on the server). */
const ROOM_REFUSED = 4413;

/** Room names the server accepts (the flow-id pattern of its route). */
export const ROOM_RE = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/;

export interface Peer {
  clientId: number;
  name: string;
  color: string;
  selection: string[];
  self: boolean;
  /** Their pointer on the canvas, in flow coordinates (pointers.ts). */
  cursor?: FlowPoint;
  /** What their canvas shows: its centre in flow coordinates and their zoom. */
  view?: FlowView;
}

/** The server closed the room for good (y-websocket stops reconnecting), e.g. its flow was deleted. */
export interface RoomClosed {
  room: string;
  code: number;
  reason: string;
}

export interface CollabSnapshot {
  /** The room the editor is in (the flow id), if any. */
  room?: string;
  /** `connecting` until the room answered once; `live` while connected; `offline` after. */
  status: 'none' | 'connecting' | 'live' | 'offline';
  peers: Peer[];
  /** How the last room was joined (set once the room answered). */
  joined?: JoinInfo;
  /** What the server last found when saving the room (its own awareness state). */
  saving?: RoomSaveStatus;
  /** Set when the server closed the room for good; the canvas keeps what it showed, unshared. */
  closed?: RoomClosed;
  /**
   * Why the room refused this editor's changes (the document would pass its size limit; the
   * server's words). The editor then stops reconnecting: it would send the same change again.
   */
  refused?: string;
}

export interface JoinInfo {
  room: string;
  /** The room held the flow already: the canvas now shows the live version. */
  adopted: boolean;
  /** Other editors in the room at that moment. */
  others: number;
}

export interface CollabOptions {
  store: EditorStore;
  /** `ws://host/api/yjs` (no trailing slash). */
  url: string;
  protocols?: string[];
  identity: Identity;
  /** Called when a room answered for the first time. */
  onJoined?(info: JoinInfo): void;
  /** Called whenever the room changes (including to none). */
  onRoom?(room: string | undefined): void;
  /** A WebSocket constructor (tests in Node). */
  WebSocketPolyfill?: unknown;
}

const MAX_SELECTION = 200;

export class Collab {
  private provider: WebsocketProvider | undefined;
  private snapshot: CollabSnapshot = { status: 'none', peers: [] };
  private readonly listeners = new Set<() => void>();
  private lastSelection: unknown;
  private readonly offStore: () => void;

  constructor(private readonly o: CollabOptions) {
    // Publish this editor's selection when it changes (the store keeps its identity otherwise).
    this.offStore = o.store.subscribe(() => {
      const sel = o.store.getSelection();
      if (sel === this.lastSelection) return;
      this.lastSelection = sel;
      this.provider?.awareness.setLocalStateField('selection', sel.nodes.slice(0, MAX_SELECTION));
    });
  }

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  getSnapshot = (): CollabSnapshot => this.snapshot;

  get room(): string | undefined {
    return this.snapshot.room;
  }

  private update(patch: Partial<CollabSnapshot>): void {
    this.snapshot = { ...this.snapshot, ...patch };
    for (const fn of this.listeners) fn();
  }

  /**
   * Opens `flow` in the room of its id. Throws (changing nothing) when the editor cannot hold
   * it. A flow whose id is no valid room name is edited here only.
   */
  open(flow: unknown): void {
    assertRepresentable(flow);
    const id = (flow as { id?: unknown }).id;
    if (typeof id === 'string' && id === this.room && this.provider) {
      this.o.store.load(flow);
      return;
    }
    this.leave();
    this.o.store.replaceDoc(new Y.Doc());
    this.o.store.load(flow);
    if (typeof id === 'string' && ROOM_RE.test(id)) this.join(id);
  }

  /** Joins room `id` from whatever the canvas shows now (its content seeds an empty room). */
  join(id: string): void {
    this.leave();
    const doc = new Y.Doc();
    const provider = new WebsocketProvider(this.o.url, id, doc, {
      disableBc: true,
      protocols: this.o.protocols ?? [],
      // biome-ignore lint/suspicious/noExplicitAny: y-websocket types the polyfill as the DOM WebSocket
      ...(this.o.WebSocketPolyfill ? { WebSocketPolyfill: this.o.WebSocketPolyfill as any } : {}),
    });
    this.provider = provider;
    const awareness = provider.awareness;
    this.lastSelection = this.o.store.getSelection();
    awareness.setLocalState({ user: this.o.identity, selection: [] });
    let adopted = false;
    provider.on('sync', (synced: boolean) => {
      if (!synced || adopted || this.provider !== provider) return;
      adopted = true;
      const empty = isEmptyFlowDoc(doc);
      // Only a room the server has no flow for is seeded by an editor, and deterministically
      // (see seedDoc): two editors seeding the same flow at once make the same items.
      if (empty) seedDoc(doc, this.o.store.toFlow(), this.o.store.layout);
      this.o.store.replaceDoc(doc);
      const others = [...awareness.getStates()].filter(
        ([clientId, st]) => clientId !== awareness.clientID && isIdentity((st as { user?: unknown }).user),
      ).length;
      const joined = { room: id, adopted: !empty, others };
      this.update({ status: 'live', joined });
      this.o.onJoined?.(joined);
    });
    provider.on('connection-close', (event: { code?: number; reason?: string } | null) => {
      if (this.provider !== provider || event?.code !== ROOM_REFUSED) return;
      provider.disconnect();
      this.update({ status: 'offline', refused: event.reason || 'the room refused this change' });
    });
    provider.on('status', ({ status }: { status: string }) => {
      if (this.provider !== provider || !adopted) return;
      this.update({ status: status === 'connected' ? 'live' : 'offline' });
    });
    awareness.on('change', () => {
      if (this.provider === provider) this.readPeers();
    });
    provider.on('closed', ({ code, reason }: { code: number; reason: string }) => {
      if (this.provider === provider) this.update({ status: 'offline', closed: { room: id, code, reason } });
    });
    this.update({
      room: id,
      status: 'connecting',
      peers: [],
      joined: undefined,
      saving: undefined,
      closed: undefined,
      refused: undefined,
    });
    this.readPeers();
    this.o.onRoom?.(id);
  }

  /** Leaves the room; the canvas keeps the document as it is, edited here only. */
  leave(): void {
    const p = this.provider;
    if (!p) return;
    this.provider = undefined;
    p.awareness.setLocalState(null);
    p.destroy();
    this.o.store.presence.replaceAll(new Map());
    this.update({
      room: undefined,
      status: 'none',
      peers: [],
      joined: undefined,
      saving: undefined,
      closed: undefined,
      refused: undefined,
    });
    this.o.onRoom?.(undefined);
  }

  dispose(): void {
    this.leave();
    this.offStore();
  }

  /** Changes this editor's name or colour for everyone in the room. */
  setIdentity(identity: Identity): void {
    this.o.identity = identity;
    this.provider?.awareness.setLocalStateField('user', identity);
  }

  /** Publishes one field of this editor's awareness state (pointer, view) to the room. */
  setLocalField(field: string, value: unknown): void {
    this.provider?.awareness.setLocalStateField(field, value);
  }

  private readPeers(): void {
    const p = this.provider;
    if (!p) return;
    const self = p.awareness.clientID;
    const peers: Peer[] = [];
    let saving: RoomSaveStatus | undefined;
    for (const [clientId, state] of p.awareness.getStates()) {
      // Awareness comes from other browsers: take only well-formed names, colours and ids.
      const st = state as { user?: unknown; selection?: unknown; [ROOM_STATUS_FIELD]?: unknown };
      // The server's own state says how saving went; it is nobody in the room.
      if (st.user === undefined && st[ROOM_STATUS_FIELD] !== undefined) {
        saving = readRoomStatus(st[ROOM_STATUS_FIELD]) ?? saving;
        continue;
      }
      if (!isIdentity(st.user)) continue;
      const selection = Array.isArray(st.selection)
        ? st.selection
            .filter((x): x is string => typeof x === 'string' && x.length <= MAX_ID_LENGTH)
            .slice(0, MAX_SELECTION)
        : [];
      const s2 = state as { [CURSOR_FIELD]?: unknown; [VIEW_FIELD]?: unknown };
      peers.push({
        clientId,
        name: st.user.name,
        color: st.user.color,
        selection,
        self: clientId === self,
        cursor: readCursor(s2[CURSOR_FIELD]),
        view: readView(s2[VIEW_FIELD]),
      });
    }
    // Colours people tell apart, the same in every browser (identity.ts).
    const colors = assignColors(peers);
    for (const peer of peers) peer.color = colors.get(peer.clientId) ?? peer.color;
    peers.sort((a, b) => (a.self === b.self ? a.clientId - b.clientId : a.self ? -1 : 1));
    const byNode = new Map<string, string[]>();
    for (const peer of peers) {
      if (peer.self) continue;
      for (const id of peer.selection)
        byNode.set(id, [...(byNode.get(id) ?? []), `${peer.name}|${peer.color}`]);
    }
    this.o.store.presence.replaceAll(new Map([...byNode].map(([k, v]) => [k, v.join('\n')])));
    this.update({ peers, saving });
  }
}
