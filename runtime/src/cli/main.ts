/** The `switchboard` command line. Commands register here; each lives in its own module. */
import { Command, CommanderError } from 'commander';
import { formatProblem, validateFiles } from './validate-command.js';

export const EXIT = { ok: 0, failed: 1, usage: 2, needsHuman: 3 } as const;

export function buildProgram(
  out: (s: string) => void,
  err: (s: string) => void,
): { program: Command; result: { code: number } } {
  const result = { code: EXIT.ok as number };
  const program = new Command('switchboard')
    .description('Build, validate and run multi-agent flows.')
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err })
    .showHelpAfterError();

  program
    .command('validate')
    .description('Validate flow files; prints FILE: /json/path (id): message per problem.')
    .argument('<files...>', 'flow JSON files')
    .option('--json', 'print the problem lists as JSON')
    .action(async (files: string[], opts: { json?: boolean }) => {
      const reports = await validateFiles(files);
      if (opts.json) out(`${JSON.stringify(reports, null, 2)}\n`);
      else
        for (const r of reports) {
          for (const p of r.errors) err(`${formatProblem(r.file, p, 'error')}\n`);
          for (const p of r.warnings) err(`${formatProblem(r.file, p, 'warning')}\n`);
          if (r.ok) out(`${r.file}: ok${r.warnings.length ? ` (${r.warnings.length} warnings)` : ''}\n`);
        }
      result.code = reports.every((r) => r.ok) ? EXIT.ok : EXIT.failed;
    });

  return { program, result };
}

/** Runs the CLI and returns the exit code (0 ok, 1 failed, 2 usage, 3 needs a human). */
export async function main(
  argv: string[],
  io = { out: (s: string) => process.stdout.write(s), err: (s: string) => process.stderr.write(s) },
): Promise<number> {
  const { program, result } = buildProgram(io.out, io.err);
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
  return result.code;
}
