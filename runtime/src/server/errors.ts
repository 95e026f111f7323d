/**
 * Every error the API returns has one shape, `{ error: { code, message } }` (plus `errors` for
 * invalid flows), with a stable code and a sentence; never a stack trace.
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import { isFsError, STORAGE_HTTP_STATUS, StorageError, toStorageError } from '../store/storage-error.js';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
    /** Response headers the refusal needs (e.g. `retry-after`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | HttpError, req, reply) => {
    if (err instanceof HttpError) {
      for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
      return reply.code(err.status).send({ error: { code: err.code, message: err.message }, ...err.extra });
    }
    // A disk fault has a name (storage_full 507, storage_unavailable 503, storage_io 500) and a path.
    const raw: unknown = err;
    if (raw instanceof StorageError || isFsError(raw)) {
      const se = toStorageError(raw);
      req.log.error({ code: se.code, path: se.path, errno: se.errno }, se.message);
      return reply.code(STORAGE_HTTP_STATUS[se.code]).send({ error: se.toJSON() });
    }
    if (err.validation) {
      const v = err.validation[0];
      const where = v ? `${err.validationContext ?? 'request'}${v.instancePath || ''}` : 'request';
      return reply
        .code(400)
        .send({ error: { code: 'bad-request', message: `${where}: ${v?.message ?? err.message}` } });
    }
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) {
      req.log.error({ err }, 'request failed');
      return reply
        .code(500)
        .send({ error: { code: 'internal', message: `internal error (request ${req.id})` } });
    }
    const code =
      err.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
        ? 'too-large'
        : err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
          ? 'unsupported-media-type'
          : 'bad-request';
    // Fastify's 4xx messages are plain sentences without internals.
    return reply.code(status).send({ error: { code, message: err.message } });
  });
  app.setNotFoundHandler((req, reply) => {
    reply
      .code(404)
      .send({ error: { code: 'not-found', message: `no route ${req.method} ${req.url.split('?')[0]}` } });
  });
}
