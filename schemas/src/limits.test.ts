import { describe, expect, it } from 'vitest';
import type { Flow } from './flow.js';
import { savedFlowBytes, serializeFlow, utf8Length } from './serialize.js';

const bytes = (s: string) => new TextEncoder().encode(s).byteLength;

describe('the size a flow has once saved', () => {
  it('utf8Length agrees with an encoder on any string, lone surrogates included', () => {
    const cases = [
      '',
      'abc',
      'é',
      '€',
      '🌊',
      'a🌊b€é',
      '\ud800',
      '\udc00x',
      'x\ud800',
      '\ud800\ud800',
      '\u007f\u0080\u07ff\u0800\uffff',
    ];
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    for (let i = 0; i < 500; i++) {
      let s = '';
      for (let j = 0; j < 24; j++)
        s += String.fromCharCode(Math.floor(rnd() * (rnd() < 0.5 ? 0x80 : 0x10000)));
      cases.push(s);
    }
    for (const c of cases) expect(utf8Length(c), JSON.stringify(c)).toBe(bytes(c));
  });

  it('savedFlowBytes is the byte length of serializeFlow, whatever the key order', () => {
    const flow = {
      nodes: [
        {
          config: { prompt: 'héllo 🌊\n"quoted"\t\u0001' },
          position: { y: 1, x: 0 },
          kind: 'start',
          id: 's',
        },
      ],
      version: 1,
      edges: [],
      name: 'Ünïcode',
      id: 'f',
      metadata: { deep: [[[{}]], [], {}], n: -1.5e-7 },
    } as unknown as Flow;
    expect(savedFlowBytes(flow)).toBe(bytes(serializeFlow(flow)));
  });
});
