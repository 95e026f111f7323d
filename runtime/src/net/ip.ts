/**
 * IP address parsing and classification for the outbound-HTTP guard.
 *
 * Why our own parser: the decision "may we connect to this address" must not depend on which
 * textual form an address arrives in. Hostnames from URLs are already canonical (the WHATWG URL
 * parser turns `127.1`, `0x7f.1`, `2130706433` and `0177.0.0.1` into `127.0.0.1`), and DNS answers
 * are canonical too, but IPv6 has many spellings of the same address and several ways of
 * embedding an IPv4 address (mapped, translated, NAT64, 6to4). We reduce every form to numbers
 * and classify those, so `[::ffff:7f00:1]` is loopback exactly like `127.0.0.1`.
 */

/** What an address is, from the guard's point of view. */
export type AddressClass =
  /** Routable on the public internet. */
  | 'public'
  /** 127.0.0.0/8, ::1 — this machine. */
  | 'loopback'
  /** 0.0.0.0/8, :: — "this host"; connecting to it reaches this machine on Linux. */
  | 'unspecified'
  /** RFC 1918, CGNAT 100.64/10, IPv6 unique-local fc00::/7, site-local fec0::/10, local NAT64. */
  | 'private'
  /** 169.254.0.0/16 (cloud metadata lives here), fe80::/10. */
  | 'linkLocal'
  /** Multicast, broadcast, documentation, benchmarking, unallocated, Teredo, …: never a server. */
  | 'reserved';

/** Parses a strict dotted-quad IPv4 address into a 32-bit unsigned number. */
export function parseIPv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    value = value * 256 + n;
  }
  return value;
}

/**
 * Parses an IPv6 address (without brackets or zone id) into eight 16-bit groups. Accepts `::`
 * compression and a trailing embedded IPv4 address (`::ffff:1.2.3.4`).
 */
