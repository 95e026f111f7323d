/**
 * The limits every entry point shares: the REST API, co-editing rooms, the CLI (`validate`, `run`,
 * `mcp`), the editor's import and the HTTP router all read these, so a flow or an id one of them
 * accepts is never refused by another.
 */

/**
 * A flow's size in UTF-8 bytes as saved: its canonical text (`serializeFlow`, what export writes
 * and what `switchboard validate`/`run` and the editor's import read back). Text input is also
 * refused beyond it before parsing.
 */
export const MAX_FLOW_BYTES = 8 * 1024 * 1024;

/** Characters of a flow, node or edge id (and so of a co-editing room name and a URL segment). */
export const MAX_ID_LENGTH = 128;
