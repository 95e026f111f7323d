/**
 * `switchboard worker --redis URL [--concurrency N] [--data DIR]`: executes runs that
 * `switchboard serve --redis` enqueued, until SIGINT/SIGTERM; then it takes no new run, lets
 * the ones under way finish for SWITCHBOARD_WORKER_GRACE_MS (default 10 s) and hands the rest
 * back to the queue, where another worker continues them from their last checkpoint.
 */
import type { Command } from 'commander';
import { loadRedisModule } from '../../redis/packages.js';
import { type CliContext, EXIT } from '../context.js';
import { addOperatorFlags, type OperatorFlags, operatorPolicyOf } from '../operator-flags.js';
import { untilStopSignal } from '../stop-signal.js';

interface WorkerFlags extends OperatorFlags {
  redis?: string;
  concurrency: string;
  data?: string;
  quiet?: boolean;
}

export function registerWorker(program: Command, ctx: CliContext): void {
  const cmd = program
    .command('worker')
    .description('Execute runs enqueued on Redis by `switchboard serve --redis` (scale-out).')
    .option('--redis <url>', 'the Redis the servers enqueue on (default $SWITCHBOARD_REDIS_URL)')
    .option('--concurrency <n>', 'runs executed at once', '4')
    .option(
      '--data <dir>',
      'directory for run files and scripts (default $SWITCHBOARD_DATA or ./.switchboard)',
    )
    .option('--quiet', 'only warnings and errors in the log');
  addOperatorFlags(cmd).action(async (opts: WorkerFlags) => {
    const fail = (msg: string, code: number = EXIT.usage) => {
      ctx.err(`switchboard worker: ${msg}\n`);
      ctx.setExit(code);
    };
    const { redisUrlFrom } = await import('../../redis/keys.js');
    let url: string | undefined;
    try {
      url = redisUrlFrom(opts.redis);
    } catch (e) {
      return fail((e as Error).message);
    }
    if (!url) return fail('give --redis URL or set SWITCHBOARD_REDIS_URL');
    if (!/^[1-9]\d{0,3}$/.test(opts.concurrency))
      return fail(`--concurrency must be a positive integer, not ${opts.concurrency}`);
    const { resolveDataDir } = await import('../../store/store.js');
    const dataDir = resolveDataDir(opts.data);
    let policy: Awaited<ReturnType<typeof operatorPolicyOf>>;
    try {
      policy = await operatorPolicyOf(opts, process.env, dataDir);
    } catch (e) {
      return fail((e as Error).message);
    }
    const { createMcpToolHost } = await import('../../tools/mcp-host.js');
    const { quoteWord } = await import('../../mcp/command-line.js');
    const { RunWorker } = await loadRedisModule(() => import('../../redis/worker.js'));
    const log = (level: string) => (obj: object | string, msg?: string) => {
      if (opts.quiet && level === 'info') return;
      ctx.err(
        `switchboard worker: ${level}: ${msg ?? ''} ${typeof obj === 'string' ? obj : JSON.stringify(obj)}\n`,
      );
    };
    const w = new RunWorker({
      url,
      dataDir,
      concurrency: Number(opts.concurrency),
      outbound: policy.outbound,
      secrets: policy.secrets,
      env: process.env,
      tools: ({ flow }) =>
        createMcpToolHost(flow, {
          env: process.env,
          flowRef: `--data ${quoteWord(dataDir)} ${quoteWord(flow.id)}`,
          outboundPolicy: policy.outbound,
          secrets: policy.secrets,
          storeDir: dataDir,
        }),
      logger: { info: log('info'), warn: log('warn'), error: log('error') },
    });
    w.start();
    ctx.out(
      `switchboard: worker ${w.id} takes runs from ${new URL(url).host} (concurrency ${opts.concurrency})\n`,
    );
    await untilStopSignal();
    const grace = Number(process.env.SWITCHBOARD_WORKER_GRACE_MS ?? 10_000);
    ctx.out(`switchboard: worker stopping; runs under way get ${grace} ms, then go back to the queue\n`);
    await w.close(Number.isFinite(grace) && grace >= 0 ? grace : 10_000);
    await (await import('../../mcp/pool.js')).shutdownMcpPool();
    ctx.setExit(EXIT.ok);
  });
}
