/**
 * `switchboard test [FILES|DIRS…] [--reporter pretty|junit] [--output FILE] [--timeout MS]`:
 * runs flow tests (`*.tests.json`; default: those in ./flows). Exit 0 when every case passed,
 * 1 when one failed, 2 when a tests file is broken (each problem with its file and JSON path).
 *
 * `switchboard test --record-case FILE RUN_ID [--data DIR]` appends a case built from a stored run.
 */
import { readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { type CliContext, EXIT } from '../context.js';

interface TestCliOptions {
  reporter?: string;
  output?: string;
  timeout?: string;
  recordCase?: string;
  data?: string;
}

class UsageError extends Error {}

/** The tests files named by the arguments: files as given, directories' `*.tests.json` sorted. */
async function expand(args: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const a of args.length > 0 ? args : ['flows']) {
    let st: Awaited<ReturnType<typeof stat>>;
    try {
      st = await stat(a);
    } catch {
      if (args.length === 0) throw new UsageError('no FILES given and no ./flows directory here');
      out.push(a); // reported as unreadable, with the others
      continue;
    }
    if (st.isDirectory()) {
      const names = (await readdir(a)).filter((n) => n.endsWith('.tests.json')).sort();
      for (const n of names) out.push(join(a, n));
    } else out.push(a);
  }
  return out;
}

async function runTests(files: string[], opts: TestCliOptions, ctx: CliContext): Promise<number> {
  const reporter = opts.reporter ?? 'pretty';
  if (reporter !== 'pretty' && reporter !== 'junit')
    throw new UsageError('--reporter must be pretty or junit');
  const timeoutMs = opts.timeout === undefined ? undefined : Number(opts.timeout);
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0))
    throw new UsageError('--timeout must be a positive number of milliseconds');
  const list = await expand(files);
  if (list.length === 0) throw new UsageError(`no *.tests.json files in ${files.join(', ') || 'flows'}`);
  const { loadTestsFile } = await import('../../testing-flows/load.js');
  const { runCase } = await import('../../testing-flows/run-case.js');
  const report = await import('../../testing-flows/report.js');
  const { shutdownMcpPool } = await import('../../mcp/pool.js');
  // JUnit goes to stdout when there is no --output: progress then goes to stderr.
  const progress = reporter === 'junit' && !opts.output ? ctx.err : ctx.out;
  const flows = new Map();
  const results: import('../../testing-flows/report.js').FileResult[] = [];
  const t0 = performance.now();
  try {
    for (const file of list) {
      const f0 = performance.now();
      const loaded = await loadTestsFile(file, flows);
      if (!loaded.ok) {
        progress(report.formatBroken(file, loaded.problems));
        results.push({ file, broken: loaded.problems, cases: [], ms: performance.now() - f0 });
        continue;
      }
      progress(`${file}\n`);
      const cases = [];
      for (const c of loaded.suite.cases) {
        const r = await runCase(loaded.suite, c, timeoutMs === undefined ? {} : { timeoutMs });
        progress(report.formatCase(r));
        cases.push(r);
      }
      results.push({ file, cases, ms: performance.now() - f0 });
    }
  } finally {
    await shutdownMcpPool().catch(() => {});
  }
  const ms = performance.now() - t0;
  progress(report.summary(results, ms));
  if (reporter === 'junit') {
    const xml = report.junit(results, ms);
    if (opts.output) await writeFile(opts.output, xml);
    else ctx.out(xml);
  }
  if (results.some((r) => r.broken)) return EXIT.usage;
  if (results.some((r) => r.cases.some((c) => !c.passed))) return EXIT.failed;
  return EXIT.ok;
}

async function recordCaseCommand(
  file: string,
  args: string[],
  opts: TestCliOptions,
  ctx: CliContext,
): Promise<number> {
  if (args.length !== 1) throw new UsageError('--record-case FILE takes exactly one RUN_ID');
  const { readStoredRun, StoredRunError } = await import('../stored-run.js');
  const { recordCase } = await import('../../testing-flows/record-case.js');
  let run: Awaited<ReturnType<typeof readStoredRun>>;
  try {
    run = await readStoredRun(args[0]!, opts.data);
  } catch (e) {
    if (e instanceof StoredRunError && e.usage) throw new UsageError(e.message);
    throw e;
  }
  const r = await recordCase(file, run);
  ctx.err(`${r.created ? 'created' : 'updated'} ${file}: added case "${r.name}"\n`);
  return EXIT.ok;
}

export function registerTest(program: Command, ctx: CliContext): void {
  program
    .command('test')
    .description('Run flow tests (*.tests.json): exit 0 all passed, 1 a failure, 2 a broken tests file.')
    .argument('[files...]', 'tests files or directories (default: ./flows)')
    .option('--reporter <name>', 'pretty (default) or junit')
    .option('--output <file>', 'write the JUnit report to this file')
    .option('--timeout <ms>', 'cancel and fail a case that takes longer (default 60000)')
    .option('--record-case <file>', 'append a case built from the stored run RUN_ID to this tests file')
    .option('--data <dir>', 'data directory of --record-case (default $SWITCHBOARD_DATA or ./.switchboard)')
    .action(async (files: string[], opts: TestCliOptions) => {
      try {
        ctx.setExit(
          opts.recordCase !== undefined
            ? await recordCaseCommand(opts.recordCase, files, opts, ctx)
            : await runTests(files, opts, ctx),
        );
      } catch (e) {
        ctx.err(`switchboard test: ${(e as Error).message}\n`);
        ctx.setExit(e instanceof UsageError ? EXIT.usage : EXIT.failed);
      }
    });
}
