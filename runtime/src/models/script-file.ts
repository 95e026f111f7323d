/**
 * Reading a scripted model's `scriptFile` without letting a flow read anything else. A flow comes
 * from people who do not own the machine (REST clients, co-editors), so the file is confined:
 *
 * - the path is relative and stays inside the base folder: the flow file's folder for the CLI,
 *   `<data>/scripts/` for the server (`SCRIPTS_DIR`), the working directory for a library host
 *   that names none (the validator refuses absolute paths and `..` everywhere: `script-file-path`);
 * - the file itself, once every symlink is resolved, is still inside the base folder;
 * - it is a regular file: opened with O_NOFOLLOW | O_NONBLOCK and checked with fstat on the open
 *   descriptor, so a FIFO cannot stall the process, a device (`/dev/zero`) is never read, and a
 *   swap between the check and the open changes nothing;
 * - it is at most `SCRIPT_FILE_MAX_BYTES`, and read asynchronously;
 * - errors name the path and the rule, never the file's content (not even JSON syntax errors,
 *   whose messages quote the text).
 */
import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { type Flow, type Problem, pointer, problem, quote, scriptPathRule } from '@switchboard/schemas/core';

export { scriptPathRule };

/** Where the server looks for script files, under its data directory. */
export const SCRIPTS_DIR = 'scripts';
/** Largest script file read. */
export const SCRIPT_FILE_MAX_BYTES = 2 * 1024 * 1024;

export class ScriptFileError extends Error {
  override readonly name = 'ScriptFileError';
  constructor(
    readonly where: string,
    readonly file: string,
    readonly rule: string,
  ) {
    super(`${where}: ${JSON.stringify(file)} is refused: ${rule}`);
  }
}

const inside = (base: string, p: string) => {
  const r = relative(base, p);
  return r !== '' && !r.startsWith(`..${sep}`) && r !== '..' && !isAbsolute(r);
};

/**
 * Reads and parses the script file `scriptFile` under `baseDir`. Rejects with a ScriptFileError
 * that names the path and the rule.
 */
export async function readScriptFile(
  where: string,
  scriptFile: string,
  baseDir: string,
  maxBytes = SCRIPT_FILE_MAX_BYTES,
): Promise<unknown> {
  const refuse = (rule: string) => new ScriptFileError(where, scriptFile, rule);
  const shape = scriptPathRule(scriptFile);
  if (shape) throw refuse(shape);
  let base: string;
  try {
    base = await realpath(baseDir);
  } catch (e) {
    throw refuse(`the folder for script files ${JSON.stringify(baseDir)} cannot be used (${codeOf(e)})`);
  }
  let real: string;
  try {
    real = await realpath(resolve(base, scriptFile));
  } catch (e) {
    throw refuse(`it cannot be read (${codeOf(e)})`);
  }
  if (!inside(base, real)) throw refuse(`it resolves (through a symlink) outside ${JSON.stringify(baseDir)}`);
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    throw refuse(`it cannot be opened (${codeOf(e)})`);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw refuse('it is not a regular file (a FIFO, device, socket or folder)');
    if (st.size > maxBytes) throw refuse(`it is ${st.size} bytes, more than the limit of ${maxBytes}`);
    // Read at most one byte past the limit: a file that grows after the check is caught too.
    const buf = Buffer.alloc(Math.min(st.size, maxBytes) + 1);
    let n = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
      if (n === buf.length) break;
    }
    if (n > maxBytes) throw refuse(`it is more than the limit of ${maxBytes} bytes`);
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(buf.subarray(0, n));
    } catch {
      throw refuse('it is not UTF-8 text');
    }
    try {
      return JSON.parse(text);
    } catch {
      throw refuse('it is not valid JSON');
    }
  } finally {
    await fh.close();
  }
}

function codeOf(e: unknown): string {
  const code = (e as NodeJS.ErrnoException)?.code;
  return typeof code === 'string' ? code : 'error';
}

/** Where the server keeps script files for the flows it stores. */
export function serverScriptsDir(dataDir: string): string {
  return join(dataDir, SCRIPTS_DIR);
}

/**
 * Reads every `scriptFile` of a flow's scripted models under `baseDir`, as a run would, and
 * returns a `script-file` problem for each one that cannot be used (for `validate` and `run`).
 */
export async function checkScriptFiles(flow: Flow, baseDir: string): Promise<Problem[]> {
  const out: Problem[] = [];
  for (const [name, m] of Object.entries(flow.models)) {
    if (m.provider !== 'scripted' || typeof m.scriptFile !== 'string') continue;
    const where = `models.${name}.scriptFile`;
    try {
      await readScriptFile(where, m.scriptFile, baseDir);
    } catch (e) {
      const rule = e instanceof ScriptFileError ? e.rule : 'it cannot be read';
      out.push(
        problem('script-file', pointer('models', name, 'scriptFile'), `${quote(m.scriptFile)}: ${rule}`),
      );
    }
  }
  return out;
}
