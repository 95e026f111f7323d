import { describe, expect, it } from 'vitest';
import { classifyAddress, parseIPv4, parseIPv6 } from './ip.js';

describe('IP parsing', () => {
  it('parses dotted quads strictly', () => {
    expect(parseIPv4('1.2.3.4')).toBe(0x01020304);
    for (const bad of ['1.2.3', '1.2.3.256', '1.2.3.4.5', '0x7f.0.0.1', '', '1..2.3']) {
      expect(parseIPv4(bad)).toBeUndefined();
    }
  });

  it('parses IPv6 spellings to the same groups', () => {
    const loop = [0, 0, 0, 0, 0, 0, 0, 1];
    expect(parseIPv6('::1')).toEqual(loop);
    expect(parseIPv6('0:0:0:0:0:0:0:1')).toEqual(loop);
    expect(parseIPv6('0000:0000::0001')).toEqual(loop);
    expect(parseIPv6('::ffff:127.0.0.1')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x7f00, 1]);
    expect(parseIPv6('1:2:3:4:5:6:1.2.3.4')).toEqual([1, 2, 3, 4, 5, 6, 0x0102, 0x0304]);
    expect(parseIPv6('1::')).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    for (const bad of ['1:::2', '1::2::3', '12345::', '1:2:3:4:5:6:7:8:9', 'g::1', '::1.2.3', ':1']) {
      expect(parseIPv6(bad)).toBeUndefined();
    }
  });

  it('classifies embedded IPv4 by the IPv4 address', () => {
    expect(classifyAddress('[::ffff:10.1.2.3]')?.kind).toBe('private');
    expect(classifyAddress('64:ff9b::8.8.8.8')?.kind).toBe('public');
    expect(classifyAddress('2002:0808:0808::1')?.kind).toBe('public');
    expect(classifyAddress('2002:a9fe:a9fe::1')?.kind).toBe('linkLocal');
    expect(classifyAddress('fe80::1%eth0')?.kind).toBe('linkLocal');
    expect(classifyAddress('2606:4700::1111')?.kind).toBe('public');
    expect(classifyAddress('8.8.8.8')?.kind).toBe('public');
    expect(classifyAddress('example.com')).toBeUndefined();
  });
});
