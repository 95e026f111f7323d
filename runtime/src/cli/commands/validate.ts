/** `switchboard validate FILE…`: exit 0 when all are valid, 1 when one is not. */
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
// `core`: these need no validator. The validator (Ajv, ~70 modules) loads when a file is
// checked, so that every other command (and `--version`) starts without it (see cli/main.ts).
import { DEFAULT_LIMITS, type Problem, problem, sanitize } from '@switchboard/schemas/core';
import type { Command } from 'commander';
import { checkScriptFiles } from '../../models/script-file.js';
import { type CliContext, EXIT } from '../context.js';

export interface ValidateReport {
  file: string;
  ok: boolean;
  errors: Problem[];
  warnings: Problem[];
}

export async function validateFiles(files: string[]): Promise<ValidateReport[]> {
  const { validateText } = await import('@switchboard/nodes');
  const reports: ValidateReport[] = [];
  for (const file of files) {
    try {
      const st = await stat(file);
      if (st.size > DEFAULT_LIMITS.maxBytes) {
        // Refuse before reading a huge file into memory.
        reports.push({
          file,
          ok: false,
          errors: [
            {
              code: 'too-large',
              path: '',
              message: `The document is larger than the limit: ${st.size} bytes, limit ${DEFAULT_LIMITS.maxBytes}`,
            },
          ],
          warnings: [],
        });
        continue;
      }
      const r = validateText(await readFile(file));
      // Script files are read as a run would read them, from the flow file's folder.
      if (r.flow) r.errors.push(...(await checkScriptFiles(r.flow, dirname(resolve(file)))));
      reports.push({ file, ok: r.errors.length === 0, errors: r.errors, warnings: r.warnings });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      reports.push({
        file,
        ok: false,
        errors: [
          problem('unreadable', '', err.code === 'EISDIR' ? 'it is a directory' : (err.code ?? err.message)),
        ],
        warnings: [],
      });
    }
  }
  return reports;
}

export function formatProblem(file: string, p: Problem, severity: 'error' | 'warning'): string {
  // Paths and ids come from the document: show control and bidi characters as \uXXXX on a terminal.
  const id = p.nodeId ?? p.edgeId;
  return `${file}: ${sanitize(p.path) || '/'}${id ? ` (${sanitize(id)})` : ''}: ${severity === 'warning' ? 'warning: ' : ''}${p.message} [${p.code}]`;
}

export function registerValidate(program: Command, ctx: CliContext): void {
  program
    .command('validate')
    .description('Validate flow files; prints FILE: /json/path (id): message per problem.')
    .argument('<files...>', 'flow JSON files')
    .option('--json', 'print the problem lists as JSON')
    .action(async (files: string[], opts: { json?: boolean }) => {
      const reports = await validateFiles(files);
      if (opts.json) ctx.out(`${JSON.stringify(reports, null, 2)}\n`);
      else
        for (const r of reports) {
          for (const p of r.errors) ctx.err(`${formatProblem(r.file, p, 'error')}\n`);
          for (const p of r.warnings) ctx.err(`${formatProblem(r.file, p, 'warning')}\n`);
          if (r.ok) ctx.out(`${r.file}: ok${r.warnings.length ? ` (${r.warnings.length} warnings)` : ''}\n`);
        }
      ctx.setExit(reports.every((r) => r.ok) ? EXIT.ok : EXIT.failed);
    });
}
