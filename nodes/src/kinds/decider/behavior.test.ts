import { checkAgainstSchema } from '@switchboard/schemas/core';
import { describe, expect, it } from 'vitest';
import { arbiterSchema } from './behavior.js';

const candidates = [
  { edgeId: 'to-a', target: 'a', label: 'A' },
  { edgeId: 'to-b', target: 'b', label: 'B' },
];

describe('the LLM arbiter answer format', () => {
  it('one choice: an enum of the candidate edge ids, "done" only when allowed', () => {
    expect(arbiterSchema(candidates, {}).properties).toMatchObject({ choice: { enum: ['to-a', 'to-b'] } });
    const s = arbiterSchema(candidates, { allowDone: true });
    expect(checkAgainstSchema(s, { choice: 'done', reason: 'x' }).valid).toBe(true);
    expect(checkAgainstSchema(arbiterSchema(candidates, {}), { choice: 'done', reason: 'x' }).valid).toBe(
      false,
    );
    expect(checkAgainstSchema(s, { choice: 'to-c', reason: 'x' }).valid).toBe(false);
  });

  it('multi-choice: one id or an array of candidate ids', () => {
    const s = arbiterSchema(candidates, { allowMultiple: true });
    expect(checkAgainstSchema(s, { choice: ['to-a', 'to-b'], reason: 'x' }).valid).toBe(true);
    expect(checkAgainstSchema(s, { choice: 'to-b', reason: 'x' }).valid).toBe(true);
    expect(checkAgainstSchema(s, { choice: ['to-a', 'elsewhere'], reason: 'x' }).valid).toBe(false);
  });
});
