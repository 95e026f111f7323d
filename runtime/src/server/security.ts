/**
 * Who may talk to the server. Loopback binds are open to local clients; any other bind needs
 * `SWITCHBOARD_TOKEN`. Host and Origin are checked against the server's own origin (DNS
 * rebinding, cross-site WebSockets). The client's address is the socket's, or, only when the
 * socket is a proxy the operator trusts (`--trust-proxy`), the nearest untrusted address of
 * `X-Forwarded-For`.
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

/**
 * The part of a client address failures are counted by: /24 for IPv4 (also IPv4-mapped IPv6),
 * /64 for IPv6, so rotating addresses inside one allocation does not reset the count.
 */
export function addressPrefix(addr: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(addr);
  const a = mapped ? mapped[1]! : addr;
  const v = isIP(a);
  if (v === 4) return `${a.slice(0, a.lastIndexOf('.'))}.0/24`;
  if (v !== 6) return a;
  const zone = a.indexOf('%');
  const bare = zone === -1 ? a : a.slice(0, zone);
  const [head = '', tail] = bare.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  // An embedded IPv4 tail takes two groups; only the first four groups matter here.
  const groups =
    tail === undefined ? h : [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t];
  return `${groups
    .slice(0, 4)
    .map((g) => (Number.parseInt(g, 16) || 0).toString(16))
    .join(':')}::/64`;
}

export interface AuthLimits {
  /** Failed tokens per address prefix per window (default 10). */
  perPrefix?: number;
  /** Failed tokens from everywhere per window (default 100): rotating prefixes meets this. */
  global?: number;
  windowMs?: number;
}

/**
 * Failed token attempts, per address prefix and globally, in a fixed window. A limited source is
 * refused with 429 for *wrong* tokens only: the guard checks the token first, so the valid token
 * always passes (a flood of bad guesses must not lock the operator out). Guessing itself is
 * stopped by the token's strength (at least 128 random bits, checked at start); this bounds the
 * noise, makes an attack visible (one warning per window) and tells a client to back off.
 */
export class FailureLimiter {
  private readonly hits = new Map<string, { n: number; reset: number }>();
  private global = { n: 0, reset: 0 };
  readonly perPrefix: number;
  readonly globalMax: number;
  readonly windowMs: number;

  constructor(limits: AuthLimits = {}) {
    this.perPrefix = limits.perPrefix ?? 10;
    this.globalMax = limits.global ?? 100;
    this.windowMs = limits.windowMs ?? 60_000;
  }

  /** Seconds until a wrong token from `addr` is answered 401 again, or undefined when not limited. */
  blocked(addr: string, now = Date.now()): number | undefined {
    const secs = (reset: number) => Math.max(1, Math.ceil((reset - now) / 1000));
    if (now < this.global.reset && this.global.n >= this.globalMax) return secs(this.global.reset);
    const key = addressPrefix(addr);
    const h = this.hits.get(key);
    if (!h) return undefined;
    if (now >= h.reset) {
      this.hits.delete(key);
      return undefined;
    }
    return h.n >= this.perPrefix ? secs(h.reset) : undefined;
  }

  /** Counts a failure; returns what it tripped (a limit reached by this very failure), for the log. */
  fail(addr: string, now = Date.now()): 'prefix' | 'global' | undefined {
    if (now >= this.global.reset) this.global = { n: 0, reset: now + this.windowMs };
    this.global.n++;
    const key = addressPrefix(addr);
    const h = this.hits.get(key);
    let n = 1;
    if (!h || now >= h.reset) this.hits.set(key, { n, reset: now + this.windowMs });
    else n = ++h.n;
    if (this.hits.size > 10_000) {
      // Bounded memory under a spray of addresses: forget expired entries.
      for (const [k, v] of this.hits) if (now >= v.reset) this.hits.delete(k);
    }
    if (this.global.n === this.globalMax) return 'global';
    return n === this.perPrefix ? 'prefix' : undefined;
  }
}

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * Checks the operator's trusted proxies: addresses, CIDRs or proxy-addr's names. Returns the list,
 * or a sentence naming the bad entry.
 */
export function trustedProxies(list: string[]): string[] | string {
  for (const p of list) {
    const [addr = '', bits, extra] = p.split('/');
    const v = isIP(addr);
    const okBits = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (v === 6 ? 128 : 32));
    if (!(PROXY_NAMES.has(p) || (v !== 0 && okBits && extra === undefined)))
      return `trusted proxy ${JSON.stringify(p).slice(0, 60)} is not an address, a CIDR or one of loopback, linklocal, uniquelocal`;
  }
  return list;
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
