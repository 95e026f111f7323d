/**
 * The outbound policy: which URLs the one outbound-HTTP module may reach. A URL passes when its
 * scheme is http(s), it carries no credentials, its host is on the allow-list (when there is
 * one), and every address its host resolves to is of a class the operator allowed.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import type { Destination } from './destinations.js';
import { allowFlagFor, destinationAllows } from './destinations.js';
import { type AddressClass, classifyAddress } from './ip.js';

export interface OutboundPolicy {
  /** Allow 127.0.0.0/8, ::1, `localhost` and the unspecified address 0.0.0.0 / ::. */
  allowLoopback?: boolean;
  /** Allow RFC 1918, CGNAT 100.64/10 and IPv6 unique-local / site-local targets. */
  allowPrivate?: boolean;
  /**
   * Allow link-local targets (169.254/16, fe80::/10). Separate from `allowPrivate` because cloud
   * metadata endpoints (169.254.169.254) live there.
   */
  allowLinkLocal?: boolean;
  /**
   * When set, only these hosts: an exact host name or IP (`api.openai.com`) or `*.suffix`, which
   * matches any subdomain of suffix but not suffix itself. Address checks still apply.
   */
  allowHosts?: string[];
  /**
   * Hosts (with an optional port) and address ranges the operator allowed although their
   * addresses are internal (`--allow-outbound mcp.internal:8080`, `--allow-outbound 10.1.0.0/16`).
   */
  allowDestinations?: Destination[];
}

/** Resolves a host name to its addresses; injectable so tests can simulate DNS answers. */
export type HostResolver = (hostname: string) => Promise<string[]>;

export const systemResolver: HostResolver = async (hostname) => {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => a.address);
};

export type CheckResult = { ok: true; url: URL; addresses: string[] } | { ok: false; reason: string };

/** Whether the policy lets a connection reach an address of this class. */
function allowedBy(kind: AddressClass, policy: OutboundPolicy): boolean {
  switch (kind) {
    case 'public':
      return true;
    case 'loopback':
    case 'unspecified':
      return policy.allowLoopback === true;
    case 'private':
      return policy.allowPrivate === true;
    case 'linkLocal':
      return policy.allowLinkLocal === true;
    case 'reserved':
      return false;
  }
}

function refusal(host: string, address: string, kind: AddressClass, port: number): string {
  const flag = allowFlagFor(kind, host, port);
  const hint = flag ? `; the operator can allow it with ${flag}` : '; never allowed';
  const where = host === address ? address : `${host} (${address})`;
  return `refused: ${where} is a ${kind} address${hint}`;
}

const portOf = (url: URL) => (url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80);

/** Whether the policy lets this address of this host through. */
function addressAllowed(
  kind: AddressClass,
  policy: OutboundPolicy,
  host: string,
  port: number,
  address: string,
) {
  if (allowedBy(kind, policy)) return true;
  if (kind === 'reserved') return false;
  return destinationAllows(policy.allowDestinations, host, port, address);
}

/** Host names without the trailing root dot, lower-cased, IPv6 without brackets. */
export function normalizeHost(host: string): string {
  let h = host.toLowerCase();
  if (h.endsWith('.')) h = h.slice(0, -1);
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  return h;
}

export function hostAllowed(hostname: string, allowHosts: string[]): boolean {
  const host = normalizeHost(hostname);
  return allowHosts.some((entry) => {
    const pattern = normalizeHost(entry.trim());
    if (pattern.startsWith('*.')) {
      const suffix = pattern.slice(1); // ".example.com"
      return host.length > suffix.length && host.endsWith(suffix);
    }
    return host === pattern;
  });
}

/**
 * The checks that need no DNS: scheme, credentials, host allow-list. Run first so that a refused
 * URL is refused the same way whatever the network does.
 */
export function checkUrlStatic(input: string | URL, policy: OutboundPolicy = {}): CheckResult {
  let url: URL;
  try {
    url = typeof input === 'string' ? new URL(input) : new URL(input.href);
  } catch {
    return { ok: false, reason: `refused: not a valid URL: ${String(input).slice(0, 200)}` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { ok: false, reason: `refused: scheme ${url.protocol} (only http: and https:)` };
  }
  if (url.username || url.password) {
    return { ok: false, reason: 'refused: credentials in the URL (send them as a header)' };
  }
  const host = normalizeHost(url.hostname);
  if (!host) return { ok: false, reason: 'refused: URL has no host' };
  if (policy.allowHosts && !hostAllowed(host, policy.allowHosts)) {
    return { ok: false, reason: `refused: host ${host} is not in the allowed hosts` };
  }
  return { ok: true, url, addresses: [] };
}

/**
 * Decides whether `url` may be fetched under `policy`. Resolves the host (DNS) and checks every
 * address; a host with any forbidden address is refused, so a resolver cannot mix a public and an
 * internal answer and let the connection pick the internal one.
 */
export async function checkUrl(
  input: string | URL,
  policy: OutboundPolicy = {},
  resolve: HostResolver = systemResolver,
): Promise<CheckResult> {
  const first = checkUrlStatic(input, policy);
  if (!first.ok) return first;
  const { url } = first;
  const host = normalizeHost(url.hostname);

  const port = portOf(url);
  const literal = classifyAddress(host);
  if (literal) {
    if (!addressAllowed(literal.kind, policy, host, port, literal.address))
      return { ok: false, reason: refusal(host, host, literal.kind, port) };
    return { ok: true, url, addresses: [literal.address] };
  }

  // RFC 6761: `localhost` and `*.localhost` are loopback whatever a resolver or /etc/hosts says.
  if (host === 'localhost' || host.endsWith('.localhost')) {
    if (!policy.allowLoopback && !destinationAllows(policy.allowDestinations, host, port, '127.0.0.1'))
      return { ok: false, reason: refusal(host, host, 'loopback', port) };
    return { ok: true, url, addresses: ['127.0.0.1', '::1'] };
  }

  let answers: string[];
  try {
    answers = await resolve(host);
  } catch (err) {
    const code = (err as { code?: string }).code ?? (err as Error).message;
    return { ok: false, reason: `refused: cannot resolve ${host} (${code})` };
  }
  if (answers.length === 0) return { ok: false, reason: `refused: ${host} resolves to no address` };
  const addresses: string[] = [];
  for (const answer of answers) {
    const parsed = classifyAddress(answer);
    if (!parsed) return { ok: false, reason: `refused: ${host} resolved to a non-address ${answer}` };
    if (!addressAllowed(parsed.kind, policy, host, port, parsed.address))
      return { ok: false, reason: refusal(host, parsed.address, parsed.kind, port) };
    addresses.push(parsed.address);
  }
  return { ok: true, url, addresses };
}
