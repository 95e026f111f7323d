/**
 * `switchboard resume RUN [--data DIR]`: continues a run from its last checkpoint, headless,
 * and prints its result. Human nodes without an answer fail the run (no one to ask).
 */
import type { Command } from 'commander';
import { type CliContext, EXIT } from '../context.js';
import { addOperatorFlags, type OperatorFlags, operatorPolicyOf } from '../operator-flags.js';
import { startFailure } from './serve.js';

export function registerResume(program: Command, ctx: CliContext): void {
  const cmd = program
    .command('resume')
    .description('Resume a run from its last checkpoint, headless, and print its result.')
    .argument('<run>', 'run id')
    .option('--data <dir>', 'data directory (default $SWITCHBOARD_DATA or ./.switchboard)')
    .option('--json', 'print the run record as JSON');
  addOperatorFlags(cmd).action(
    async (runId: string, opts: OperatorFlags & { data?: string; json?: boolean }) => {
      const { Store, resolveDataDir, RUN_ID_RE } = await import('../../store/store.js');
      const { RunManager } = await import('../../server/run-manager.js');
      if (!RUN_ID_RE.test(runId)) {
        ctx.err(`switchboard resume: not a run id: ${runId}\n`);
        ctx.setExit(EXIT.usage);
        return;
      }
      let store: Awaited<ReturnType<typeof Store.open>>;
      try {
        store = await Store.open(resolveDataDir(opts.data));
      } catch (e) {
        const f = startFailure(e);
        ctx.err(`switchboard resume: ${f.message}\n`);
        ctx.setExit(f.code);
        return;
      }
      try {
        const rec = store.catalog.data.runs[runId];
        if (!rec) {
          ctx.err(`switchboard resume: no run ${runId} in ${store.dir}\n`);
          ctx.setExit(EXIT.failed);
          return;
        }
        // The same operator policy as the server that started the run (DATA/secrets.json included).
        let policy: Awaited<ReturnType<typeof operatorPolicyOf>>;
        try {
          policy = await operatorPolicyOf(opts, process.env, store.dir);
        } catch (e) {
          ctx.err(`switchboard resume: ${(e as Error).message}\n`);
          ctx.setExit(EXIT.usage);
          return;
        }
        const runs = new RunManager({
          store,
          outbound: policy.outbound,
          secrets: policy.secrets,
          humanInput: 'fail',
          logger: {
            info: () => {},
            warn: (o, m) => ctx.err(`switchboard resume: ${m ?? ''} ${JSON.stringify(o)}\n`),
            error: (o, m) => ctx.err(`switchboard resume: ${m ?? ''} ${JSON.stringify(o)}\n`),
          },
        });
        let outcome: Awaited<ReturnType<typeof runs.resumeStored>>;
        try {
          outcome = await runs.resumeStored(runId, { allowInterrupted: true });
        } catch (e) {
          // The disk still refuses: named, and the run stays paused by it.
          if ((e as Error).name !== 'StorageError') throw e;
          ctx.err(`switchboard resume: ${(e as { code: string }).code}: ${(e as Error).message}\n`);
          ctx.setExit(EXIT.failed);
          return;
        }
        const final = await runs.settled(runId);
        if (opts.json) ctx.out(`${JSON.stringify(final, null, 2)}\n`);
        else if (outcome === 'final' && final)
          ctx.out(
            `${runId}: already ${final.status}${final.output !== undefined ? `: ${JSON.stringify(final.output)}` : ''}\n`,
          );
        else if (final)
          ctx.out(
            `${runId}: ${final.status}${final.output !== undefined ? `: ${JSON.stringify(final.output)}` : final.error ? ` (${final.error.code}: ${final.error.message})` : ''}\n`,
          );
        ctx.setExit(final?.status === 'completed' ? EXIT.ok : EXIT.failed);
      } finally {
        await store.close();
      }
    },
  );
}
