/**
 * `@switchboard/schemas` runs in the editor too: its sources import no Node built-ins and use
 * no Node-only globals (Buffer, process), and never evaluate code.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const dir = fileURLToPath(new URL('.', import.meta.url));
const sources = readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));

describe('schemas is browser-safe', () => {
  it.each(sources)('%s', (f) => {
    const code = readFileSync(`${dir}/${f}`, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    expect(code).not.toMatch(/from ['"](node:|fs|path|os|child_process|crypto)['"/]/);
    expect(code).not.toMatch(/\b(Buffer|process)\./);
    expect(code).not.toMatch(/\beval\(|new Function\(/);
  });
});
