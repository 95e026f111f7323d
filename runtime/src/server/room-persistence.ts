/**
 * Co-editing rooms and the catalog, kept in step.
 *
 * - A room opens on the catalog's flow (continuing its saved Yjs history when there is one).
 * - A room is saved back when its document changed, holds a valid flow (the one validator, as
 *   for REST writes) whose id is the room's name: as the next revision of that flow. An invalid
 *   document stays in the room, unsaved, and is saved once it is valid again; a flow is never
 *   half-saved.
 * - Opening saves nothing: a room whose flow the catalog does not hold yet (a template, a new
 *   flow) is saved from its first change on, not for being seeded.
 * - REST writes win and are shown: a write to a flow whose room is open first saves the room's
 *   pending changes (so `If-Match` compares against what the editors see), then lands in the
 *   room as the smallest change, for everyone in it.
 * What the last save attempt found is published in the room (the server's awareness state,
 * `RoomSaveStatus`), so editors can tell "saved", "not saved: invalid" and "not looked at yet".
 * Saving a room approves nothing: stdio commands a saved flow names still wait for the local
 * operator's consent (`switchboard trust`), as for any flow that arrived through the API.
 */
import { defaultRegistry, validate } from '@switchboard/nodes';
import { type Flow, serializeFlow } from '@switchboard/schemas';
import {
  applyFlowToDoc,
  configLayout,
  docToFlow,
  flowTextHash,
  isEmptyFlowDoc,
  LOAD,
  ROOM_STATUS_FIELD,
  type RoomSaveStatus,
  seedDoc,
} from '@switchboard/schemas/ydoc';
import type { FastifyBaseLogger } from 'fastify';
import * as Y from 'yjs';
import type { FlowTombstone } from '../store/catalog.js';
import { deletedCloseReason, ROOM_DELETED_CLOSE } from './flow-lifecycle.js';
import type { FlowRecords } from './flow-records.js';
import type { RoomStates } from './room-states.js';
import type { RoomHooks, YjsRooms } from './yjs-room.js';

/** Transaction origin of a REST write applied into an open room. */
export const REST_WRITE = Symbol('switchboard-rest-write');

interface DocState {
  /** The document's flow text as last saved, loaded or seeded; a save writes only when it differs. */
  baseline?: string;
  status?: RoomSaveStatus;
}

/** The REST routes' view of the rooms (see routes-flows.ts). */
export interface FlowRoomLink {
  /** Saves the open room's pending changes first, so that reads and `If-Match` see them. */
  settle(id: string): Promise<void>;
  /** A flow was written through the API: show it in its open room. */
  stored(flow: Flow): Promise<void>;
  /** A flow was deleted through the API: its room closes for everyone, its history goes. */
  deleted(id: string, tomb: FlowTombstone): Promise<void>;
  /** Whether a room of that name is open (a flow being edited that may not be saved yet). */
  isOpen(id: string): boolean;
}

/** The built-in kinds' schemas decide the layout (as in the editor, which uses the same registry). */
const LAYOUT = configLayout(defaultRegistry);
const docText = (doc: Y.Doc) => serializeFlow(docToFlow(doc, LAYOUT));

export type { RoomSaveStatus };

/** Where rooms' Yjs histories are kept: files (room-states.ts), or Redis when scaled out. */
export type RoomHistory = Pick<RoomStates, 'read' | 'write' | 'remove' | 'file'>;

export class RoomPersistence implements FlowRoomLink {
  private readonly docs = new WeakMap<Y.Doc, DocState>();
  private rooms: YjsRooms | undefined;

  constructor(
    private readonly records: FlowRecords,
    private readonly states: RoomHistory,
    private readonly log: FastifyBaseLogger,
    /** The store's health, told of a room file that could not be written. */
    private readonly health?: { report(e: unknown, path?: string): unknown },
  ) {}

