/** `switchboard diff`: exit 0 when two stored runs agree (time aside), 1 when they differ, 2 on a usage error. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { storeRun } from './helpers.js';

const FLOW = fileURLToPath(new URL('../../flows/support-triage.json', import.meta.url));
const data = mkdtempSync(join(tmpdir(), 'sb-diff-'));
afterAll(() => rmSync(data, { recursive: true, force: true }));

const BILLING = 'I was charged twice on invoice INV-1042, please refund';
let a1: string;
let a2: string;
let b: string;
let c: string;

beforeAll(async () => {
  a1 = await storeRun(data, FLOW, BILLING, { approval: 'yes' });
  a2 = await storeRun(data, FLOW, BILLING, { approval: 'yes' });
  b = await storeRun(data, FLOW, 'The app crashes on start since yesterday', {});
  c = await storeRun(data, FLOW, BILLING, {});
});

describe('switchboard diff', () => {
  it('exits 0 for two runs that took the same path with the same outputs and tokens', async () => {
    const r = await cli('diff', a1, a2, '--data', data);
    expect(r.code, r.out + r.err).toBe(0);
    expect(r.out).toContain('path: begin → to-billing → decided → billing-done → approved → sent');
    expect(r.out).toContain('the runs agree');
    expect(r.out).toMatch(/time \(A\/B ms, not compared\)/);
  });

  it('exits 1 and names the differences: path, node outputs, tokens, end state', async () => {
    const r = await cli('diff', a1, b, '--data', data);
    expect(r.code).toBe(1);
    expect(r.out).toContain('≠ paths part at handover 2: to-billing and to-tech');
    expect(r.out).toMatch(/≠ node "billing-agent" output 1 \(of 1 and 0\)/);
    expect(r.out).toMatch(/≠ node "diagnoser" used 0 and \d+ tokens/);

    const f = await cli('diff', a1, c, '--data', data, '--json');
    expect(f.code).toBe(1);
    const j = JSON.parse(f.out);
    expect(j.same).toBe(false);
    expect(j.a.status).toBe('completed');
    expect(j.b.status).toBe('failed');
    expect(j.differences.map((d: { what: string }) => d.what)).toEqual(
      expect.arrayContaining(['status', 'output', 'path']),
    );
    expect(j.a.nodes.find((n: { node: string }) => n.node === 'billing-agent').tokens).toBeGreaterThan(0);
  });

  it('exits 2 on a run that is not there or not a run id', async () => {
    expect((await cli('diff', a1, 'run_nothere', '--data', data)).code).toBe(2);
    const r = await cli('diff', a1, '../etc', '--data', data);
    expect(r.code).toBe(2);
    expect(r.err).toContain('not a run id');
    expect((await cli('diff', a1)).code).toBe(2);
  });
});
