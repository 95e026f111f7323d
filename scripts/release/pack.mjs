// `pnpm release:pack` (after `pnpm build`): writes release/switchboard-<version>.tgz, one npm
// package that installs with npm alone: the CLI (bin `switchboard`) and the library entry
// bundled from the workspace sources, their typings, the JSON Schema files and the editor's
// build. Third-party packages are ordinary dependencies; the package has no install scripts.
//
//   node scripts/release/pack.mjs [--out DIR]     prints the tarball's path, size and file count
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { bundle } from './bundle.mjs';
import { stageTypes } from './types.mjs';
import { ROOT, readWorkspace } from './workspace.mjs';

const args = process.argv.slice(2);
const outIndex = args.indexOf('--out');
const OUT = outIndex >= 0 ? args[outIndex + 1] : join(ROOT, 'release');

const workspace = readWorkspace();
// The package that provides the `switchboard` command also provides the library entry.
const app = [...workspace.values()].find((p) => p.manifest.bin?.switchboard);
const schemas = workspace.get('@switchboard/schemas');
const editor = workspace.get('@switchboard/editor');
if (!app || !schemas || !editor)
  throw new Error('release: the workspace lacks the CLI, schemas or editor package');
const version = app.manifest.version;

const editorDist = join(editor.dir, 'dist');
for (const need of [join(editorDist, 'index.html'), join(app.dir, 'dist', 'index.d.ts')])
  if (!existsSync(need))
    throw new Error(`release: ${relative(ROOT, need)} is missing; run \`pnpm build\` first`);

const stage = join(OUT, 'stage', 'switchboard');
rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });

// 1. Code.
const { dependencies, inputs } = await bundle({ workspace, app, outdir: join(stage, 'dist') });

// 2. The command. Exit codes as `main` returns them (see the README, "Run headless").
mkdirSync(join(stage, 'bin'));
writeFileSync(
  join(stage, 'bin', 'switchboard.js'),
  `#!/usr/bin/env node
import { main } from '../dist/cli.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(\`switchboard: \${err instanceof Error ? err.message : String(err)}\`);
    process.exitCode = 1;
  },
);
`,
  { mode: 0o755 },
);

// 3. Typings of the library entry.
const types = stageTypes({
  workspace,
  entry: join(app.dir, app.manifest.exports['.'].types),
  typesDir: join(stage, 'types'),
  dependencies,
});
const typesEntry = `./${relative(stage, types.entry).split('\\').join('/')}`;

// 4. The JSON Schema files, as the schemas package exports them.
const schemaExports = {};
for (const [sub, target] of Object.entries(schemas.manifest.exports))
  if (typeof target === 'string' && target.endsWith('.json')) {
    cpSync(join(schemas.dir, target), join(stage, 'schemas', target));
    schemaExports[sub] = `./schemas/${target.replace(/^\.\//, '')}`;
  }

// 4b. The shipped example flows: the server's templates ("New from template"), and flows to try.
mkdirSync(join(stage, 'flows'), { recursive: true });
for (const f of readdirSync(join(ROOT, 'flows')))
  if (f.endsWith('.json') && !f.endsWith('.tests.json'))
    cpSync(join(ROOT, 'flows', f), join(stage, 'flows', f));

// 5. The editor's build, without source maps (and without the comments pointing at them).
cpSync(editorDist, join(stage, 'editor', 'dist'), {
  recursive: true,
  filter: (src) => !src.endsWith('.map'),
});
for (const file of walk(join(stage, 'editor', 'dist')))
  if (/\.(js|css)$/.test(file)) {
    const text = readFileSync(file, 'utf8');
    const stripped = text.replace(/\n?\/[/*]# sourceMappingURL=\S+?(\s*\*\/)?\s*$/, '\n');
    if (stripped !== text) writeFileSync(file, stripped);
  }

// 6. README: the root README's "Run headless" section.
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const section = /^## Run headless\n[\s\S]*?(?=^## )/m.exec(`${readme}\n## `)?.[0];
if (!section) throw new Error('release: README.md has no "## Run headless" section');
writeFileSync(
  join(stage, 'README.md'),
  `# Switchboard ${version}\n\nA visual, collaborative builder and runtime for multi-agent LLM flows: the CLI, the server with the editor, and the library.\n\n${section.replace(/^## /, '## ').trim()}\n`,
);

// 7. The manifest. Scale-out on Redis is opt-in: bullmq and ioredis are optional peers, so a plain
// install stays free of bullmq's native add-on (and its install script); `--redis` without them
// says what to install (runtime/src/redis/packages.ts).
const OPTIONAL_PEERS = ['bullmq', 'ioredis'];
const peerDependencies = {};
for (const name of OPTIONAL_PEERS)
  if (dependencies[name]) {
    peerDependencies[name] = dependencies[name];
    delete dependencies[name];
  }
const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const manifest = {
  name: 'switchboard',
  version,
  description:
    'Build, validate, run and serve multi-agent LLM flows: CLI, server with the editor, and library.',
  type: 'module',
  bin: { switchboard: 'bin/switchboard.js' },
  main: './dist/index.js',
  types: typesEntry,
  exports: {
    '.': { types: typesEntry, default: './dist/index.js' },
    ...schemaExports,
    './package.json': './package.json',
  },
  files: ['bin', 'dist', 'types', 'schemas', 'editor/dist', 'flows', 'README.md'],
  engines: root.engines,
  dependencies,
  peerDependencies,
  peerDependenciesMeta: Object.fromEntries(Object.keys(peerDependencies).map((n) => [n, { optional: true }])),
};
writeFileSync(join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);

// 8. The tarball.
const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', OUT], {
  cwd: stage,
  encoding: 'utf8',
  env: { ...process.env, npm_config_loglevel: 'error' },
});
const [packed] = JSON.parse(out);
const tarball = join(OUT, packed.filename);
const summary = {
  tarball,
  version,
  bytes: statSync(tarball).size,
  unpackedBytes: packed.unpackedSize,
  files: packed.entryCount,
  bundledModules: inputs.length,
  typings: types.files,
  dependencies,
};
writeFileSync(join(OUT, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
console.log(
  `release: ${relative(process.cwd(), tarball)} (${(summary.bytes / 1024).toFixed(0)} KiB packed, ` +
    `${(summary.unpackedBytes / 1024 / 1024).toFixed(1)} MiB unpacked, ${summary.files} files, ` +
    `${Object.keys(dependencies).length} dependencies)`,
);

function* walk(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else yield p;
  }
}
