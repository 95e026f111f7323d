import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { EMPTY_VIEW, fold } from '../run/transcript.js';
import { onlyDraftsGrew } from './calmDrafts.js';

const ev = (seq: number, e: Record<string, unknown>) => ({ runId: 'r', seq, ts: seq, ...e }) as RunEvent;

describe('onlyDraftsGrew', () => {
  const start = fold(EMPTY_VIEW, 'r', [
    ev(1, { type: 'run.started', flowId: 'f', input: 'x' }),
    ev(2, { type: 'model.delta', nodeId: 'a', text: 'Hel' }),
    ev(3, { type: 'model.delta', nodeId: 'b', text: 'Wor' }),
  ]);

  it('holds for pieces added to drafts already shown', () => {
    const grown = fold(start, 'r', [
      ev(4, { type: 'model.delta', nodeId: 'a', text: 'lo' }),
      ev(5, { type: 'model.delta', nodeId: 'b', text: 'ld' }),
    ]);
    expect(grown.entries.map((e) => e.text)).toEqual(['Hello', 'World']);
    expect(onlyDraftsGrew(start, grown)).toBe(true);
    expect(onlyDraftsGrew(start, start)).toBe(true);
  });

  it('fails for a new draft, a closed draft, a message, or a new phase', () => {
    const newDraft = fold(start, 'r', [ev(4, { type: 'model.delta', nodeId: 'c', text: 'x' })]);
    expect(onlyDraftsGrew(start, newDraft)).toBe(false);
    const message = fold(start, 'r', [
      ev(4, {
        type: 'message',
        nodeId: 'a',
        message: { seq: 1, role: 'assistant', author: 'a', content: 'Hello' },
      }),
    ]);
    expect(onlyDraftsGrew(start, message)).toBe(false);
    const done = fold(start, 'r', [ev(4, { type: 'run.completed', output: 'ok' })]);
    expect(onlyDraftsGrew(start, done)).toBe(false);
    expect(onlyDraftsGrew(start, { ...start, runId: 'other' })).toBe(false);
  });
});
