/**
 * Operator-controlled outbound destinations (issue 19): `--allow-outbound <loopback | private |
 * HOST[:PORT] | CIDR>` (repeatable) and `SWITCHBOARD_ALLOW_OUTBOUND` (comma-separated) turn into
 * one `OutboundPolicy`, used alike by model endpoints, MCP HTTP servers and the `http` built-in.
 * Public addresses need no entry; an entry only ever widens what the default policy refuses, and
 * only the operator writes one — never a flow.
 */
import { parseIPv4, parseIPv6 } from './ip.js';
import { normalizeHost, type OutboundPolicy } from './policy.js';

/** A host (name or IP literal) with an optional port, or an address range. */
export type Destination =
  | { kind: 'host'; host: string; port?: number }
  | { kind: 'cidr'; family: 4 | 6; text: string; bits: number; groups: number[] };

export class DestinationError extends Error {
  override readonly name = 'DestinationError';
}

/** IPv4 as two 16-bit groups, IPv6 as eight, so that one prefix test serves both. */
function groupsOf(address: string): { family: 4 | 6; groups: number[] } | undefined {
  const v4 = parseIPv4(address);
  if (v4 !== undefined) return { family: 4, groups: [Math.floor(v4 / 65536), v4 % 65536] };
  const v6 = parseIPv6(address.replace(/^\[|\]$/g, ''));
  return v6 ? { family: 6, groups: v6 } : undefined;
}

function prefixMatches(groups: number[], net: number[], bits: number): boolean {
  let left = bits;
  for (let i = 0; i < net.length && left > 0; i++) {
    const take = Math.min(16, left);
    const mask = take === 16 ? 0xffff : (0xffff << (16 - take)) & 0xffff;
    if (((groups[i] ?? 0) & mask) !== ((net[i] ?? 0) & mask)) return false;
    left -= take;
  }
  return true;
}

/** Parses one `--allow-outbound` value; throws a DestinationError naming it. */
export function parseDestination(raw: string): Destination | 'loopback' | 'private' {
  const v = raw.trim();
  const lower = v.toLowerCase();
  if (lower === 'loopback' || lower === 'private') return lower;
  const bad = (why: string) =>
    new DestinationError(
      `--allow-outbound ${JSON.stringify(raw)}: ${why} (expected loopback, private, HOST[:PORT] or CIDR such as 10.0.0.0/8)`,
    );
  if (v === '') throw bad('empty');
  const slash = v.indexOf('/');
  if (slash >= 0) {
    const addr = v.slice(0, slash);
    const bitsText = v.slice(slash + 1);
    const parsed = groupsOf(addr);
    if (!parsed) throw bad('not an IP range');
    const max = parsed.family === 4 ? 32 : 128;
    if (!/^\d{1,3}$/.test(bitsText) || Number(bitsText) > max) throw bad(`prefix length must be 0…${max}`);
    return { kind: 'cidr', family: parsed.family, text: v, bits: Number(bitsText), groups: parsed.groups };
  }
  let host = v;
  let port: number | undefined;
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(v);
  if (bracket) {
    host = bracket[1]!;
    if (bracket[2] !== undefined) port = Number(bracket[2]);
  } else if ((v.match(/:/g) ?? []).length === 1) {
    const [h, p] = v.split(':');
    if (!/^\d{1,5}$/.test(p ?? '')) throw bad('the port must be a number');
    host = h!;
    port = Number(p);
  }
  if (port !== undefined && (port < 1 || port > 65535)) throw bad('the port must be 1…65535');
  if (!/^[A-Za-z0-9.:_-]+$/.test(host)) throw bad('not a host name or address');
  return { kind: 'host', host: normalizeHost(host), ...(port !== undefined ? { port } : {}) };
}

/** The policy the operator's entries give (on top of the default, which refuses internal targets). */
export function outboundPolicyFrom(entries: readonly string[]): OutboundPolicy {
  const policy: OutboundPolicy = {};
  const destinations: Destination[] = [];
  for (const e of entries) {
    const d = parseDestination(e);
    if (d === 'loopback') policy.allowLoopback = true;
    else if (d === 'private') policy.allowPrivate = true;
    else destinations.push(d);
  }
  if (destinations.length) policy.allowDestinations = destinations;
  return policy;
}

/** `SWITCHBOARD_ALLOW_OUTBOUND` (comma-separated) plus `--allow-outbound` values. */
export function operatorOutboundEntries(
  flags: readonly string[] | undefined,
  env: Record<string, string | undefined> = process.env,
): string[] {
  const fromEnv = (env.SWITCHBOARD_ALLOW_OUTBOUND ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const local = /^(1|true|yes)$/i.test((env.SWITCHBOARD_ALLOW_LOCAL_MODELS ?? '').trim());
  // The older, model-only switch is one case of the same decision: loopback and private.
  return [...fromEnv, ...(local ? ['loopback', 'private'] : []), ...(flags ?? [])];
}

/** Whether an operator destination lets `host:port` (resolved to `address`) through. */
export function destinationAllows(
  list: readonly Destination[] | undefined,
  host: string,
  port: number,
  address: string,
): boolean {
  if (!list?.length) return false;
  const h = normalizeHost(host);
  const a = groupsOf(address);
  return list.some((d) => {
    if (d.kind === 'host')
      return (d.host === h || d.host === normalizeHost(address)) && (d.port === undefined || d.port === port);
    return a !== undefined && a.family === d.family && prefixMatches(a.groups, d.groups, d.bits);
  });
}

/** The flag that would allow a refused destination, for error messages. */
export function allowFlagFor(kind: string, host: string, port: number): string {
  if (kind === 'loopback' || kind === 'unspecified')
    return `--allow-outbound loopback (or --allow-outbound ${host}:${port})`;
  if (kind === 'private') return `--allow-outbound private (or --allow-outbound ${host}:${port})`;
  if (kind === 'linkLocal')
    return `--allow-outbound ${host}:${port} (a link-local address: cloud metadata lives there)`;
  return '';
}
