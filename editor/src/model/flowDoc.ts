/**
 * The flow in a Y.Doc. The layout and its mapping live in `@switchboard/schemas/ydoc`, because
 * the server loads and saves co-editing rooms with the same code; this module adds what only
 * the editor needs.
 */
export * from '@switchboard/schemas/ydoc';

/** Transaction origin of this editor's own edits; the undo manager tracks only these. */
export const LOCAL = Symbol('switchboard-local-edit');
