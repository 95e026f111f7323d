import { describe, expect, it } from 'vitest';
import {
  DestinationError,
  operatorOutboundEntries,
  outboundPolicyFrom,
  parseDestination,
} from './destinations.js';
import { checkUrl, type HostResolver } from './policy.js';

const dns: HostResolver = async (h) =>
  h === 'mcp.internal' ? ['10.1.2.3'] : h === 'meta.internal' ? ['169.254.169.254'] : ['93.184.216.34'];

describe('--allow-outbound', () => {
  it('parses loopback, private, HOST[:PORT] and CIDR; refuses anything else by name', () => {
    expect(parseDestination('loopback')).toBe('loopback');
    expect(parseDestination('PRIVATE')).toBe('private');
    expect(parseDestination('mcp.internal:8080')).toEqual({ kind: 'host', host: 'mcp.internal', port: 8080 });
    expect(parseDestination('[::1]:3000')).toEqual({ kind: 'host', host: '::1', port: 3000 });
    expect(parseDestination('10.0.0.0/8')).toMatchObject({ kind: 'cidr', family: 4, bits: 8 });
    expect(parseDestination('fd00::/8')).toMatchObject({ kind: 'cidr', family: 6, bits: 8 });
    for (const bad of ['', 'a b', 'host:port', '10.0.0.0/33', 'x/8', 'h:70000'])
      expect(() => parseDestination(bad), bad).toThrow(DestinationError);
    expect(() => parseDestination('host:port')).toThrow('--allow-outbound "host:port"');
  });

  it('widens only what it names: a host and port, a range, a class', async () => {
    const p = outboundPolicyFrom(['mcp.internal:8080', '192.168.5.0/24']);
    expect((await checkUrl('http://mcp.internal:8080/mcp', p, dns)).ok).toBe(true);
    expect((await checkUrl('http://mcp.internal:8081/mcp', p, dns)).ok).toBe(false);
    expect((await checkUrl('http://192.168.5.7/', p, dns)).ok).toBe(true);
    expect((await checkUrl('http://192.168.6.7/', p, dns)).ok).toBe(false);
    expect((await checkUrl('http://127.0.0.1/', p, dns)).ok).toBe(false);
    expect((await checkUrl('http://example.com/', p, dns)).ok).toBe(true);
    const loop = outboundPolicyFrom(['loopback']);
    expect((await checkUrl('http://localhost:3000/', loop, dns)).ok).toBe(true);
    expect((await checkUrl('http://10.0.0.1/', loop, dns)).ok).toBe(false);
    // Reserved targets stay refused whatever is allowed.
    expect((await checkUrl('http://224.0.0.1/', outboundPolicyFrom(['224.0.0.0/4']), dns)).ok).toBe(false);
    // A refusal names the flag that would allow it.
    const r = await checkUrl('http://localhost:3000/', {}, dns);
    expect(r.ok ? '' : r.reason).toBe(
      'refused: localhost is a loopback address; the operator can allow it with --allow-outbound loopback (or --allow-outbound localhost:3000)',
    );
    const m = await checkUrl('http://meta.internal/', outboundPolicyFrom(['private']), dns);
    expect(m.ok).toBe(false);
  });

  it('reads SWITCHBOARD_ALLOW_OUTBOUND, and SWITCHBOARD_ALLOW_LOCAL_MODELS as loopback + private', () => {
    expect(operatorOutboundEntries(['x:1'], { SWITCHBOARD_ALLOW_OUTBOUND: 'loopback, 10.0.0.0/8' })).toEqual([
      'loopback',
      '10.0.0.0/8',
      'x:1',
    ]);
    expect(operatorOutboundEntries([], { SWITCHBOARD_ALLOW_LOCAL_MODELS: '1' })).toEqual([
      'loopback',
      'private',
    ]);
    expect(operatorOutboundEntries(undefined, {})).toEqual([]);
  });
});
