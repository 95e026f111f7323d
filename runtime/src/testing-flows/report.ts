/** Reporters of `switchboard test`: a readable summary with progress, and JUnit XML for CI. */

import type { Problem } from './load.js';
import type { CaseResult } from './run-case.js';

export interface FileResult {
  file: string;
  /** Set when the tests file could not be used (exit 2). */
  broken?: Problem[];
  cases: CaseResult[];
  ms: number;
}

const secs = (ms: number) => (ms / 1000).toFixed(3);

export function formatCase(r: CaseResult): string {
  const head = `  ${r.passed ? '✓' : '✗'} ${r.name} (${Math.round(r.ms)} ms)`;
  if (r.passed) return `${head}\n`;
  return `${head}\n${r.failures.map((f) => `      ${f.path}: ${f.message}\n`).join('')}`;
}

export function formatBroken(file: string, problems: readonly Problem[]): string {
  return `✗ ${file}: broken tests file\n${problems.map((p) => `      ${file}:${p.path || '/'}: ${p.message}\n`).join('')}`;
}

export function summary(results: readonly FileResult[], ms: number): string {
  let passed = 0;
  let failed = 0;
  let broken = 0;
  for (const f of results) {
    if (f.broken) broken++;
    for (const c of f.cases) c.passed ? passed++ : failed++;
  }
  const parts = [`${passed} passed`, `${failed} failed`];
  if (broken > 0) parts.push(`${broken} broken file${broken === 1 ? '' : 's'}`);
  return `\n${parts.join(', ')} — ${results.length} file${results.length === 1 ? '' : 's'} in ${secs(ms)} s\n`;
}

const xmlEscape = (s: string): string =>
  s
    // Characters XML 1.0 cannot carry at all.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');

/** JUnit XML: one `<testsuite>` per tests file; a broken file is one test case with an `<error>`. */
export function junit(results: readonly FileResult[], ms: number): string {
  let tests = 0;
  let failures = 0;
  let errors = 0;
  const suites: string[] = [];
  for (const f of results) {
    const name = xmlEscape(f.file);
    if (f.broken) {
      tests++;
      errors++;
      const text = f.broken.map((p) => `${f.file}:${p.path || '/'}: ${p.message}`).join('\n');
      suites.push(
        `  <testsuite name="${name}" tests="1" failures="0" errors="1" skipped="0" time="${secs(f.ms)}">\n` +
          `    <testcase classname="${name}" name="load" time="0"><error type="broken_tests_file" message="${xmlEscape(f.broken[0]?.message ?? 'broken')}">${xmlEscape(text)}</error></testcase>\n` +
          '  </testsuite>',
      );
      continue;
    }
    const fails = f.cases.filter((c) => !c.passed).length;
    tests += f.cases.length;
    failures += fails;
    const cases = f.cases.map((c) => {
      const open = `    <testcase classname="${name}" name="${xmlEscape(c.name)}" time="${secs(c.ms)}"`;
      if (c.passed) return `${open}/>`;
      const text = c.failures.map((x) => `${x.path}: ${x.message}`).join('\n');
      return `${open}><failure type="assertion" message="${xmlEscape(c.failures[0]?.message ?? 'failed')}">${xmlEscape(text)}</failure></testcase>`;
    });
    suites.push(
      `  <testsuite name="${name}" tests="${f.cases.length}" failures="${fails}" errors="0" skipped="0" time="${secs(f.ms)}">\n${cases.join('\n')}\n  </testsuite>`,
    );
  }
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="switchboard test" tests="${tests}" failures="${failures}" errors="${errors}" time="${secs(ms)}">\n${suites.join('\n')}\n</testsuites>\n`;
}
