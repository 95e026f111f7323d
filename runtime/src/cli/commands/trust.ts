/**
 * `switchboard trust FLOW`: lists every command the flow would spawn (stdio MCP servers, ACP
 * agent commands, the shell built-in) in full — command, args, env keys and values as written,
 * cwd — and records the operator's approval in the trust file. On a terminal it asks for each;
 * in scripts `--yes` approves all. `--tools` also re-approves tools whose pinned description or
 * schema changed.
 */
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { type CliContext, EXIT } from '../context.js';
import { readValidFlow } from '../read-flow.js';

interface TrustCliOptions {
  yes?: boolean;
  tools?: boolean;
  json?: boolean;
  trustFile?: string;
}

export function registerTrust(program: Command, ctx: CliContext): void {
  program
    .command('trust')
    .description(
      'Show the commands a flow would run and approve them (stored in $SWITCHBOARD_HOME/trust.json).',
    )
    .argument('<flow>', 'flow JSON file')
    .option('-y, --yes', 'approve everything listed without asking (for scripts)')
    .option('--tools', 'also re-approve tools whose pinned description or schema changed')
    .option('--json', 'print the list as JSON and approve nothing unless --yes')
    .option(
      '--trust-file <path>',
      'the trust file (default $SWITCHBOARD_HOME/trust.json or ~/.switchboard/trust.json)',
    )
    .action(async (file: string, opts: TrustCliOptions) => {
      const { commandsOf, describeUse, terminalConsentIO } = await import('../../mcp/consent.js');
      const { TrustStore } = await import('../../mcp/trust.js');
      const flow = await readValidFlow('trust', file, ctx);
      if (!flow) return;
      const store = new TrustStore(opts.trustFile ? resolve(opts.trustFile) : undefined);
      const uses = commandsOf(flow, store);
      const interactive = ctx.isTTY && (ctx.stdin as { isTTY?: boolean } | undefined)?.isTTY === true;
      const io = terminalConsentIO(ctx.stdin ?? process.stdin, process.stderr);

      if (opts.json) {
        if (opts.yes) for (const u of uses) if (!u.approved) store.approve(u.commandLine, flow.id);
        ctx.out(`${JSON.stringify(commandsOf(flow, store), null, 2)}\n`);
        ctx.setExit(commandsOf(flow, store).every((u) => u.approved) ? EXIT.ok : EXIT.needsHuman);
        return;
      }
      if (uses.length === 0) ctx.out(`${file}: runs no commands\n`);
      let pending = 0;
      for (const u of uses) {
        ctx.out(`${describeUse(u)}\n`);
        if (u.approved) continue;
        let yes = opts.yes === true;
        if (!yes && interactive) yes = await io.ask('Approve this exact command line?');
        if (yes) {
          store.approve(u.commandLine, flow.id);
          ctx.out(`  approved (${store.path})\n`);
        } else {
          pending++;
          ctx.out(`  not approved${interactive ? '' : ' (re-run on a terminal, or with --yes)'}\n`);
        }
      }
      if (opts.tools) {
        const { repinFlowTools } = await import('../../mcp/repin.js');
        try {
          const r = await repinFlowTools(flow, {
            trust: store,
            baseDir: dirname(resolve(file)),
            approve: async (c) => {
              ctx.out(
                `tool ${c.server}/${c.tool}: ${c.oldHash ? 'description or schema changed' : 'not pinned yet'}\n  ${c.description.slice(0, 500)}\n`,
              );
              const ok =
                opts.yes === true || (interactive && (await io.ask('Approve this tool as it is now?')));
              ctx.out(ok ? '  approved\n' : '  left disabled\n');
              if (!ok) pending++;
              return ok;
            },
          });
          if (r.changed.length === 0) ctx.out('every pinned tool is unchanged\n');
        } catch (e) {
          ctx.err(`switchboard trust: ${(e as Error).message}\n`);
          ctx.setExit(EXIT.failed);
          return;
        }
      }
      ctx.setExit(pending === 0 ? EXIT.ok : EXIT.needsHuman);
    });
}