  /** The hooks a `YjsRooms` needs; `attach` gives this the rooms it serves. */
  hooks(options: Omit<RoomHooks, 'load' | 'save' | 'onError'> = {}): RoomHooks {
    return {
      ...options,
      load: (name, doc) => this.load(name, doc),
      save: (name, doc) => this.save(name, doc),
      onError: (name, op, err) => this.log.error({ err, room: name }, `co-editing room ${op} failed`),
    };
  }

  attach(rooms: YjsRooms): void {
    this.rooms = rooms;
  }

  /** What the last save attempt of an open room did (tests, diagnostics). */
  statusOf(name: string): RoomSaveStatus | undefined {
    const doc = this.rooms?.docOf(name);
    return doc ? this.docs.get(doc)?.status : undefined;
  }

  private stateOf(doc: Y.Doc): DocState {
    let st = this.docs.get(doc);
    if (!st) {
      st = {};
      this.docs.set(doc, st);
    }
    return st;
  }

  /** Records what was found about the document whose flow text is `text`, and tells the room. */
  private report(name: string, doc: Y.Doc, status: RoomSaveStatus, text?: string): void {
    const full = text === undefined ? status : { ...status, hash: flowTextHash(text) };
    this.stateOf(doc).status = full;
    this.rooms?.announce(name, doc, { [ROOM_STATUS_FIELD]: full });
  }

  async load(name: string, doc: Y.Doc): Promise<void> {
    const st = this.stateOf(doc);
    const history = this.records.get(name) ? await this.readHistory(name) : undefined;
    // Read after the await: a REST write or delete may have happened meanwhile.
    const rec = this.records.get(name);
    if (!rec) {
      // Nothing saved: the first editor seeds the room, and that seed is not a change.
      // (Runs inside a client's update: it must not throw, or that client is dropped.)
      const seeded = () => {
        try {
          if (st.baseline === undefined && !isEmptyFlowDoc(doc)) {
            st.baseline = docText(doc);
            this.report(name, doc, { state: 'unchanged' }, st.baseline);
          }
        } catch {
          // Not a document this server can read yet; the next update may be.
        }
        if (st.baseline !== undefined) doc.off('update', seeded);
      };
      doc.on('update', seeded);
      return;
    }
    if (history) Y.applyUpdate(doc, history, LOAD);
    // No history: the deterministic seed, the same items as any earlier seed of this flow, so an
    // editor that kept the document through a restart merges its offline edits into it.
    else seedDoc(doc, rec.flow, LAYOUT, LOAD);
    // The catalog is the truth: a REST write made while the room was closed lands as a change;
    // a history in the old layout is converted. Either change is made by this server's random
    // client id, so it is written to the history before anyone sees it: the next load must
    // continue these items, not make other ones.
    let changed = false;
    const mark = () => {
      changed = true;
    };
    // (A fresh seed is the catalog's flow already.)
    if (history) {
      doc.on('update', mark);
      try {
        applyFlowToDoc(doc, rec.flow, LAYOUT, LOAD);
      } finally {
        doc.off('update', mark);
      }
    }
    if (changed) await this.writeHistory(name, Y.encodeStateAsUpdate(doc));
    st.baseline = docText(doc);
    this.report(name, doc, { state: 'unchanged', rev: rec.rev }, st.baseline);
  }

  /** The saved Yjs history, if it is there and readable; otherwise the room starts afresh. */
  private async readHistory(name: string): Promise<Uint8Array | undefined> {
    try {
      const bytes = await this.states.read(name);
      if (!bytes) return undefined;
      // Decoded into a scratch document first: a damaged file must not leave half an update.
      const scratch = new Y.Doc();
      try {
        Y.applyUpdate(scratch, bytes);
      } finally {
        scratch.destroy();
      }
      return bytes;
    } catch (err) {
      this.log.warn(
        { err, file: this.states.file(name) },
        'unreadable co-editing history; the room starts from the saved flow',
      );
      return undefined;
    }
  }

