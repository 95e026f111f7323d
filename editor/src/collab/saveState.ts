/**
 * What the toolbar says about saving while the flow is in a live room: the server saves rooms by
 * itself, so "unsaved changes" (this browser's notion, for offline work) would be wrong there.
 * Decided from the server's last status (`RoomSaveStatus`) and whether it is about the document
 * shown now (same flow text hash); pure, so the rule is testable without a browser.
 */
import { flowTextHash, type RoomSaveStatus } from '../model/flowDoc.js';

export interface RoomSaveView {
  /**
   * `saved`, `pending` (changes the server has not looked at yet), `new`, `invalid`, `renamed`,
   * `empty`, `refused` (the room refused a change: its document would pass the size limit).
   */
  kind: 'saved' | 'pending' | 'new' | 'invalid' | 'renamed' | 'empty' | 'refused';
  label: string;
  title: string;
  /** Whether what is shown is stored on the server. */
  saved: boolean;
}

/**
 * @param text the document shown, serialized; undefined while it changed since it was last
 *   serialized (the toolbar serializes a moment after typing stops, not on every key): the
 *   server cannot have saved it yet either.
 */
export function roomSaveView(
  status: RoomSaveStatus | undefined,
  text: string | undefined,
  refused?: string,
): RoomSaveView | undefined {
  if (refused)
    return {
      kind: 'refused',
      label: 'not saved: refused by the server',
      title: `${refused}. Undo the last change (or export the flow) and reload to rejoin.`,
      saved: false,
    };
  if (!status) return undefined;
  if (text === undefined || (status.hash !== undefined && status.hash !== flowTextHash(text)))
    return {
      kind: 'pending',
      label: 'saving…',
      title: 'Co-edited flows are saved on the server a moment after the last change',
      saved: false,
    };
  switch (status.state) {
    case 'saved':
    case 'unchanged':
      return status.rev
        ? {
            kind: 'saved',
            label: 'saved',
            title: `Saved on the server (revision ${status.rev}); changes are saved as you go`,
            saved: true,
          }
        : {
            kind: 'new',
            label: 'not on the server yet',
            title: 'Opened, not changed: the server stores it from the first change (or press Save)',
            saved: false,
          };
    case 'invalid': {
      const n = status.errors ?? 0;
      return {
        kind: 'invalid',
        label: `not saved: ${n} problem${n === 1 ? '' : 's'}`,
        title: 'The server keeps the last valid version and saves this once its problems are fixed',
        saved: false,
      };
    }
    case 'id-mismatch':
      return {
        kind: 'renamed',
        label: 'not saved: new id',
        title: 'The flow’s id is no longer this room’s: press Save to store it under the new id',
        saved: false,
      };
    default:
      return { kind: 'empty', label: 'empty', title: 'The room holds no flow', saved: false };
  }
}
