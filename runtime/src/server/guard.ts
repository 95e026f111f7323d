/**
 * The request gate, run before routing for every request and WebSocket upgrade:
 * 1. Host must name this server (DNS rebinding);
 * 2. with a token configured, every route but the public ones needs it: `/api/health` and the
 *    editor's static build (GET/HEAD, never an upgrade, never under `/api`). The valid token always
 *    passes; wrong ones are counted per address prefix and globally, and answered 429 past the
 *    limit (security.ts, FailureLimiter);
 * 3. WebSocket upgrades that carry an Origin (every browser's do) must come from an allowed one;
 *    other requests that carry an Origin and change state must too (cross-site requests).
 * The client address is `req.ip`: the socket's own, or, when fastify's `trustProxy` names the
 * socket as a proxy the operator trusts, the nearest untrusted `X-Forwarded-For` entry.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { addressPrefix, type FailureLimiter, tokenFrom, tokenMatches } from './security.js';
import { isApiPath, SPA_FALLBACK } from './static-editor.js';

/** API routes that answer without a token (reviewed: they reveal nothing but liveness). */
export const PUBLIC_ROUTES = new Set([
  'GET /api/health',
  'HEAD /api/health',
  // The OAuth provider's redirect back to a Connect login: admitted by its single-use state.
  'GET /api/mcp-auth/callback',
]);

export interface GuardConfig {
  token?: string;
  /** Host header values accepted, recomputed once the port is known. */
  hosts: () => Set<string>;
  origins: () => Set<string>;
  limiter: FailureLimiter;
  /** The editor build's routes (static-editor.ts), public for GET and HEAD; filled once registered. */
  staticRoutes?: ReadonlySet<string>;
}

function refuse(reply: FastifyReply, status: number, code: string, message: string): FastifyReply {
  return reply.code(status).header('connection', 'close').send({ error: { code, message } });
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function installGuard(app: FastifyInstance, cfg: GuardConfig): void {
  // A refused upgrade leaves a socket that belongs to no HTTP exchange any more: close it, or
  // a client that keeps it open holds a descriptor (and server.close()) forever.
  app.addHook('onResponse', (req, _reply, done) => {
    if (
      req.headers.upgrade !== undefined &&
      req.headers.upgrade.toLowerCase() === 'websocket' &&
      !req.raw.socket.destroyed
    )
      req.raw.socket.destroy();
    done();
  });
  // A callback hook, not an async one: this runs on every request, and a promise per request
  // is measurable against a bare http server.
  app.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (check(req, reply) === undefined) done();
  });

  /** Decided by the route the router matched, so no spelling of a path changes the verdict. */
  function isPublic(req: FastifyRequest): boolean {
    const url = req.routeOptions.url;
    if (url === undefined) return false;
    if (PUBLIC_ROUTES.has(`${req.method} ${url}`)) return true;
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    if (url === SPA_FALLBACK) return !isApiPath(req.url);
    return cfg.staticRoutes?.has(url) === true;
  }

  /** Sends the refusal and returns the reply, or returns undefined to let the request through. */
  function check(req: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
    const host = req.headers.host;
    if (typeof host !== 'string' || !cfg.hosts().has(host))
      return refuse(reply, 421, 'bad-host', 'the Host header does not name this server');
    const isUpgrade = req.headers.upgrade !== undefined && req.headers.upgrade.toLowerCase() === 'websocket';
    const origin = req.headers.origin;
    if (isUpgrade) {
      // Browsers always send Origin with a WebSocket upgrade, so a hostile page is refused here;
      // a program (a script with stock y-websocket, a bot) sends none and is let through to the
      // token check, like any HTTP client of the API.
      if (origin !== undefined && (typeof origin !== 'string' || !cfg.origins().has(origin)))
        return refuse(
          reply,
          403,
          'bad-origin',
          'WebSocket connections are accepted only from this server’s own origin',
        );
    } else if (origin !== undefined && STATE_CHANGING.has(req.method) && !cfg.origins().has(String(origin))) {
      return refuse(reply, 403, 'bad-origin', 'cross-origin requests are not accepted');
    }
    if (cfg.token === undefined) return undefined;
    if (!isUpgrade && isPublic(req)) return undefined;
    const given = tokenFrom(req.headers, req.url, isUpgrade);
    // The token first: a valid one passes whatever others tried from the same place.
    if (tokenMatches(cfg.token, given)) return undefined;
    const addr = req.ip ?? req.socket.remoteAddress ?? 'unknown';
    const wait = cfg.limiter.blocked(addr);
    if (wait !== undefined) {
      reply.header('retry-after', String(wait));
      return refuse(reply, 429, 'rate-limited', `too many failed attempts; retry in ${wait} s`);
    }
    const tripped = cfg.limiter.fail(addr);
    if (tripped)
      req.log.warn(
        { prefix: tripped === 'prefix' ? addressPrefix(addr) : undefined, limit: tripped },
        'failed tokens reached the limit; further wrong tokens are answered 429',
      );
    return refuse(reply, 401, 'unauthorized', 'a valid token is required (Authorization: Bearer …)');
  }
}