export function parseIPv6(text: string): number[] | undefined {
  if (text.length === 0 || text.length > 45) return undefined;
  let tail: number[] = [];
  let body = text;
  const lastColon = body.lastIndexOf(':');
  if (lastColon >= 0 && body.slice(lastColon + 1).includes('.')) {
    const v4 = parseIPv4(body.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail = [Math.floor(v4 / 65536), v4 % 65536];
    // Keep the colon: `::1.2.3.4` becomes `::` and `a::1.2.3.4` becomes `a::`.
    body = body.slice(0, lastColon + 1);
    if (body.endsWith(':') && !body.endsWith('::')) body = body.slice(0, -1);
  }
  const halves = body.split('::');
  if (halves.length > 2) return undefined;
  const parseGroups = (s: string): number[] | undefined => {
    if (s === '') return [];
    const out: number[] = [];
    for (const g of s.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      out.push(Number.parseInt(g, 16));
    }
    return out;
  };
  const head = parseGroups(halves[0] ?? '');
  if (!head) return undefined;
  if (halves.length === 1) {
    const groups = [...head, ...tail];
    return groups.length === 8 ? groups : undefined;
  }
  const rest = parseGroups(halves[1] ?? '');
  if (!rest) return undefined;
  const fill = 8 - head.length - rest.length - tail.length;
  if (fill < 1) return undefined;
  return [...head, ...new Array<number>(fill).fill(0), ...rest, ...tail];
}

const v4 = (a: number, b: number, c: number, d: number) => ((a * 256 + b) * 256 + c) * 256 + d;
const inV4 = (ip: number, base: number, bits: number) => {
  const size = 2 ** (32 - bits);
  return ip >= base && ip < base + size;
};

/** Classifies a 32-bit IPv4 address. */
export function classifyIPv4Number(ip: number): AddressClass {
  if (inV4(ip, v4(0, 0, 0, 0), 8)) return 'unspecified';
  if (inV4(ip, v4(127, 0, 0, 0), 8)) return 'loopback';
  if (inV4(ip, v4(10, 0, 0, 0), 8)) return 'private';
  if (inV4(ip, v4(172, 16, 0, 0), 12)) return 'private';
  if (inV4(ip, v4(192, 168, 0, 0), 16)) return 'private';
  if (inV4(ip, v4(100, 64, 0, 0), 10)) return 'private';
  if (inV4(ip, v4(169, 254, 0, 0), 16)) return 'linkLocal';
  const reserved: Array<[number, number]> = [
    [v4(192, 0, 0, 0), 24], // IETF protocol assignments
    [v4(192, 0, 2, 0), 24], // TEST-NET-1
    [v4(192, 88, 99, 0), 24], // 6to4 relay anycast (deprecated)
    [v4(198, 18, 0, 0), 15], // benchmarking
    [v4(198, 51, 100, 0), 24], // TEST-NET-2
    [v4(203, 0, 113, 0), 24], // TEST-NET-3
    [v4(224, 0, 0, 0), 4], // multicast
    [v4(240, 0, 0, 0), 4], // reserved, includes 255.255.255.255
  ];
  for (const [base, bits] of reserved) if (inV4(ip, base, bits)) return 'reserved';
  return 'public';
}

const embeddedV4 = (g: number[], at: number) => (g[at] ?? 0) * 65536 + (g[at + 1] ?? 0);

/** Classifies an IPv6 address given as eight groups; embedded IPv4 addresses are classified as IPv4. */
export function classifyIPv6Groups(g: number[]): AddressClass {
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(8)) return 'unspecified';
  if (zeroUpTo(7) && g[7] === 1) return 'loopback';
  // ::ffff:a.b.c.d (IPv4-mapped): the kernel connects to the IPv4 address.
  if (zeroUpTo(5) && g[5] === 0xffff) return classifyIPv4Number(embeddedV4(g, 6));
  // ::ffff:0:a.b.c.d (IPv4-translated, SIIT).
  if (zeroUpTo(4) && g[4] === 0xffff && g[5] === 0) return classifyIPv4Number(embeddedV4(g, 6));
  // ::a.b.c.d (IPv4-compatible, deprecated): never a legitimate server address.
  if (zeroUpTo(6)) return 'reserved';
  // 64:ff9b::/96 (NAT64 well-known prefix): a translator forwards to the embedded IPv4 address.
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    return classifyIPv4Number(embeddedV4(g, 6));
  }
  // 64:ff9b:1::/48 (local-use NAT64).
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return 'private';
  // 2002::/16 (6to4): the IPv4 address sits in bits 16..48.
  if (g[0] === 0x2002) return classifyIPv4Number(embeddedV4(g, 1));
  const first = g[0] ?? 0;
  if (first === 0x2001 && g[1] === 0) return 'reserved'; // Teredo: obfuscated client address
  if (first === 0x2001 && g[1] === 0xdb8) return 'reserved'; // documentation
  if (first === 0x0100 && g.slice(1, 4).every((x) => x === 0)) return 'reserved'; // discard-only
  if ((first & 0xfe00) === 0xfc00) return 'private'; // unique local fc00::/7
  if ((first & 0xffc0) === 0xfe80) return 'linkLocal'; // fe80::/10
  if ((first & 0xffc0) === 0xfec0) return 'private'; // site-local fec0::/10 (deprecated)
  if ((first & 0xff00) === 0xff00) return 'reserved'; // multicast
  if ((first & 0xe000) === 0x2000) return 'public'; // 2000::/3, global unicast
  return 'reserved'; // everything else is unallocated
}

export interface ParsedAddress {
  family: 4 | 6;
  /** Canonical text usable as a socket host (no brackets). */
  address: string;
  kind: AddressClass;
}

/**
 * Parses an IP literal (IPv4 dotted quad, IPv6 with or without brackets, with or without a zone
 * id) and classifies it. Returns undefined when the text is not an IP address.
 */
export function classifyAddress(text: string): ParsedAddress | undefined {
  let t = text.trim();
  if (t.startsWith('[') && t.endsWith(']')) t = t.slice(1, -1);
  const zone = t.indexOf('%');
  if (zone >= 0) t = t.slice(0, zone);
  const n4 = parseIPv4(t);
  if (n4 !== undefined) return { family: 4, address: t, kind: classifyIPv4Number(n4) };
  if (!t.includes(':')) return undefined;
  const g = parseIPv6(t);
  if (!g) return undefined;
  return { family: 6, address: t, kind: classifyIPv6Groups(g) };
}
