import { describe, expect, it } from 'vitest';
import { cleanAuthor, deletedCloseReason } from './flow-lifecycle.js';

describe('authors and close reasons', () => {
  it('a display name is decoded, cleaned and bounded; nothing usable is no name', () => {
    expect(cleanAuthor(encodeURIComponent('Ada Lovelace'))).toBe('Ada Lovelace');
    expect(cleanAuthor(encodeURIComponent('Émile'))).toBe('Émile');
    expect(cleanAuthor('100%')).toBe('100%');
    expect(cleanAuthor(encodeURIComponent('a\nb\u0000c'))).toBe('a b c');
    expect([...cleanAuthor('x'.repeat(100))!].length).toBe(40);
    for (const none of [undefined, '', '   ', encodeURIComponent('\u0007')])
      expect(cleanAuthor(none)).toBeUndefined();
  });

  it('the close reason fits a close frame (123 bytes) with whole characters', () => {
    expect(deletedCloseReason({ deletedBy: 'Ada' })).toBe('deleted by Ada');
    const long = deletedCloseReason({ deletedBy: '😀'.repeat(40) });
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(123);
    expect(long).toMatch(/^deleted by (😀)+$/u);
  });
});
