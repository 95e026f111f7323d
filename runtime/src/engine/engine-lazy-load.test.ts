/**
 * What the engine loads: a run with `validate: false` must not load the validator (Ajv alone is
 * ~70 modules and ~10 MB resident in Node, a third of the engine's memory over a plain process in
 * the concurrency benchmark); a validated run loads it. Each case runs in a fresh Node process on
 * the TypeScript sources (the `source` export condition), so the module cache is its own.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');

// Runs a 3-agent chain on a scripted model, then lists the CommonJS modules in the cache (Ajv is
// CommonJS; modules imported from ESM land there too) and whether the schemas validator was loaded.
const script = (validate: boolean) => `
import { createRequire } from 'node:module';
const { runFlow } = await import(${JSON.stringify(join(here, 'index.ts'))});
const { chain } = await import(${JSON.stringify(join(here, 'testing', 'flows.ts'))});
const f = chain(3);
f.models = { default: { provider: 'scripted', script: [{ fallback: true, text: 'ok' }] } };
const r = await runFlow(f, 'go', { validate: ${validate} }).result;
const cache = Object.keys(createRequire(import.meta.url).cache);
console.log(JSON.stringify({ status: r.status, ajv: cache.some((k) => /[\\\\/]ajv[\\\\/]/.test(k)) }));
`;

function run(validate: boolean): { status: string; ajv: boolean } {
  const r = spawnSync(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', '--input-type=module', '-e', script(validate)],
    { cwd: join(root, 'runtime'), encoding: 'utf8', timeout: 60_000 },
  );
  if (r.status !== 0) throw new Error(`child failed (${r.status ?? r.signal}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!);
}

describe('engine module loading', () => {
  it('a run with validate: false completes without loading Ajv', () => {
    expect(run(false)).toEqual({ status: 'completed', ajv: false });
  }, 60_000);

  it('a validated run loads the validator (and Ajv with it)', () => {
    expect(run(true)).toEqual({ status: 'completed', ajv: true });
  }, 60_000);
});
