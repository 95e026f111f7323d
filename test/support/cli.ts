/**
 * Runs the switchboard CLI in-process through `main()` (TypeScript sources, no build), capturing
 * what it writes: tests assert on the exit code and the text of stdout and stderr.
 */
import { main } from '../../runtime/src/cli/main.js';

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

/** `switchboard ...args` with stdout and stderr captured and no terminal (no redrawn progress). */
export async function cli(...args: string[]): Promise<CliResult> {
  let out = '';
  let err = '';
  const code = await main(['node', 'switchboard', ...args], {
    out: (s) => {
      out += s;
    },
    err: (s) => {
      err += s;
    },
    isTTY: false,
  });
  return { code, out, err };
}
