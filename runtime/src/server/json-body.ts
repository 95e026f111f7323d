/**
 * The request body parser: size is bounded by fastify's bodyLimit before this runs; depth is
 * checked before JSON.parse (no deep recursion), and prototype keys are refused after it.
 */
import { findReservedKeys, jsonDepth } from '@switchboard/schemas';
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

export function installJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    /^application\/([\w.+-]+\+)?json(;.*)?$/i,
    { parseAs: 'string' },
    (_req, body, done) => {
      try {
        done(null, parseJsonBody(body as string));
      } catch (e) {
        done(e as Error, undefined);
      }
    },
  );
}
