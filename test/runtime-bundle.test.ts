/**
 * The published library entry of @switchboard/runtime is an esbuild bundle (dist/lib/, made by
 * runtime/scripts/bundle.mjs after tsc). In a fresh Node process that imports the package by name
 * (as a host would), it must resolve to the bundle, export what tsc's build of src/index.ts
 * exports, keep the validator (Ajv) out of a `validate: false` run, load it for a validated run,
 * and load the lazily imported openai provider chunk (against a real local HTTP server).
 * Runs only after `pnpm build`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'runtime/dist');
const url = (p: string) => JSON.stringify(pathToFileURL(join(dist, p)).href);

const script = `
import { createRequire } from 'node:module';
const resolved = import.meta.resolve('@switchboard/runtime');
const rt = await import('@switchboard/runtime');
const tsc = await import(${url('index.js')});
const { chain } = await import(${url('engine/testing/flows.js')});
const { startFakeOpenAIServer } = await import(${url('models/testing/fake-openai-server.js')});
const cache = createRequire(import.meta.url).cache;
const ajv = () => Object.keys(cache).some((k) => /[\\\\/]ajv[\\\\/]/.test(k));
const out = { resolved, exports: Object.keys(rt).sort(), tscExports: Object.keys(tsc).sort() };
const f = chain(3);
f.models = { default: { provider: 'scripted', script: [{ fallback: true, text: 'ok' }] } };
out.unvalidated = [(await rt.runFlow(f, 'go', { validate: false }).result).status, ajv()];
out.validated = [(await rt.runFlow(f, 'go').result).status, ajv()];
const fake = await startFakeOpenAIServer({ fallback: { text: 'from the fake server' } });
try {
  const g = chain(2);
  g.models = { default: { provider: 'openai', baseURL: fake.url, model: 'm' } };
  const r = await rt.runFlow(g, 'hello').result;
  out.openai = [r.status, r.output, fake.requests.length];
} finally {
  await fake.close();
}
console.log(JSON.stringify(out));
`;

describe('the bundled library entry', () => {
  it.runIf(existsSync(join(dist, 'lib/index.js')))(
    'resolves by package name, exports the same names as tsc output, loads its chunks lazily',
    () => {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: join(root, 'test'), // resolves @switchboard/runtime as a dependent package does
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, SWITCHBOARD_ALLOW_LOCAL_MODELS: '1' },
      });
      expect(r.status, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
      expect(out.resolved).toBe(pathToFileURL(join(dist, 'lib/index.js')).href);
      expect(out.exports, 'runtime/dist is older than the sources? run `pnpm build`').toEqual(out.tscExports);
      expect(out.exports).toContain('runFlow');
      expect(out.unvalidated).toEqual(['completed', false]);
      expect(out.validated).toEqual(['completed', true]);
      expect(out.openai).toEqual(['completed', 'from the fake server', 2]);
    },
    60_000,
  );
});
