// The typings of the release package: the declaration files tsc wrote for each workspace package
// (`pnpm build`), as many as the library entry's declarations reach, copied under `types/<folder>/`
// with imports of @switchboard/* rewritten to relative paths. A bare import left in them must be
// a dependency of the release (or Node's), else the typings would not resolve once installed.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { basename, dirname, join, relative, sep } from 'node:path';
import { packageName, packageOf, ROOT } from './workspace.mjs';

// `from '…'`, `import '…'`, `import('…')`, `require('…')` in declaration files.
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)(['"])([^'"]+)\2/g;

/** The declaration file of `@switchboard/x[/sub]`, from the package's `exports` (`types`). */
function declarationOf(workspace, spec) {
  const pkg = workspace.get(packageName(spec));
  const sub = `.${spec.slice(pkg.name.length)}`;
  const entry = pkg.manifest.exports?.[sub];
  const types = typeof entry === 'object' ? entry.types : undefined;
  if (!types) throw new Error(`${spec}: ${pkg.name} exports no typings for ${sub}`);
  return join(pkg.dir, types);
}

/** Where a declaration file of the workspace goes in the release package. */
function stagedPath(workspace, typesDir, file) {
  const pkg = packageOf(workspace, file);
  return join(typesDir, basename(pkg.dir), relative(join(pkg.dir, 'dist'), file));
}

/** The TypeScript source a declaration file of `dist/` was compiled from, when it exists. */
function sourceOf(workspace, file) {
  const pkg = packageOf(workspace, file);
  const source = join(pkg.dir, 'src', relative(join(pkg.dir, 'dist'), file).replace(/\.d\.ts$/, '.ts'));
  return existsSync(source) ? source : undefined;
}

const asImport = (fromFile, toFile) => {
  let r = relative(dirname(fromFile), toFile).split(sep).join('/');
  if (!r.startsWith('.')) r = `./${r}`;
  return r.replace(/\.d\.ts$/, '.js');
};

/**
 * Copies the declarations reachable from `entry` (a .d.ts of the workspace) into `typesDir`.
 * @returns the staged path of the entry, and how many files were written.
 */
export function stageTypes({ workspace, entry, typesDir, dependencies }) {
  const queue = [entry];
  const done = new Set();
  const problems = [];
  while (queue.length > 0) {
    const file = queue.pop();
    if (done.has(file)) continue;
    done.add(file);
    if (!existsSync(file)) {
      problems.push(`${relative(ROOT, file)} is missing: run \`pnpm build\` first`);
      continue;
    }
    const source = sourceOf(workspace, file);
    if (source && statSync(source).mtimeMs > statSync(file).mtimeMs)
      problems.push(
        `${relative(ROOT, file)} is older than ${relative(ROOT, source)}: run \`pnpm build\` first`,
      );
    const target = stagedPath(workspace, typesDir, file);
    const text = readFileSync(file, 'utf8').replace(SPECIFIER, (all, lead, q, spec) => {
      if (spec.startsWith('.')) {
        const dep = join(dirname(file), spec.replace(/\.js$/, '.d.ts'));
        queue.push(dep);
        return all;
      }
      const name = packageName(spec);
      if (workspace.has(name)) {
        const dep = declarationOf(workspace, spec);
        queue.push(dep);
        return `${lead}${q}${asImport(target, stagedPath(workspace, typesDir, dep))}${q}`;
      }
      if (!isBuiltin(spec) && !dependencies[name] && !dependencies[`@types/${name}`])
        problems.push(`${relative(ROOT, file)}: its types import ${spec}, not a dependency of the release`);
      return all;
    });
    mkdirSync(dirname(target), { recursive: true });
    // The declaration maps point at sources the package does not ship.
    writeFileSync(target, text.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n'));
  }
  if (problems.length > 0) throw new Error(`release typings:\n  ${problems.join('\n  ')}`);
  return { entry: stagedPath(workspace, typesDir, entry), files: done.size };
}
