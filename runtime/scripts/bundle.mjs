// Bundles the library entry (src/index.ts) into dist/lib/ — run by `build` after tsc.
//
// Why: Node pays per module file (~50 KB resident each). @sinclair/typebox alone is ~200 files
// (~14 MB RSS when loaded file by file, ~1.8 MB as one bundle), and the node kinds build their
// config schemas with it at import, so a process running flows carried that cost; it put the
// engine over the memory gate of the concurrency benchmark (runtime/bench/engine, gate e).
//
// What: our workspace packages and the small libraries they use are bundled in; every dependency
// of this package (openai, MCP SDK, ajv, fastify, …) stays an ordinary import, so it is still
// resolved from node_modules and still loaded only when needed. `splitting` keeps each lazy
// `import()` (interpreter, validator, openai provider, MCP, ACP) a chunk of its own, loaded on
// first use. The CLI keeps running tsc's output (dist/cli), which is unaffected.
import { readFileSync, rmSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** Packages compiled into the bundle: ours (through their `source` condition) and what they use. */
const BUNDLED = new Set([
  '@switchboard/schemas',
  '@switchboard/nodes',
  '@sinclair/typebox',
  '@cfworker/json-schema',
]);
/** Packages left as imports: this package's own dependencies, so Node can resolve them from here. */
const EXTERNAL = new Set(Object.keys(pkg.dependencies ?? {}).filter((n) => !BUNDLED.has(n)));

const packageName = (spec) =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');

// Any other bare import fails the build: left external it would not resolve from this package
// once installed, and bundling it silently could pull in a large library.
const dependencyPolicy = {
  name: 'dependency-policy',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (isBuiltin(args.path)) return { path: args.path, external: true };
      const name = packageName(args.path);
      if (EXTERNAL.has(name)) return { path: args.path, external: true };
      if (BUNDLED.has(name)) return undefined;
      return {
        errors: [
          {
            text: `${args.path} (imported by ${args.importer}) is neither a dependency of ${pkg.name} nor in BUNDLED (runtime/scripts/bundle.mjs)`,
          },
        ],
      };
    });
  },
};

const outdir = join(root, 'dist', 'lib');
rmSync(outdir, { recursive: true, force: true }); // chunk names carry hashes: drop stale ones

const result = await build({
  absWorkingDir: root,
  entryPoints: { index: 'src/index.ts' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  conditions: ['source'],
  chunkNames: 'chunks/[name]-[hash]',
  // No keepNames: it wraps every closure in a __name() call, a cost on the engine's hot path.
  sourcemap: true,
  metafile: true,
  logLevel: 'warning',
  plugins: [dependencyPolicy],
});

// The library must not reach code that locates files relative to itself: inside a chunk under
// dist/lib/ such paths would point elsewhere than in src/ or in tsc's dist/.
const relative = Object.keys(result.metafile.inputs).filter(
  (f) =>
    !f.includes('node_modules') &&
    /import\.meta\.(url|dirname|filename)/.test(readFileSync(join(root, f), 'utf8')),
);
if (relative.length > 0) {
  console.error(
    `bundle: these modules use import.meta paths and must stay out of the library:\n  ${relative.join('\n  ')}`,
  );
  process.exit(1);
}
