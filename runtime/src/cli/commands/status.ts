/** `switchboard status --redis URL [--json]`: workers, the runs each holds, queue depth. */
import type { Command } from 'commander';
import { loadRedisModule } from '../../redis/packages.js';
import { type CliContext, EXIT } from '../context.js';

export function registerStatus(program: Command, ctx: CliContext): void {
  program
    .command('status')
    .description('Show the workers, their runs and the queue of a scaled-out deployment.')
    .option('--redis <url>', 'the deployment’s Redis (default $SWITCHBOARD_REDIS_URL)')
    .option('--json', 'print JSON')
    .action(async (opts: { redis?: string; json?: boolean }) => {
      const { redisUrlFrom } = await import('../../redis/keys.js');
      let url: string | undefined;
      try {
        url = redisUrlFrom(opts.redis);
      } catch (e) {
        ctx.err(`switchboard status: ${(e as Error).message}\n`);
        return ctx.setExit(EXIT.usage);
      }
      if (!url) {
        ctx.err('switchboard status: give --redis URL or set SWITCHBOARD_REDIS_URL\n');
        return ctx.setExit(EXIT.usage);
      }
      const { clusterStatus, formatStatus } = await loadRedisModule(() => import('../../redis/status.js'));
      try {
        const s = await clusterStatus(url);
        ctx.out(opts.json ? `${JSON.stringify(s, null, 2)}\n` : formatStatus(s));
        ctx.setExit(EXIT.ok);
      } catch (e) {
        ctx.err(
          `switchboard status: redis_unavailable: cannot read ${new URL(url).host}: ${(e as Error).message}\n`,
        );
        ctx.setExit(EXIT.failed);
      }
    });
}
