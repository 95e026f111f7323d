// Bundles the CLI and the library entry of the release package with esbuild, from the workspace
// sources (the `source` export condition): every @switchboard/* package is compiled in, every
// other bare import stays an import and becomes a dependency of the release package, with the
// version range of the workspace package that declares it. Whatever commands and modules the
// tree holds are bundled; nothing here lists them.
import { readFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { join, relative } from 'node:path';
import { packageName, packageOf, ROOT } from './workspace.mjs';

/**
 * Third-party packages compiled in as well, as runtime/scripts/bundle.mjs does for the library:
 * small, made of many module files, and loaded by every command at start (Node pays per file:
 * the CLI's `--version` takes half the CPU time with them inlined, a run ~6 MB less memory).
 * They stay dependencies of the package: our typings import theirs.
 */
const INLINED = new Set(['@sinclair/typebox', '@cfworker/json-schema']);

/** Modules that locate files relative to themselves in a way that holds in the release layout. */
const LOCATION_SAFE = new Set(['runtime/src/server/editor-dir.ts']);

const isOurs = (workspace, name) => workspace.has(name);

/**
 * @returns {{ dependencies: Record<string,string>, inputs: string[], outputs: string[] }}
 */
export async function bundle({ workspace, app, outdir }) {
  const { build } = createRequire(join(app.dir, 'package.json'))('esbuild');
  /** External package name → the files importing it. */
  const externals = new Map();
  const problems = [];

  const policy = {
    name: 'release-dependency-policy',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (isBuiltin(args.path)) return { path: args.path, external: true };
        const name = packageName(args.path);
        if (isOurs(workspace, name)) return undefined; // compiled in through its `source` condition
        const importer = packageOf(workspace, args.importer);
        if (INLINED.has(name)) return undefined; // resolved from wherever the importer found it
        if (!importer?.manifest.dependencies?.[name]) {
          problems.push(
            `${relative(ROOT, args.importer)} imports ${args.path}, which is not in the "dependencies" of ${importer?.name ?? 'any workspace package'}`,
          );
        }
        if (!externals.has(name)) externals.set(name, new Set());
        externals.get(name).add(relative(ROOT, args.importer));
        return { path: args.path, external: true };
      });
    },
  };

  const result = await build({
    absWorkingDir: app.dir,
    entryPoints: {
      cli: join(app.dir, 'src/cli/main.ts'),
      index: join(app.dir, app.manifest.exports['.'].source),
    },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    conditions: ['source'],
    entryNames: '[name]',
    chunkNames: 'chunks/[name]-[hash]',
    sourcemap: false,
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
    plugins: [policy],
  });
  if (result.warnings.length > 0) problems.push(...result.warnings.map((w) => `esbuild: ${w.text}`));

  const inputs = Object.keys(result.metafile.inputs).map((f) => relative(ROOT, join(app.dir, f)));
  for (const f of inputs) {
    if (f.includes('node_modules/')) continue; // the INLINED packages
    if (/(^|\/)(testing|__fixtures__|test)\/|\.test\.ts$|\.bench\.ts$/.test(f))
      problems.push(`${f}: test code reached the bundle`);
    if (
      !LOCATION_SAFE.has(f) &&
      /import\.meta\.(url|dirname|filename)/.test(readFileSync(join(ROOT, f), 'utf8'))
    )
      problems.push(
        `${f} locates files relative to itself; in the bundle it sits elsewhere (see runtime/src/server/editor-dir.ts)`,
      );
  }

  // The release depends on what the workspace packages it compiled in depend on: the packages
  // they import, and the ones they declare for other reasons (peers of their dependencies).
  const reached = new Set(inputs.map((f) => packageOf(workspace, join(ROOT, f))?.name).filter(Boolean));
  const dependencies = new Map();
  for (const name of [...reached].sort()) {
    for (const [dep, range] of Object.entries(workspace.get(name).manifest.dependencies ?? {})) {
      if (isOurs(workspace, dep)) continue;
      const seen = dependencies.get(dep);
      if (seen && seen.range !== range)
        problems.push(`${dep}: ${seen.from} wants ${seen.range}, ${name} wants ${range}; make them agree`);
      else if (!seen) dependencies.set(dep, { range, from: name });
    }
  }
  for (const name of externals.keys())
    if (!dependencies.has(name)) problems.push(`${name} is imported but no bundled package depends on it`);

  if (problems.length > 0) throw new Error(`release bundle:\n  ${problems.join('\n  ')}`);
  return {
    dependencies: Object.fromEntries([...dependencies].sort().map(([n, d]) => [n, d.range])),
    inputs,
    outputs: Object.keys(result.metafile.outputs),
  };
}