  async save(name: string, doc: Y.Doc): Promise<void> {
    const st = this.stateOf(doc);
    if (isEmptyFlowDoc(doc)) return this.report(name, doc, { state: 'empty' });
    let flow: Flow;
    let text: string;
    try {
      flow = docToFlow(doc, LAYOUT);
      text = serializeFlow(flow);
    } catch {
      // A peer wrote something that is not a flow at all: nothing to save.
      return this.report(name, doc, { state: 'invalid', errors: 1 });
    }
    // A deleted flow never comes back from a room (its room is closed; a straggler's save is dropped).
    if (this.records.deleted(name)) return;
    const cur = this.records.get(name);
    if (st.baseline === undefined || text === st.baseline) {
      st.baseline ??= text;
      return this.report(name, doc, { state: 'unchanged', rev: cur?.rev }, text);
    }
    if (flow.id !== name) return this.report(name, doc, { state: 'id-mismatch' }, text);
    const v = validate(flow);
    if (!v.ok || !v.flow) {
      this.log.debug({ room: name, problems: v.errors.length }, 'co-editing room not saved: invalid flow');
      return this.report(name, doc, { state: 'invalid', errors: v.errors.length }, text);
    }
    // Taken before any await: the history written is the one of the flow written.
    const history = Y.encodeStateAsUpdate(doc);
    if (cur && serializeFlow(cur.flow) === serializeFlow(v.flow)) {
      st.baseline = text;
      return this.report(name, doc, { state: 'unchanged', rev: cur.rev }, text);
    }
    const { rec } = await this.records.put(v.flow, 'upsert', {
      by: this.rooms?.lastEditorName(name),
      source: 'room',
    });
    st.baseline = text;
    this.report(name, doc, { state: 'saved', rev: rec.rev }, text);
    await this.writeHistory(name, history);
  }

  /** The history is a convenience (see room-states.ts): failing to write it fails no save. */
  private async writeHistory(name: string, history: Uint8Array): Promise<void> {
    try {
      await this.states.write(name, history);
    } catch (err) {
      this.health?.report(err, this.states.file(name));
      this.log.warn({ err, room: name }, 'co-editing history not written; the flow itself is saved');
    }
  }

  async settle(id: string): Promise<void> {
    if (this.settleWith) return this.settleWith(id);
    await this.rooms?.flush(id);
  }

  /** Scaled out, settling asks the room's owner (redis/room-relay.ts); `settled` tells when done. */
  settleWith: ((id: string) => Promise<void>) | undefined;

  /**
   * Whether the catalog holds what the room's document holds, or there is nothing to wait for
   * (empty, not a flow, not valid, not this flow, or never saved).
   */
  settled(name: string, doc: Y.Doc): boolean {
    if (isEmptyFlowDoc(doc)) return true;
    let flow: Flow;
    try {
      flow = docToFlow(doc, LAYOUT);
    } catch {
      return true;
    }
    const cur = this.records.get(name);
    if (!cur || flow.id !== name) return true;
    const v = validate(flow);
    return !v.ok || !v.flow || serializeFlow(cur.flow) === serializeFlow(v.flow);
  }

  async stored(flow: Flow): Promise<void> {
    const doc = await this.rooms?.loaded(flow.id).catch(() => undefined);
    if (!doc) return;
    applyFlowToDoc(doc, flow, LAYOUT, REST_WRITE);
    const st = this.stateOf(doc);
    st.baseline = docText(doc);
    this.report(flow.id, doc, { state: 'unchanged', rev: this.records.get(flow.id)?.rev }, st.baseline);
    await this.writeHistory(flow.id, Y.encodeStateAsUpdate(doc));
  }

  async deleted(id: string, tomb: FlowTombstone): Promise<void> {
    // Closed first: nobody keeps editing (and seeding) a room whose flow is gone.
    await this.rooms?.discard(id, ROOM_DELETED_CLOSE, deletedCloseReason(tomb));
    await this.states
      .remove(id)
      .catch((err) => this.log.warn({ err, room: id }, 'co-editing history not removed'));
  }

  isOpen(id: string): boolean {
    return this.rooms?.docOf(id) !== undefined;
  }
}
