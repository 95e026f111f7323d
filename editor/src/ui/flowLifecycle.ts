/**
 * A flow's life on the server, as the editor drives it: new flows from read-only templates,
 * "save as" (a copy under a new id, and the editor moves there with the address bar), delete
 * (closes the room for everyone; the server says who did it).
 */
import type { Flow } from '@switchboard/schemas';
import { ROOM_RE } from '../collab/collab.js';
import { openText } from './actions.js';
import type { EditorServices } from './context.js';

/** The close code of a room whose flow was deleted (runtime/src/server/flow-lifecycle.ts). */
export const ROOM_DELETED_CLOSE = 4410;

/** Who deleted the flow, from the room's close reason (`deleted by <name>`). */
export function deletedBy(reason: string): string | undefined {
  const m = /^deleted by (.+)$/s.exec(reason);
  return m?.[1];
}

/**
 * "New from template": served, the server copies the example into a new flow with its own id
 * and the editor opens that (so nobody edits the example itself); offline, the template opens
 * in this editor only.
 */
export async function newFromTemplate(s: EditorServices, file: string, text: string): Promise<boolean> {
  if (!s.api || !s.collab) return openText(s, text, `${file}.json`);
  try {
    const id = await s.api.fromTemplate(file);
    return openText(s, await s.api.get(id), `a new flow from ${file} (${id})`);
  } catch (e) {
    s.toast((e as Error).message, 'error', 'open-error');
    return false;
  }
}

/** A suggestion for a copy's id: `<id>-copy`, `<id>-copy-2`, … not in `taken`. */
export function copyId(id: string, taken: ReadonlySet<string>): string {
  const base = `${id.replace(/-copy(-\d+)?$/, '')}-copy`.slice(0, 120);
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}

/**
 * Saves what the canvas shows as a new flow `id` (refused if the id is taken) and moves there:
 * the editor joins the copy's room and the address names it. The flow left behind is unchanged.
 */
export async function saveAsCopy(s: EditorServices, id: string, name: string): Promise<boolean> {
  if (!s.api) {
    s.toast('No Switchboard server answered: use Export to keep a copy', 'error', 'save-error');
    return false;
  }
  if (!ROOM_RE.test(id)) {
    s.toast(
      `"${id}" cannot be a flow id: letters, digits, _ . : - (not first), at most 128`,
      'error',
      'save-error',
    );
    return false;
  }
  const copy: Flow = { ...s.store.toFlow(), id, name };
  try {
    await s.api.create(copy);
  } catch (e) {
    s.toast((e as Error).message, 'error', 'save-error');
    return false;
  }
  moveTo(s, copy);
  s.toast(`Saved a copy as ${id}: you are editing the copy`, 'info', 'saved-as');
  return true;
}

/** Opens a flow the server has just stored (its room loads it) and marks it saved here. */
function moveTo(s: EditorServices, flow: Flow): void {
  if (s.collab) s.collab.open(flow);
  else s.store.load(flow);
  s.drafts.markSaved(s.store.serialize());
}

/**
 * Save with an id other than the room's (someone changed the id in Flow settings): a "save as".
 * The copy is stored under the new id, the flow left behind gets its id back (for the others
 * still in its room), and this editor moves to the copy.
 */
export async function saveUnderNewId(s: EditorServices, room: string): Promise<boolean> {
  const flow = s.store.toFlow();
  const r = await s.api!.save(flow, s.store.serialize());
  if (!r.ok) {
    if (r.errors.length) s.store.setProblems({ errors: r.errors, warnings: [] });
    s.toast(r.message, 'error', 'save-error');
    return false;
  }
  s.store.setMeta('id', room);
  moveTo(s, flow);
  s.toast(`Saved as ${flow.id}: you are editing it now (${room} is unchanged)`, 'info', 'saved');
  return true;
}

/** Flows this editor deleted (names may repeat across people; this says "you" for sure). */
export const deletedHere = new Set<string>();

/** Deletes flow `id` on the server; its room closes for everyone in it (this editor too). */
export async function deleteFlow(s: EditorServices, id: string): Promise<boolean> {
  if (!s.api) return false;
  try {
    deletedHere.add(id);
    await s.api.remove(id);
    s.toast(`Deleted ${id}`, 'info', 'deleted');
    return true;
  } catch (e) {
    s.toast((e as Error).message, 'error', 'delete-error');
    return false;
  }
}
