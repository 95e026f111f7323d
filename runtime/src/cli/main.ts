/**
 * The `switchboard` command line. Each command lives in `commands/` and exports one
 * `register…(program, ctx)`; this file only lists them. Commands import heavy modules lazily
 * inside their actions so that `switchboard validate` starts fast.
 */
import { FLOW_VERSION } from '@switchboard/schemas/core';
import { Command, CommanderError } from 'commander';
import { VERSION } from '../version.js';
import { registerDiff } from './commands/diff.js';
import { registerMcp } from './commands/mcp.js';
import { registerMcpBuiltin } from './commands/mcp-builtin.js';
import { registerMcpLogin } from './commands/mcp-login.js';
import { registerPin } from './commands/pin.js';
import { registerReplay } from './commands/replay.js';
import { registerResume } from './commands/resume.js';
import { registerRun } from './commands/run.js';
import { registerServe } from './commands/serve.js';
import { registerStatus } from './commands/status.js';
import { registerTest } from './commands/test.js';
import { registerTrust } from './commands/trust.js';
import { registerValidate } from './commands/validate.js';
import { registerWorker } from './commands/worker.js';
import { type CliContext, EXIT } from './context.js';

const REGISTRARS: Array<(program: Command, ctx: CliContext) => void> = [
  registerValidate,
  registerServe,
  registerResume,
  registerRun,
  registerTrust,
  registerMcpBuiltin,
  registerMcp,
  registerMcpLogin,
  registerTest,
  registerReplay,
  registerDiff,
  registerPin,
  registerWorker,
  registerStatus,
];

export { EXIT };

export interface MainIO {
  out?: (s: string) => void;
  err?: (s: string) => void;
  isTTY?: boolean;
  stdin?: NodeJS.ReadableStream;
}

/** Runs the CLI and returns the exit code (0 ok, 1 failed, 2 usage, 3 needs a human). */
export async function main(argv: string[], io: MainIO = {}): Promise<number> {
  let code: number = EXIT.ok;
  const ctx: CliContext = {
    out: io.out ?? ((s) => process.stdout.write(s)),
    err: io.err ?? ((s) => process.stderr.write(s)),
    setExit: (c) => {
      code = c;
    },
    isTTY: io.isTTY ?? process.stderr.isTTY === true,
    stdin: io.stdin ?? process.stdin,
  };
  const program = new Command('switchboard')
    .description('Build, validate, run and serve multi-agent flows.')
    .version(
      `switchboard ${VERSION} (flow format version ${FLOW_VERSION})`,
      '-V, --version',
      'print the package and flow-format versions',
    )
    .exitOverride()
    .configureOutput({ writeOut: ctx.out, writeErr: ctx.err })
    .showHelpAfterError();
  for (const register of REGISTRARS) register(program, ctx);
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      if (
        e.code === 'commander.helpDisplayed' ||
        e.code === 'commander.version' ||
        e.code === 'commander.help'
      )
        return EXIT.ok;
      return EXIT.usage;
    }
    throw e;
  }
  return code;
}
