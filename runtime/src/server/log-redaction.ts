/**
 * No credential reaches a log line. A URL's query may carry one (`?token=` for WebSocket
 * upgrades, `?access_token=`, `?api_key=` from a client that knows no better, a signed URL), and
 * so may its user-info (`https://user:pass@…`). Every parameter whose name can hold a credential
 * is replaced by `[redacted]`, in the request serializer, in error messages and stacks, and in
 * every string a log call is given.
 */
import { dict } from '@switchboard/schemas/core';
import type { FastifyServerOptions } from 'fastify';

/**
 * Parameter names that can hold a credential, matched on the decoded, lower-cased name. Broad on
 * purpose: redacting a harmless `?keyword=` costs nothing, logging a key costs the key.
 */
const CREDENTIAL_NAME =
  /token|key|secret|passw|pwd|auth|credential|session|cookie|signature|^sig$|^code$|^jwt$|^otp$/;

export function isCredentialParam(name: string): boolean {
  let n = name.replace(/\+/g, ' ');
  try {
    n = decodeURIComponent(n);
  } catch {
    // A malformed escape: match the raw name.
  }
  return CREDENTIAL_NAME.test(n.toLowerCase());
}

// `name=value` after `?`, `&` or `;`, anywhere in a string (a URL alone or quoted in a message).
const QUERY_PAIR = /([?&;])([^=&;#\s"'<>?]+)=([^&;#\s"'<>]*)/g;
const USER_INFO = /([a-z][a-z0-9+.-]*:\/\/)[^/?#\s@"'<>]+@/gi;

/** Redacts credential parameters and URL user-info in any text; the rest is kept as it was. */
export function redactText(text: string): string {
  if (!text.includes('=') && !text.includes('@')) return text;
  return text
    .replace(USER_INFO, '$1[redacted]@')
    .replace(QUERY_PAIR, (all, sep: string, name: string) =>
      isCredentialParam(name) ? `${sep}${name}=[redacted]` : all,
    );
}

/** A request URL as logged. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const at = url.indexOf('@');
  return q === -1 && at === -1 ? url : redactText(url);
}

function redactValue(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return redactText(v);
  if (depth === 0 || v === null || typeof v !== 'object') return v;
  // Only plain data: requests, replies and errors have their own serializers.
  const proto = Object.getPrototypeOf(v);
  if (Array.isArray(v)) return v.map((x) => redactValue(x, depth - 1));
  if (proto !== Object.prototype && proto !== null) return v;
  const out = dict<unknown>();
  for (const [k, x] of Object.entries(v)) out[k] = redactValue(x, depth - 1);
  return out;
}

interface ErrLike {
  name?: string;
  message?: string;
  stack?: string;
  code?: unknown;
  statusCode?: unknown;
  cause?: unknown;
}

interface SerializedErr {
  [key: string]: unknown;
  type: string;
  message: string;
  stack: string;
}

function serializeErr(err: ErrLike): SerializedErr {
  if (err === null || typeof err !== 'object')
    return { type: typeof err, message: redactText(String(err)), stack: '' };
  const out: SerializedErr = {
    type: err.constructor?.name ?? err.name ?? 'Error',
    message: redactText(String(err.message ?? '')),
    stack: redactText(String(err.stack ?? '')),
  };
  if (err.code !== undefined) out.code = err.code;
  if (err.statusCode !== undefined) out.statusCode = err.statusCode;
  if (err.cause !== undefined && typeof err.cause === 'object')
    out.cause = serializeErr(err.cause as ErrLike);
  return out;
}

/** The fastify/pino logger options with redaction added (false stays false). */
export function withRedaction(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (!logger) return logger;
  const base = typeof logger === 'object' ? (logger as Record<string, unknown>) : {};
  return {
    ...base,
    serializers: {
      req: (req: { method: string; url: string; ip?: string }) => ({
        method: req.method,
        url: redactUrl(req.url),
        ip: req.ip,
      }),
      err: serializeErr,
    },
    formatters: {
      log: (obj: Record<string, unknown>) => redactValue(obj, 4) as Record<string, unknown>,
    },
    hooks: {
      logMethod(this: unknown, args: unknown[], method: (...a: unknown[]) => void) {
        const out = args.map((a) => (typeof a === 'string' ? redactText(a) : a));
        // pino takes the message of a bare Error unredacted: give it the redacted one.
        if (out[0] instanceof Error && typeof out[1] !== 'string')
          out.splice(1, 0, redactText(out[0].message));
        return method.apply(this, out);
      },
    },
  } as FastifyServerOptions['logger'];
}
