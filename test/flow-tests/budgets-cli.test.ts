/** `switchboard run --max-cost / --max-tokens`: a named stop after a warning; bad values are usage errors. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { afterAll, describe, expect, it } from 'vitest';
import { chain } from '../../runtime/src/engine/testing/index.js';
import { cli } from '../support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'sb-budget-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Ten agents in a chain, each reply 1000 prompt + 500 completion tokens at $2/$8 per million: $0.006 a call.
const f = chain(10);
f.models.default = {
  provider: 'scripted',
  script: [{ fallback: true, text: 'ok', usage: { promptTokens: 1000, completionTokens: 500 } }],
  pricing: { input: 2, output: 8 },
};
const file = join(dir, 'chain.json');
writeFileSync(file, JSON.stringify(f));

const lines = (out: string) =>
  out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as RunEvent & Record<string, unknown>);

describe('switchboard run budgets', () => {
  it('--max-cost stops the run with a named budget stop, after a warning', async () => {
    const r = await cli('run', file, '--input', 'go', '--max-cost', '0.02', '--events', 'jsonl');
    expect(r.code).toBe(1);
    const events = lines(r.out);
    const types = events.map((e) => e.type);
    expect(events.filter((e) => e.type === 'model.completed')).toHaveLength(4);
    expect(types.indexOf('budget.warning')).toBeLessThan(types.indexOf('budget.exceeded'));
    expect(events.find((e) => e.type === 'budget.exceeded')).toMatchObject({
      budget: 'cost',
      limit: 0.02,
      used: 0.024,
    });
    expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'budget_exceeded' } });

    const pretty = await cli('run', file, '--input', 'go', '--max-cost', '0.02');
    expect(pretty.code).toBe(1);
    expect(pretty.err).toContain('! cost budget at 0.018 of 0.02');
    expect(pretty.err).toContain('! cost budget exceeded (0.024 > 0.02)');
  });

  it('--max-tokens overrides the flow and stops the run', async () => {
    const r = await cli('run', file, '--input', 'go', '--max-tokens', '3000', '--events', 'jsonl');
    expect(r.code).toBe(1);
    expect(lines(r.out).find((e) => e.type === 'budget.exceeded')).toMatchObject({
      budget: 'tokens',
      used: 4500,
    });
    expect((await cli('run', file, '--input', 'go', '--max-tokens', '100000')).code).toBe(0);
  });

  it('a bad value is a usage error', async () => {
    const r = await cli('run', file, '--input', 'go', '--max-cost', 'lots');
    expect(r.code).toBe(2);
    expect(r.err).toContain('--max-cost lots');
    expect((await cli('run', file, '--input', 'go', '--max-tokens', '1.5')).code).toBe(2);
  });
});
