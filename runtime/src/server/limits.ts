/**
 * The server's own limits, beside the ones every entry point shares (`MAX_FLOW_BYTES`,
 * `MAX_ID_LENGTH` in @switchboard/schemas), from which the body and path limits derive.
 */
import { readFileSync } from 'node:fs';
import { MAX_FLOW_BYTES, MAX_ID_LENGTH } from '@switchboard/schemas';

/** Request bodies: a flow of `MAX_FLOW_BYTES` (the validator's limit), plus an envelope. */
export const BODY_LIMIT = MAX_FLOW_BYTES + 1024 * 1024;
/**
 * Longest path parameter the router matches: past the id limit, so a long id is refused by the
 * route's schema naming the limit rather than answered "no route"; bounded all the same.
 */
export const MAX_PARAM_LENGTH = 2 * MAX_ID_LENGTH;
/** Runs live at once unless configured: each holds open files (its logs) and memory. */
export const DEFAULT_MAX_RUNS = 64;
/** Descriptors a live run holds (event log, checkpoints, tool journal: 3 measured), with a margin. */
const FDS_PER_RUN = 4;
/** Descriptors kept for everything else: sockets, the catalog's writes, rooms, the editor's files. */
const FD_RESERVE = 128;

/**
 * The default cap: 64, or fewer when the process may open too few files for 64 runs (from
 * /proc/self/limits where there is one), so the cap, not EMFILE, is what a client meets.
 */
export function defaultMaxRuns(procLimits?: string): number {
  let text = procLimits;
  if (text === undefined)
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return DEFAULT_MAX_RUNS;
    }
  const m = /^Max open files\s+(\d+)/m.exec(text);
  if (!m) return DEFAULT_MAX_RUNS;
  const fit = Math.floor((Number(m[1]) - FD_RESERVE) / FDS_PER_RUN);
  return Math.max(1, Math.min(DEFAULT_MAX_RUNS, fit));
}

/** WebSocket messages: a few MiB, not ws's 100 MiB default. */
export const WS_MAX_PAYLOAD = 4 * 1024 * 1024;
