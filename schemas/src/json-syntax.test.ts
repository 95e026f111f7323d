import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findJsonSyntaxError } from './json-syntax.js';

function accepts(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

describe('findJsonSyntaxError', () => {
  it('names line, column and reason', () => {
    expect(findJsonSyntaxError('{\n  "a": 1,\n  b: 2\n}')).toMatchObject({
      line: 3,
      column: 3,
      reason: 'expected a property name in double quotes',
    });
    expect(findJsonSyntaxError('[1, 2')?.reason).toBe('unexpected end of the document (expected "," or "]")');
    expect(findJsonSyntaxError('{"a": "x\ny"}')?.reason).toContain('control character');
    expect(findJsonSyntaxError('{} {}')?.reason).toContain('after the end');
    expect(findJsonSyntaxError('{"a": 01}')?.reason).toBe('expected "," or "}"');
  });

  it('agrees with JSON.parse on which texts are JSON', () => {
    const seed = Date.now() ^ (Math.random() * 0x7fffffff);
    console.log(`json-syntax property seed: ${seed}`);
    const mutated = fc
      .tuple(fc.json({ maxDepth: 4 }), fc.nat(), fc.string({ maxLength: 3 }), fc.nat({ max: 3 }))
      .map(([t, at, ins, del]) => {
        const k = at % (t.length + 1);
        return t.slice(0, k) + ins + t.slice(k + del);
      });
    fc.assert(
      fc.property(fc.oneof(fc.json({ maxDepth: 4 }), mutated), (t) => {
        expect(findJsonSyntaxError(t) === undefined).toBe(accepts(t));
      }),
      { seed, numRuns: 2000 },
    );
  });
});
