/**
 * Who may talk to the server. Loopback binds are open to local clients; any other bind needs
 * `SWITCHBOARD_TOKEN`. Host and Origin are checked against the server's own origin (DNS
 * rebinding, cross-site WebSockets); `x-forwarded-*` headers are never read.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

export const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', 'localhost']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOSTS.has(host) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Rough entropy of a token by its alphabet; refuses short or repetitive tokens. */
export function tokenProblem(token: string | undefined): string | undefined {
  if (token === undefined || token === '')
    return 'SWITCHBOARD_TOKEN is required when listening on a non-loopback address';
  if (!/^[\x21-\x7e]+$/.test(token)) return 'SWITCHBOARD_TOKEN must be printable ASCII without spaces';
  const bitsPerChar = /^[0-9a-fA-F]+$/.test(token) ? 4 : /^[A-Za-z0-9_-]+$/.test(token) ? 6 : 6.5;
  const distinct = new Set(token).size;
  if (token.length * bitsPerChar < 128 || distinct < Math.min(12, token.length / 2))
    return 'SWITCHBOARD_TOKEN is too weak: use at least 128 random bits (e.g. `openssl rand -hex 32`)';
  return undefined;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Constant-time comparison (hashing first makes lengths equal). */
export function tokenMatches(expected: string, given: string | undefined): boolean {
  if (given === undefined) return false;
  return timingSafeEqual(digest(expected), digest(given));
}

/** Extracts a token from `Authorization: Bearer …`, a `bearer.<token>` WebSocket subprotocol or `?token=`. */
export function tokenFrom(headers: Record<string, string | string[] | undefined>, url: string, ws: boolean) {
  const auth = headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer[ ]+(\S*)$/i.exec(auth);
    return m ? m[1] : '';
  }
  if (!ws) return undefined;
  const proto = headers['sec-websocket-protocol'];
  if (typeof proto === 'string') {
    for (const p of proto.split(',')) {
      const t = p.trim();
      if (t.startsWith('bearer.')) return t.slice('bearer.'.length);
    }
  }
  const q = url.indexOf('?');
  if (q !== -1) {
    const v = new URLSearchParams(url.slice(q + 1)).get('token');
    if (v !== null) return v;
  }
  return undefined;
}

/** Failed token attempts per remote address: at most `max` per `windowMs`, then refused. */
export class FailureLimiter {
  private readonly hits = new Map<string, { n: number; reset: number }>();
  constructor(
    readonly max = 10,
    readonly windowMs = 60_000,
  ) {}

  blocked(addr: string, now = Date.now()): boolean {
    const h = this.hits.get(addr);
    if (!h) return false;
    if (now >= h.reset) {
      this.hits.delete(addr);
      return false;
    }
    return h.n >= this.max;
  }

  fail(addr: string, now = Date.now()): void {
    const h = this.hits.get(addr);
    if (!h || now >= h.reset) this.hits.set(addr, { n: 1, reset: now + this.windowMs });
    else h.n++;
    if (this.hits.size > 10_000) {
      // Bounded memory under a spray of addresses: forget expired entries.
      for (const [k, v] of this.hits) if (now >= v.reset) this.hits.delete(k);
    }
  }

  succeed(addr: string): void {
    this.hits.delete(addr);
  }
}

function hostLiteral(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}

/**
 * The Host values and Origins the server accepts, given where it listens. Exact, case-sensitive
 * matches: browsers send lower-case hosts, so anything else is not a browser on our page.
 */
export function allowedHostsFor(bindHost: string, port: number, extraHosts: string[] = []): Set<string> {
  const names = new Set<string>([bindHost]);
  if (isLoopbackHost(bindHost)) for (const n of ['127.0.0.1', 'localhost', '::1']) names.add(n);
  const out = new Set<string>();
  for (const n of names) {
    out.add(`${hostLiteral(n)}:${port}`);
    if (port === 80) out.add(hostLiteral(n));
  }
  for (const h of extraHosts) out.add(h);
  return out;
}

export function allowedOriginsFor(hosts: Set<string>, extraOrigins: string[] = []): Set<string> {
  const out = new Set<string>();
  for (const h of hosts) out.add(`http://${h}`);
  for (const o of extraOrigins) out.add(o.replace(/\/+$/, ''));
  return out;
}
