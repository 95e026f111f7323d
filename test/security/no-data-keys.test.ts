/**
 * Issue 13, part 2 ("fix the class"): a scan of every package's sources, with the TypeScript
 * checker, for writes that make data a key of an ordinary object (`byNode[node.id] = …` on a `{}`)
 * and for object literals handed to a `Dict`. Tables keyed by data are `Map`s or `dict()`s
 * (null-prototype, typed `Dict<T>` from `@switchboard/schemas`); a write into anything else with a
 * key typed `string` fails this test, naming the file, line and statement.
 *
 * The scanner is checked first on a small package of its own, so this test cannot pass by
 * finding nothing.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { type Finding, scanAll, scanPackage } from './data-keys-scan.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'sb-data-keys-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const show = (f: Finding[]) => f.map((x) => `${x.file}:${x.line} [${x.rule}] ${x.text}`);

describe('no data as a key of a plain object', () => {
  it('the scanner finds each form of the pattern, and leaves Maps, arrays, dicts and literal keys alone', () => {
    mkdirSync(join(tmp, 'src'));
    writeFileSync(
      join(tmp, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext', noEmit: true },
        include: ['src'],
      }),
    );
    writeFileSync(
      join(tmp, 'src/sample.ts'),
      [
        'type Dict<T> = Record<string, T>;',
        'declare function dict<T>(): Dict<T>;',
        'export function bad(id: string, n: { id: string }) {',
        '  const byNode: Record<string, number> = {};',
        '  byNode[n.id] = 1;', // bad: 5
        '  byNode[id] ??= 2;', // bad: 6
        '  byNode[id]++;', // bad: 7
        '  delete byNode[id];', // bad: 8
        '  const counts: { [k: string]: number } = {};',
        '  counts[id] += 1;', // bad: 10
        '  const d: Dict<number> = {};', // literal-as-dict: 11
        '  return [byNode, counts, d];',
        '}',
        'export function good(id: string, i: number, k: "a" | "b") {',
        '  const m = new Map<string, number>(); m.set(id, 1);',
        '  const a: number[] = []; a[i] = 1;',
        '  const d = dict<number>(); d[id] = 1; delete d[id];',
        '  const o: Record<string, number> = {}; o[k] = 1; o.x = 2;',
        '  return [m, a, d, o];',
        '}',
      ].join('\n'),
    );
    const found = scanPackage(join(tmp, 'tsconfig.json'), tmp);
    expect(found.map((f) => [f.line, f.rule])).toEqual([
      [5, 'data-key-write'],
      [6, 'data-key-write'],
      [7, 'data-key-write'],
      [8, 'data-key-write'],
      [10, 'data-key-write'],
      [11, 'literal-as-dict'],
    ]);
  });

  it('schemas, nodes, runtime and editor have no such write', { timeout: 180_000 }, () => {
    expect(show(scanAll(root))).toEqual([]);
  });
});
