import { describe, expect, it } from 'vitest';
import { flowTextHash } from '../model/flowDoc.js';
import { roomSaveView } from './saveState.js';

const text = '{"id":"x"}\n';
const hash = flowTextHash(text);

describe('what the toolbar says about a room being saved', () => {
  it('follows the server’s status for the document shown, and says "saving…" for a newer one', () => {
    expect(roomSaveView(undefined, text)).toBeUndefined();
    expect(roomSaveView({ state: 'saved', rev: 3, hash }, text)).toMatchObject({
      kind: 'saved',
      saved: true,
    });
    expect(roomSaveView({ state: 'unchanged', rev: 3, hash }, text)).toMatchObject({ kind: 'saved' });
    expect(roomSaveView({ state: 'saved', rev: 3, hash }, `${text} `)).toMatchObject({
      kind: 'pending',
      saved: false,
    });
    expect(roomSaveView({ state: 'unchanged', hash }, text)).toMatchObject({ kind: 'new', saved: false });
    expect(roomSaveView({ state: 'invalid', errors: 2, hash }, text)).toMatchObject({
      kind: 'invalid',
      label: 'not saved: 2 problems',
    });
    expect(roomSaveView({ state: 'id-mismatch', hash }, text)?.kind).toBe('renamed');
    // A document changed since it was last serialized (typing): saving, whatever the last status.
    expect(roomSaveView({ state: 'saved', rev: 3, hash }, undefined)).toMatchObject({ kind: 'pending' });
    expect(roomSaveView(undefined, undefined)).toBeUndefined();
    expect(roomSaveView({ state: 'saved', rev: 3, hash }, undefined, 'too big')?.kind).toBe('refused');
    expect(flowTextHash(text)).toBe(hash);
    expect(flowTextHash(`${text}x`)).not.toBe(hash);
  });
});
