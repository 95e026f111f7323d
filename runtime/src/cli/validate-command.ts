/** `switchboard validate FILE…`: exit 0 when all are valid, 1 when one is not. */
import { readFile, stat } from 'node:fs/promises';
import { validateText } from '@switchboard/nodes';
import { DEFAULT_LIMITS, type Problem } from '@switchboard/schemas';

export interface ValidateReport {
  file: string;
  ok: boolean;
  errors: Problem[];
  warnings: Problem[];
}

export async function validateFiles(files: string[]): Promise<ValidateReport[]> {
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
      reports.push({ file, ok: r.ok, errors: r.errors, warnings: r.warnings });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      reports.push({
        file,
        ok: false,
        errors: [{ code: 'not-json', path: '', message: `cannot read the file: ${err.code ?? err.message}` }],
        warnings: [],
      });
    }
  }
  return reports;
}

export function formatProblem(file: string, p: Problem, severity: 'error' | 'warning'): string {
  const id = p.nodeId ?? p.edgeId;
  return `${file}: ${p.path || '/'}${id ? ` (${id})` : ''}: ${severity === 'warning' ? 'warning: ' : ''}${p.message} [${p.code}]`;
}
