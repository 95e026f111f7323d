import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CATALOG_VERSION, Catalog, type FlowRecord } from './catalog.js';
import { StoreError } from './errors.js';
import { injectFaults } from './faults.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sb-catalog-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const flow = (id: string, description = ''): Flow =>
  ({ version: 1, id, name: id, description, nodes: [], edges: [] }) as unknown as Flow;
const rec = (f: Flow, rev = 1): FlowRecord => ({ flow: f, rev, createdAt: 't', updatedAt: 't' });

describe('catalog layout: a small index and one file per flow', () => {
  it("a small write's bytes do not grow with the other flows' size", async () => {
    const file = join(dir, 'catalog.json');
    const c = await Catalog.open(file);
    c.data.flows.small = rec(flow('small', 'v0'));
    await c.save();
    c.data.flows.small = rec(flow('small', 'v1'), 2);
    await c.save();
    const alone = c.lastWriteBytes;
    // Eight flows of 1 MiB each stored beside it (the 8 × 8 MiB, scaled down: the point
    // is that the cost does not depend on them at all).
    const big = 'x'.repeat(1024 * 1024);
    for (let i = 0; i < 8; i++) c.data.flows[`big${i}`] = rec(flow(`big${i}`, big));
    await c.save();
    expect(c.lastWriteBytes).toBeGreaterThan(8 * 1024 * 1024);
    c.data.flows.small = rec(flow('small', 'v2'), 3);
    await c.save();
    const withBig = c.lastWriteBytes;
    // Only the small flow and index records (eight more lines of them) were written.
    expect(withBig).toBeLessThan(alone + 8 * 200);
    expect(withBig).toBeLessThan(4096);
    expect(statSync(file).size).toBeLessThan(4096);
    // A status change of a run writes no flow at all.
    c.data.settings.n = 1;
    await c.save();
    expect(c.lastWriteBytes).toBe(statSync(file).size);

    // What was written reads back whole, old revisions' files are gone.
    const again = await Catalog.open(file);
    expect(again.data.flows.small!.flow.description).toBe('v2');
    expect(again.data.flows.small!.rev).toBe(3);
    expect(again.data.flows.big7!.flow.description).toHaveLength(big.length);
    expect(readdirSync(join(dir, 'flows'))).toHaveLength(9);
  });

  it('migrates a version-1 catalog (flows inline) on open, and keeps the data', async () => {
    const file = join(dir, 'catalog.json');
    const v1 = {
      format: 'switchboard-catalog',
      version: 1,
      flows: { a: rec(flow('a', 'alpha'), 4), 'b:c': rec(flow('b:c', 'beta')) },
      runs: {
        r1: {
          id: 'r1',
          flowId: 'a',
          flowName: 'a',
          status: 'completed',
          createdAt: 't',
          updatedAt: 't',
          lastSeq: 3,
          counters: { turns: 1, promptTokens: 2, completionTokens: 3, toolCalls: 0 },
          resumes: 0,
          source: 'api',
        },
      },
      settings: { k: 'v' },
    };
    writeFileSync(file, JSON.stringify(v1));
    const c = await Catalog.open(file);
    expect(c.data.flows.a).toMatchObject({ rev: 4, flow: { description: 'alpha' } });
    expect(c.data.flows['b:c']!.flow.description).toBe('beta');
    expect(c.data.runs.r1!.status).toBe('completed');
    const onDisk = JSON.parse(readFileSync(file, 'utf8'));
    expect(onDisk.version).toBe(CATALOG_VERSION);
    expect(onDisk.flows.a.flow).toBeUndefined();
    expect(onDisk.settings).toEqual({ k: 'v' });
    const reopened = await Catalog.open(file);
    expect(reopened.data.flows.a!.flow.description).toBe('alpha');
    expect(Object.keys(reopened.data.flows).sort()).toEqual(['a', 'b:c']);
  });

  it('a failed index write leaves the old catalog whole; its new flow file is removed later', async () => {
    const file = join(dir, 'catalog.json');
    const c = await Catalog.open(file);
    c.data.flows.a = rec(flow('a', 'one'));
    await c.save();
    const old = c.data.flows.a!;
    c.data.flows.a = rec(flow('a', 'two'), 2);
    const clear = injectFaults({ path: 'catalog.json', ops: ['write'], code: 'ENOSPC' });
    const err = await c.save().catch((e: unknown) => e);
    clear();
    expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
    expect(readdirSync(join(dir, 'flows'))).toHaveLength(2);
    // What the caller does on failure (FlowRecords): memory goes back to what is on disk.
    c.data.flows.a = old;
    expect((await Catalog.open(file)).data.flows.a!.flow.description).toBe('one');
    await c.save();
    expect(readdirSync(join(dir, 'flows'))).toHaveLength(1);
  });

  it('a left-over flow file is swept at open; a missing one is reported, never replaced', async () => {
    const file = join(dir, 'catalog.json');
    const c = await Catalog.open(file);
    c.data.flows.a = rec(flow('a'));
    await c.save();
    writeFileSync(join(dir, 'flows', 'a.deadbeef.r9.00000000.json'), '{"id":"a"}');
    await Catalog.open(file);
    expect(readdirSync(join(dir, 'flows'))).toHaveLength(1);
    const [only] = readdirSync(join(dir, 'flows'));
    rmSync(join(dir, 'flows', only!));
    const err = await Catalog.open(file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).message).toContain(only);
    expect(existsSync(file)).toBe(true);
  });

  it('ids are never keys of Object.prototype', async () => {
    const c = await Catalog.open(join(dir, 'catalog.json'));
    expect(c.data.runs.constructor).toBeUndefined();
    expect(Object.getPrototypeOf(c.data.flows)).toBeNull();
    expect(c.data.flows[JSON.parse('"__proto__"') as string]).toBeUndefined();
    expect(c.data.flows.toString).toBeUndefined();
  });
});
