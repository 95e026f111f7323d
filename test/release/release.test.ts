/**
 * The release package on a clean machine: `scripts/release/pack.mjs` (what `pnpm release:pack`
 * runs after `pnpm build`) packs it; npm installs it into a fresh global prefix and a fresh
 * project in a temp folder outside the repository, with a PATH holding only Node, npm and the
 * prefix, and nothing of the workspace's environment; then the installed `switchboard`
 * validates and runs every flow of `flows/` (copied out), serves the editor, and a plain Node
 * project embeds it as a library (the README's example, model overrides, cancellation, consent)
 * and type-checks against its typings. Anything the package still needs from the repository
 * makes one of these fail. The tarball's size and file list are checked too.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Flow } from '@switchboard/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type FakeOpenAIServer,
  startFakeOpenAIServer,
} from '../../runtime/src/models/testing/fake-openai-server.js';
import { cli } from '../support/cli.js';
import { cleanMachineEnv, installScripts, oneNode, run } from './clean-machine.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FLOWS = join(ROOT, 'flows');
/** Packed: 911 KiB at the time of writing (bundled code, typings, schemas, the editor's build). */
const MAX_PACKED_BYTES = 2 * 1024 * 1024;

/**
 * Flows of flows/ that list no `metadata.examples` (they need consent, which the in-repo
 * example runner does not give): the run their notes describe (flows/rawko.md).
 */
const EXAMPLES_ELSEWHERE: Record<string, Example[]> = {
  rawko: [
    {
      input: 'Add slugify(text) in slug.mjs with tests',
      answers: {
        'ask-user':
          'Lower-case first, replace runs of other characters with one dash, trim dashes at both ends.',
      },
    },
  ],
};

interface Example {
  input: string;
  answers?: Record<string, string | string[]>;
}

let tmp: string;
let tarball: string;
let prefix: string;
let project: string;
let home: string;
let flowsDir: string;
let version: string;
let files: string[];
let fake: FakeOpenAIServer;
const savedHome = process.env.SWITCHBOARD_HOME;

const cleanEnv = () => cleanMachineEnv(prefix, home);
const exec = (command: string, args: string[], cwd: string, timeoutMs?: number) =>
  run(cleanEnv(), command, args, cwd, timeoutMs);

/** The installed command, found through PATH as a user would (not by its path). */
const switchboard = (args: string[], cwd = flowsDir) => exec('switchboard', args, cwd);

function examplesOf(name: string, flow: Flow): Example[] {
  return (flow.metadata?.examples as Example[] | undefined) ?? EXAMPLES_ELSEWHERE[name] ?? [];
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'sb-release-'));
  expect(tmp.startsWith(ROOT)).toBe(false);
  const out = join(tmp, 'out');
  const pack = () =>
    spawnSync(process.execPath, [join(ROOT, 'scripts/release/pack.mjs'), '--out', out], { encoding: 'utf8' });
  let packed = pack();
  // `pnpm test` has built everything (`pnpm build`) before vitest; a local run may not have, and
  // the pack script refuses missing or stale build output.
  if (packed.status !== 0 && packed.stderr.includes('run `pnpm build` first')) {
    execFileSync('pnpm', ['build'], { cwd: ROOT, stdio: 'ignore' });
    packed = pack();
  }
  expect(packed.status, packed.stderr).toBe(0);
  const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
    tarball: string;
    version: string;
  };
  version = summary.version;
  // Only the tarball travels to the "clean machine".
  tarball = join(tmp, `switchboard-${version}.tgz`);
  cpSync(summary.tarball, tarball);
  rmSync(out, { recursive: true, force: true });
  prefix = join(tmp, 'prefix');
  project = join(tmp, 'project');
  home = join(tmp, 'home');
  flowsDir = join(tmp, 'flows');
  for (const d of [prefix, project, home]) mkdirSync(d);
  cpSync(FLOWS, flowsDir, { recursive: true });
  files = readdirSync(flowsDir)
    .filter((f) => f.endsWith('.json') && !f.endsWith('.tests.json'))
    .sort();
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'embeds-switchboard', private: true, type: 'module' }),
  );
  const [global, local] = await Promise.all([
    exec('npm', ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', tarball], tmp, 300_000),
    exec('npm', ['install', '--no-audit', '--no-fund', tarball, '@types/node@20'], project, 300_000),
  ]);
  expect(global.code, global.err).toBe(0);
  expect(local.code, local.err).toBe(0);
  fake = await startFakeOpenAIServer({ fallback: { text: 'from the OpenAI-compatible endpoint' } });
  process.env.SWITCHBOARD_HOME = home; // the in-repo runs compared below share the approvals
}, 600_000);

