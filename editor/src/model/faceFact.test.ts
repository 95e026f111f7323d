import { defaultRegistry } from '@switchboard/nodes';
import { describe, expect, it } from 'vitest';
import { countConditions, faceFact } from './faceFact.js';

const fact = (kind: string, config: Record<string, unknown>) => faceFact(defaultRegistry.get(kind), config);

describe('the one fact on a node face', () => {
  it('says the model, the mode, the conditions, the server', () => {
    expect(fact('agent', { role: 'Writes', model: 'gpt' })).toBe('model: gpt');
    expect(fact('team', { mode: 'groupChat', termination: { maxTurns: 4 } })).toBe('group chat · ≤ 4 turns');
    expect(fact('team', { mode: 'fsm' })).toBe('state machine');
    expect(
      fact('decider', {
        strategy: 'rules',
        rules: [
          {
            when: { all: [{ path: 'a', op: 'eq', value: 1 }, { not: { path: 'b', op: 'exists' } }] },
            to: 'x',
          },
          { when: { path: 'c', op: 'gt', value: 2 }, to: 'y' },
        ],
      }),
    ).toBe('3 conditions · 2 rules');
    expect(fact('decider', { strategy: 'rules', rules: [{ when: { always: true }, to: 'x' }] })).toBe(
      '0 conditions · 1 rule',
    );
    expect(fact('decider', { strategy: 'llm', model: 'arbiter' })).toBe('LLM arbiter · arbiter');
    expect(fact('tool', { server: 'docs' })).toBe('server: docs');
    expect(fact('note', { text: 'hello' })).toBe('');
  });

  it('falls back to the kind’s own summary, and to nothing for an unknown kind or a bad config', () => {
    expect(fact('end', { output: 'last' })).toBe('output: last');
    expect(faceFact(undefined, {})).toBe('');
    expect(countConditions({ any: [] })).toBe(0);
    expect(fact('decider', { strategy: 'rules', rules: [null] })).toBe('0 conditions · 1 rule');
  });
});
