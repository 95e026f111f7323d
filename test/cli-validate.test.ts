import { describe, expect, it } from 'vitest';
import { main } from '../runtime/src/cli/main.js';

async function cli(...args: string[]) {
  let out = '';
  let err = '';
  const code = await main(['node', 'switchboard', ...args], {
    out: (s) => void (out += s),
    err: (s) => void (err += s),
    isTTY: false,
  });
  return { code, out, err };
}

describe('switchboard validate', () => {
  it('exits 2 on usage errors', async () => {
    expect((await cli('validate')).code).toBe(2);
    expect((await cli('frobnicate')).code).toBe(2);
  });

  it('exits 1 and names the file when it cannot be read', async () => {
    const r = await cli('validate', '/nonexistent/flow.json');
    expect(r.code).toBe(1);
    expect(r.err).toContain('/nonexistent/flow.json: /: ');
  });
});
