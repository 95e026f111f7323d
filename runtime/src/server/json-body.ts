/**
 * The request body parser: size is bounded by fastify's bodyLimit before this runs; the bytes
 * must be UTF-8 (strictly: an invalid sequence is refused, never replaced by U+FFFD and stored)
 * and no other charset is accepted; depth is checked before JSON.parse (no deep recursion), and
 * prototype keys are refused after it.
 */
import { findReservedKeys, firstInvalidUtf8, jsonDepth } from '@switchboard/schemas';
import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors.js';

export const MAX_BODY_DEPTH = 64;

export function parseJsonBody(text: string): unknown {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.trim() === '') throw new HttpError(400, 'bad-json', 'the body is empty; send a JSON document');
  if (jsonDepth(text, MAX_BODY_DEPTH) > MAX_BODY_DEPTH)
    throw new HttpError(400, 'too-deep', `the body is nested deeper than ${MAX_BODY_DEPTH} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new HttpError(400, 'bad-json', `the body is not valid JSON: ${(e as Error).message}`);
  }
  const reserved = findReservedKeys(value, 5);
  if (reserved.length > 0)
    throw new HttpError(
      400,
      'reserved-key',
      `keys named __proto__, constructor or prototype are not allowed: ${reserved.join(', ')}`,
    );
  return value;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The `charset` parameter of a Content-Type, lower-cased and unquoted; undefined when absent. */
export function charsetOf(contentType: string | undefined): string | undefined {
  const m = /;\s*charset\s*=\s*("?)([^";]*)\1/i.exec(contentType ?? '');
  return m ? m[2]!.trim().toLowerCase() : undefined;
}

/** Bytes to text, refusing any charset but UTF-8 and any invalid byte sequence, naming where. */
export function decodeBody(bytes: Uint8Array, contentType: string | undefined): string {
  const charset = charsetOf(contentType);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
    throw new HttpError(
      400,
      'bad-charset',
      `the body must be UTF-8 JSON; charset=${JSON.stringify(charset).slice(1, -1).slice(0, 40)} is not accepted`,
    );
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new HttpError(
      400,
      'bad-encoding',
      `the body is not valid UTF-8: invalid byte sequence at byte ${firstInvalidUtf8(bytes)}`,
    );
  }
}

export function installJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    /^application\/([\w.+-]+\+)?json(;.*)?$/i,
    { parseAs: 'buffer' },
    (req, body, done) => {
      try {
        done(null, parseJsonBody(decodeBody(body as Buffer, req.headers['content-type'])));
      } catch (e) {
        done(e as Error, undefined);
      }
    },
  );
}
