/** What toolbar buttons and shortcuts do: open, export, copy, save, lay out, start anew. */
import { type Flow, parseFlowText } from '@switchboard/schemas/core';
import { isPlainObject, UnrepresentableFlowError } from '../model/flowDoc.js';
import { autoLayout } from '../model/layout.js';
import type { EditorServices } from './context.js';
import { saveUnderNewId } from './flowLifecycle.js';

/**
 * A new flow: a start, an end and one scripted model, so it runs without an API key. Served by
 * a server, a new flow gets an id of its own (`untitled-k3x9`): the id names the co-editing
 * room, and two people starting a flow each must not land in one room.
 */
export function blankFlow(id = 'untitled'): Flow {
  return {
    $schema: '../schemas/flow.schema.json',
    version: 1,
    id,
    name: 'Untitled flow',
    models: { default: { provider: 'scripted' } },
    nodes: [
      { id: 'start', kind: 'start', position: { x: 0, y: 160 }, config: {} },
      { id: 'end', kind: 'end', position: { x: 960, y: 160 }, config: { output: 'last' } },
    ],
    edges: [],
  };
}

/** An id for a new flow on a server: `untitled-` and four random letters or digits. */
export function uniqueUntitledId(): string {
  const a = new Uint8Array(4);
  crypto.getRandomValues(a);
  return `untitled-${[...a].map((b) => 'abcdefghijkmnpqrstuvwxyz23456789'[b % 32]).join('')}`;
}

/** Puts a flow on the canvas: into its co-editing room when served, else into this editor only. */
export function openFlow(s: EditorServices, flow: unknown): void {
  if (s.collab) s.collab.open(flow);
  else s.store.load(flow);
}

/**
 * Opens flow text (a file, the clipboard, a template, the server). Bounded parsing first; a
 * document the canvas cannot hold is refused with the reason, anything else opens and the
 * validator lists what is wrong with it.
 */
export function openText(s: EditorServices, text: string, source: string): boolean {
  const parsed = parseFlowText(text);
  if (!parsed.ok) {
    s.store.setProblems({ errors: parsed.errors, warnings: parsed.warnings });
    s.toast(`Cannot open ${source}: ${parsed.errors[0]?.message ?? 'not a flow'}`, 'error', 'open-error');
    return false;
  }
  if (isPlainObject(parsed.value) && parsed.value.switchboardFragment === 1) {
    s.toast(`${source} holds copied nodes, not a flow: paste them with Ctrl+V`, 'error', 'open-error');
    return false;
  }
  try {
    openFlow(s, parsed.value);
  } catch (e) {
    const why = e instanceof UnrepresentableFlowError ? e.message : String(e);
    s.toast(`Cannot open ${source}: ${why}`, 'error', 'open-error');
    return false;
  }
  s.drafts.markSaved(s.store.serialize());
  const n = s.store.problems.errors.length;
  s.toast(`Opened ${source}${n ? ` — ${n} problem${n === 1 ? '' : 's'} to fix` : ''}`);
  return true;
}

export function newFlow(s: EditorServices): void {
  openFlow(s, blankFlow(s.collab ? uniqueUntitledId() : 'untitled'));
  s.drafts.markSaved(s.store.serialize());
}

function fileName(flowId: unknown): string {
  const id = typeof flowId === 'string' && /^[A-Za-z0-9_.:-]+$/.test(flowId) ? flowId : 'flow';
  return `${id.replace(/:/g, '-')}.json`;
}

/** Downloads the flow as `<id>.json`, written by `serializeFlow`. */
export function exportFile(s: EditorServices): void {
  const text = s.store.serialize();
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = fileName(s.store.meta('id'));
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  s.drafts.markSaved(text);
  s.toast(`Exported ${a.download}`);
}

export async function copyJson(s: EditorServices): Promise<void> {
  try {
    await navigator.clipboard.writeText(s.store.serialize());
    s.toast('Flow JSON copied to the clipboard');
  } catch {
    s.toast('The browser refused clipboard access; use Export instead', 'error');
  }
}

export async function saveToServer(s: EditorServices): Promise<void> {
  if (!s.api) {
    s.toast(
      'No Switchboard server answered: your work is kept in this browser; use Export to save a file',
      'error',
      'save-offline',
    );
    return;
  }
  const flow = s.store.toFlow();
  const text = s.store.serialize();
  const room = s.collab?.room;
  const closed = s.collab?.getSnapshot().closed;
  if (closed) {
    // Saving under the deleted id would bring back what someone deleted: a copy is the way.
    s.toast(`${closed.room} is closed (${closed.reason}): use "Save as a copy"`, 'error', 'save-error');
    return;
  }
  try {
    // The id was changed in this room: that is a "save as" (flowLifecycle.ts), and the editor moves.
    if (room && flow.id !== room) {
      await saveUnderNewId(s, room);
      return;
    }
    const r = await s.api.save(flow, text);
    if (r.ok) {
      s.drafts.markSaved(text);
      s.toast(`Saved ${flow.id} to the server`, 'info', 'saved');
    } else {
      if (r.errors.length) s.store.setProblems({ errors: r.errors, warnings: [] });
      s.toast(r.message, 'error', 'save-error');
    }
  } catch (e) {
    s.toast(`Saving failed: ${(e as Error).message}`, 'error', 'save-error');
  }
}

export async function layout(s: EditorServices): Promise<void> {
  const { store } = s;
  try {
    const boxes = await autoLayout({
      flow: store.toFlow(),
      sizeOf: (id) => store.sizeOf(id),
      isGroup: (id) => !!store.kindOf(id)?.display.group,
    });
    store.applyLayout(boxes);
  } catch (e) {
    s.toast(`Auto-layout failed: ${(e as Error).message}`, 'error');
  }
}
