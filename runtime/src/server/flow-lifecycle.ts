/**
 * Who writes a flow and how a co-editing room learns its flow is gone.
 *
 * The editor names its person in `X-Switchboard-User` (their display name, URI-encoded: header
 * values are Latin-1). Nobody is authenticated by it — it labels revisions and deletes, as the
 * names in a room label cursors — so it is cleaned and bounded, never trusted.
 */
import type { FastifyRequest } from 'fastify';
import type { FlowTombstone } from '../store/catalog.js';
import { LOCAL_USER } from './flow-records.js';

export const AUTHOR_HEADER = 'x-switchboard-user';
export const MAX_AUTHOR_CHARS = 40;

/**
 * The WebSocket close code of a room whose flow was deleted (the editor reads the same number).
 * In y-websocket's 4400–4499 range: its clients stop reconnecting instead of recreating the room.
 */
export const ROOM_DELETED_CLOSE = 4410;
/** Close reasons are at most 123 bytes of UTF-8. */
const MAX_REASON_BYTES = 123;

/** A display name as sent, cleaned: no control characters, trimmed, at most 40 characters. */
export function cleanAuthor(raw: unknown): string | undefined {
  if (typeof raw !== 'string') return undefined;
  let text = raw;
  try {
    text = decodeURIComponent(raw);
  } catch {
    // Not URI-encoded: take it as it is.
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const clean = [...text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ').trim()]
    .slice(0, MAX_AUTHOR_CHARS)
    .join('')
    .trim();
  return clean || undefined;
}

/** Who a request writes as: the editor's display name, else the local user. */
export function authorOf(req: FastifyRequest): string {
  const h = req.headers[AUTHOR_HEADER];
  return cleanAuthor(Array.isArray(h) ? h[0] : h) ?? LOCAL_USER;
}

/** `deleted by <name>`, cut to what a close frame holds (whole characters only). */
export function deletedCloseReason(t: Pick<FlowTombstone, 'deletedBy'>): string {
  const chars = [...`deleted by ${t.deletedBy}`];
  while (Buffer.byteLength(chars.join(''), 'utf8') > MAX_REASON_BYTES) chars.pop();
  return chars.join('');
}