afterAll(async () => {
  await fake?.close();
  if (savedHome === undefined) delete process.env.SWITCHBOARD_HOME;
  else process.env.SWITCHBOARD_HOME = savedHome;
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the release tarball', { timeout: 120_000 }, () => {
  it('holds the CLI, the library with typings, the schemas and the editor, and nothing else', () => {
    const entries = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((e) => e.replace(/^package\//, ''));
    for (const need of [
      'package.json',
      'README.md',
      'bin/switchboard.js',
      'dist/cli.js',
      'dist/index.js',
      'types/runtime/index.d.ts',
      'schemas/flow.schema.json',
      'schemas/event.schema.json',
      'editor/dist/index.html',
    ])
      expect(entries).toContain(need);
    const unwanted = entries.filter((e) =>
      /(^|\/)(node_modules|test|tests|__fixtures__|fixtures|testing|src)\/|\.test\.|\.bench\.|\.map$|\.tsbuildinfo$/.test(
        e,
      ),
    );
    expect(unwanted).toEqual([]);
    const bytes = readFileSync(tarball).length;
    console.log(`release tarball: ${(bytes / 1024).toFixed(0)} KiB, ${entries.length} files`);
    expect(bytes).toBeLessThan(MAX_PACKED_BYTES);

    const pkg = JSON.parse(
      execFileSync('tar', ['xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }),
    );
    expect(pkg).toMatchObject({
      name: 'switchboard',
      version,
      type: 'module',
      bin: { switchboard: 'bin/switchboard.js' },
    });
    expect(pkg.scripts, 'no install (or any) scripts').toBeUndefined();
    for (const [name, range] of Object.entries(pkg.dependencies as Record<string, string>)) {
      expect(name.startsWith('@switchboard/'), name).toBe(false);
      expect(range, name).toMatch(/^[~^]?\d/);
    }
  });

  it('names no file of the repository and carries no install script in its dependency tree', () => {
    const installed = join(prefix, 'lib', 'node_modules', 'switchboard');
    // grep exits 1 when no file names the repository's folder.
    const grep = spawnSync(
      'grep',
      ['-rl', '--exclude-dir=node_modules', ROOT.replace(/\/$/, ''), installed],
      {
        encoding: 'utf8',
      },
    );
    expect(grep.stdout).toBe('');
    expect(grep.status).toBe(1);
    const scripts = installScripts(join(prefix, 'lib', 'node_modules'));
    expect(scripts).toEqual([]);
  });
});

describe('switchboard installed with npm -g into a fresh prefix', { timeout: 300_000 }, () => {
  it('--version prints the package and flow-format versions', async () => {
    const r = await switchboard(['--version']);
    expect(r).toMatchObject({ code: 0, out: `switchboard ${version} (flow format version 1)\n` });
  });

  it('has every command the repository CLI has', async () => {
    const commands = (help: string) =>
      help
        .slice(help.indexOf('Commands:'))
        .split('\n')
        .slice(1)
        .map((l) => /^ {2}(\S+)/.exec(l)?.[1])
        .filter((c): c is string => c !== undefined && c !== 'help');
    const repo = commands((await cli('--help')).out);
    const installed = commands((await switchboard(['--help'])).out);
    expect(repo.length).toBeGreaterThan(3);
    expect(installed).toEqual(repo);
    for (const c of installed) expect((await switchboard([c, '--help'])).code, c).toBe(0);
  });

  it('installs without the optional Redis packages, and --redis then says what to install', async () => {
    const pkg = JSON.parse(
      readFileSync(join(prefix, 'lib', 'node_modules', 'switchboard', 'package.json'), 'utf8'),
    );
    expect(Object.keys(pkg.peerDependenciesMeta ?? {}).sort()).toEqual(['bullmq', 'ioredis']);
    expect(existsSync(join(prefix, 'lib', 'node_modules', 'bullmq'))).toBe(false);
    for (const args of [
      ['worker', '--redis', 'redis://127.0.0.1:9'],
      ['status', '--redis', 'redis://127.0.0.1:9'],
    ]) {
      const r = await switchboard(args);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(r.err, args.join(' ')).toContain('npm install bullmq ioredis');
    }
  });

  it('validates every flow of flows/', async () => {
    const r = await switchboard(['validate', ...files]);
    expect(r.code, r.err).toBe(0);
    expect(r.out.trim().split('\n')).toEqual(files.map((f) => `${f}: ok`));
  });

  it('runs every shipped example with the same answer as the repository; approvals as the CLI asks', async () => {
    let ran = 0;
    for (const file of files) {
      const flow = JSON.parse(readFileSync(join(flowsDir, file), 'utf8')) as Flow;
      const examples = examplesOf(file.replace(/\.json$/, ''), flow);
      expect(examples.length, `${file} has an example to run`).toBeGreaterThan(0);
      const listed = await switchboard(['trust', file, '--json']);
      const commands = JSON.parse(listed.out) as Array<{ approved: boolean }>;
      for (const [i, ex] of examples.entries()) {
        const inputFile = join(tmp, `${file}-${i}.input`);
        writeFileSync(inputFile, ex.input);
        const args = ['run', file, '--input-file', inputFile, '--events', 'none'];
        if (ex.answers) {
          const answers = join(tmp, `${file}-${i}.answers.json`);
          writeFileSync(answers, JSON.stringify(ex.answers));
          args.push('--answers', answers);
        }
        if (commands.some((c) => !c.approved)) {
          // Refused until approved, naming the exact command to type; then approved as told.
          const refused = await switchboard(args);
          expect(refused.code).toBe(2);
          expect(refused.err).toContain(`switchboard trust ${file}`);
          expect((await switchboard(['trust', file, '--yes'])).code).toBe(0);
        }
        const r = await switchboard(args);
        expect(r.code, `${file}: ${r.err}`).toBe(0);
        expect(r.out.trim(), file).not.toBe('');
        const repo = await cli(...args.map((a) => (a === file ? join(flowsDir, file) : a)));
        expect(repo.code, repo.err).toBe(0);
        expect(r.out, `${file}: the same answer as the repository's CLI`).toBe(repo.out);
        ran++;
      }
    }
    expect(ran).toBeGreaterThanOrEqual(files.length);
  });

  it('serves the editor at / and /api/health on a free port', async () => {
    let child: ChildProcess | undefined;
    try {
      child = spawn('switchboard', ['serve', '--port', '0', '--data', join(tmp, 'data')], {
        cwd: tmp,
        env: cleanEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`serve did not start: ${out}`)), 30_000);
        child!.stdout!.on('data', (d) => {
          out += d;
          const m = /listening on (http:\/\/\S+)/.exec(out);
          if (m && out.includes('\n', out.indexOf(m[0]))) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
        child!.on('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
      });
      await new Promise((r) => setTimeout(r, 100)); // the rest of the start-up lines
      expect(out).toContain('open the editor at');
      const health = await fetch(`${url}/api/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ ok: true, status: 'ok' });
      // The shipped examples come with the package: the server makes new flows from them.
      const fresh = await fetch(`${url}/api/flows/from-template/support-triage`, { method: 'POST' });
      expect(fresh.status).toBe(201);
      expect(((await fresh.json()) as { id: string }).id).toMatch(/^support-triage-/);
      const page = await fetch(`${url}/`);
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain('<title>Switchboard</title>');
      const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
      expect(script).toBeDefined();
      const asset = await fetch(`${url}${script}`);
      expect(asset.status).toBe(200);
      expect((await asset.text()).length).toBeGreaterThan(10_000);
      const exited = new Promise<number | null>((r) => child!.on('exit', r));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child && child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('serves a flow as an MCP tool over stdio', async () => {
    writeFileSync(join(tmp, 'one-node.json'), JSON.stringify(oneNode()));
    const client = new Client({ name: 'release-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: 'switchboard',
        args: ['mcp', 'one-node.json'],
        env: cleanEnv() as Record<string, string>,
        cwd: tmp,
        stderr: 'ignore',
      }),
      { timeout: 60_000 },
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['one-node']);
      const result = await client.callTool({ name: 'one-node', arguments: { input: 'hi' } }, undefined, {
        timeout: 60_000,
      });
      expect(result.isError).toBeFalsy();
      expect(result.content).toEqual([{ type: 'text', text: 'scripted answer' }]);
    } finally {
      await client.close();
    }
  });

  it('runs through npx --package without a global install', async () => {
    const r = await exec('npx', ['--yes', '--package', tarball, 'switchboard', '--version'], home, 300_000);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`switchboard ${version} (flow format version 1)`);
  });
});

describe('switchboard as a library in a fresh npm project', { timeout: 120_000 }, () => {
  it("runs the README's embedding example", async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Run headless'));
    const code = /\*\*Embed\.\*\*[\s\S]*?```js\n([\s\S]*?)```/.exec(section)?.[1];
    expect(code, 'README: a js example under **Embed.**').toBeDefined();
    cpSync(join(FLOWS, 'support-triage.json'), join(project, 'support-triage.json'));
    writeFileSync(join(project, 'readme-example.mjs'), code!);
    const r = await exec(process.execPath, ['readme-example.mjs'], project);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^completed .*refund the duplicate 49\.00 EUR/);
    expect(r.err).toContain('run.completed');
  });

  it('takes model overrides (an OpenAI-compatible endpoint), an AbortSignal, and names the approval a flow needs', async () => {
    writeFileSync(join(project, 'one-node.json'), JSON.stringify(oneNode()));
    cpSync(join(FLOWS, 'rawko.json'), join(project, 'rawko.json'));
    writeFileSync(
      join(project, 'library.mjs'),
      `import { ConsentNeededError, FLOW_VERSION, VERSION, runFlowFile } from 'switchboard';
const [baseURL] = process.argv.slice(2);
const out = { versions: [VERSION, FLOW_VERSION] };
const types = [];
out.endpoint = await runFlowFile('one-node.json', 'hello', {
  onEvent: (e) => types.push(e.type),
  modelOverrides: { default: { baseURL, model: 'fake-model' } },
});
out.types = types;
out.scripted = await runFlowFile('one-node.json', 'hello', {
  modelOverrides: { default: { provider: 'scripted', script: [{ fallback: true, text: 'forced' }] } },
});
const ac = new AbortController();
out.aborted = await runFlowFile('one-node.json', 'hello', {
  signal: ac.signal,
  onEvent: (e) => { if (e.type === 'node.started') ac.abort(); },
  modelOverrides: { default: { provider: 'scripted', latencyMs: 5000, script: [{ fallback: true, text: 'late' }] } },
});
try {
  await runFlowFile('rawko.json', 'x', { trustFile: 'nobody-approved.json' });
} catch (e) {
  out.consent = { isConsentError: e instanceof ConsentNeededError, message: e.message };
}
console.log(JSON.stringify(out));
`,
    );
    const before = fake.requests.length;
    const r = await exec(process.execPath, ['library.mjs', fake.url], project);
    expect(r.code, r.err).toBe(0);
    const out = JSON.parse(r.out.trim().split('\n').at(-1)!);
    expect(out.versions).toEqual([version, 1]);
    expect(out.endpoint).toMatchObject({
      status: 'completed',
      output: 'from the OpenAI-compatible endpoint',
    });
    expect(fake.requests.length).toBeGreaterThan(before);
    expect(out.types[0]).toBe('run.started');
    expect(out.types.at(-1)).toBe('run.completed');
    expect(out.scripted).toMatchObject({ status: 'completed', output: 'forced' });
    expect(out.aborted.status).toBe('cancelled');
    expect(out.consent.isConsentError).toBe(true);
    expect(out.consent.message).toContain('switchboard trust rawko.json --trust-file nobody-approved.json');
  });

  it('type-checks against the typings that come with the package', () => {
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
        },
        files: ['typed.ts'],
      }),
    );
    writeFileSync(
      join(project, 'typed.ts'),
      `import { type Flow, loadFlow, runFlow, runFlowFile, type RunResult, validateFlow } from 'switchboard';

const result: RunResult = await runFlowFile('one-node.json', 'hi', { signal: AbortSignal.timeout(1000) });
const status: 'completed' | 'failed' | 'cancelled' | 'interrupted' = result.status;
// @ts-expect-error the options are typed: an unknown one is refused
await runFlowFile('one-node.json', 'hi', { noSuchOption: true });
const flow: Flow = await loadFlow('one-node.json');
const handle = runFlow(flow, 'hi', { onEvent: (e) => e.seq.toFixed() });
handle.send({ type: 'pause' });
// @ts-expect-error commands are typed
handle.send({ type: 'explode' });
const problems: number = (await validateFlow(flow)).errors.length;
console.log(status, problems);
`,
    );
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    let output = '';
    try {
      execFileSync(process.execPath, [tsc, '-p', project], {
        cwd: project,
        encoding: 'utf8',
        env: cleanEnv(),
      });
    } catch (e) {
      output = `${(e as { stdout?: string }).stdout ?? ''}${(e as Error).message}`;
    }
    expect(output).toBe('');
  });
});
