import { describe, expect, it } from 'vitest';
import { StderrLines } from './stderr-lines.js';

describe('StderrLines', () => {
  it('splits lines across chunks and cuts long or endless lines', () => {
    const out: string[] = [];
    const s = new StderrLines((l) => out.push(l), { maxLineChars: 10 });
    s.push('ab');
    s.push('c\r\nde');
    s.push('f\n');
    s.push('x'.repeat(25));
    s.flush();
    expect(out).toEqual(['abc', 'def', 'x'.repeat(10), 'x'.repeat(10), 'x'.repeat(5)]);
  });

  it('lets a burst through, then rate-limits and reports what it dropped', () => {
    const out: string[] = [];
    const s = new StderrLines((l) => out.push(l), { burst: 5, perSecond: 1 });
    s.push(`${Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n')}\n`);
    s.flush();
    expect(out.slice(0, 5)).toEqual(['line 0', 'line 1', 'line 2', 'line 3', 'line 4']);
    expect(out.length).toBeLessThanOrEqual(7);
    expect(out.at(-1)).toMatch(/^\[9\d stderr lines dropped/);
  });
});
