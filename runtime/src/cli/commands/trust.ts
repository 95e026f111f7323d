/**
 * `switchboard trust FLOW`: lists every command the flow would spawn (stdio MCP servers, ACP
 * agent commands, the shell built-in) in full — command, args, env keys and values as written,
 * cwd — and records the operator's approval FOR THAT FLOW in the trust file: the flow id and a
 * hash of its command definitions, so the approval never covers another flow or an edited one.
 * FLOW is a flow file, or with `--data DIR` the id of a flow stored by `switchboard serve`.
 * On a terminal it asks for each; in scripts `--yes` approves all. `--tools` also re-approves
 * tools whose pinned description or schema changed. `--list` shows every approval, `--revoke ID`
 * withdraws one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import type { Command } from 'commander';
import type { TrustStore } from '../../mcp/trust.js';
import { type CliContext, EXIT } from '../context.js';
import { readValidFlow } from '../read-flow.js';

interface TrustCliOptions {
  yes?: boolean;
  tools?: boolean;
  json?: boolean;
  trustFile?: string;
  list?: boolean;
  revoke?: string;
  data?: string;
}

/** A flow stored in a server's catalog, read without taking the data directory's lock. */
async function storedFlow(dataDir: string, id: string, ctx: CliContext): Promise<Flow | undefined> {
  const file = join(resolve(dataDir), 'catalog.json');
  let catalog: { flows?: unknown };
  try {
    catalog = JSON.parse(readFileSync(file, 'utf8')) as { flows?: unknown };
  } catch (e) {
    ctx.err(
      `switchboard trust: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}\n`,
    );
    ctx.setExit(EXIT.failed);
    return undefined;
  }
  const flows = catalog.flows as Record<string, { flow?: unknown }> | undefined;
  const record = flows && typeof flows === 'object' && Object.hasOwn(flows, id) ? flows[id] : undefined;
  if (!record?.flow) {
    ctx.err(`switchboard trust: ${file} holds no flow "${id}"\n`);
    ctx.setExit(EXIT.usage);
    return undefined;
  }
  const { validate } = await import('@switchboard/nodes');
  const v = validate(record.flow);
  if (!v.ok) {
    ctx.err(`switchboard trust: the stored flow "${id}" is not valid (${v.errors.length} problems)\n`);
    ctx.setExit(EXIT.usage);
    return undefined;
  }
  return record.flow as Flow;
}

function list(store: TrustStore, ctx: CliContext, asJson: boolean): void {
  const data = store.read();
  const flows = store.listFlows();
  if (asJson) {
    ctx.out(
      `${JSON.stringify({ path: store.path, flows, droppedLegacy: data.droppedLegacy ?? 0 }, null, 2)}\n`,
    );
    return;
  }
  if (flows.length === 0) ctx.out(`no flow is approved (${store.path})\n`);
  for (const f of flows) {
    ctx.out(`${f.flowId}  approved ${f.approvedAt}  definitions ${f.hash.slice(0, 16)}\n`);
    for (const u of f.uses) ctx.out(`  ${u.kind} ${u.name}: ${u.display}\n`);
  }
  if (data.droppedLegacy)
    ctx.out(
      `${data.droppedLegacy} command approvals of an older trust file no longer count: approve each flow again with switchboard trust FLOW\n`,
    );
}

export function registerTrust(program: Command, ctx: CliContext): void {
  program
    .command('trust')
    .description(
      'Show the commands a flow would run and approve them for that flow (stored in $SWITCHBOARD_HOME/trust.json).',
    )
    .argument('[flow]', 'flow JSON file, or with --data the id of a flow stored by switchboard serve')
    .option('-y, --yes', 'approve everything listed without asking (for scripts)')
    .option('--tools', 'also re-approve tools whose pinned description or schema changed')
    .option('--json', 'print the list as JSON and approve nothing unless --yes')
    .option('--list', 'list every approved flow and its commands')
    .option('--revoke <flowId>', 'withdraw every approval of a flow')
    .option('--data <dir>', "read FLOW by id from this server data directory's catalog")
    .option(
      '--trust-file <path>',
      'the trust file (default $SWITCHBOARD_HOME/trust.json or ~/.switchboard/trust.json)',
    )
    .action(async (file: string | undefined, opts: TrustCliOptions) => {
      const { approveFlow, commandsOf, describeUse, terminalConsentIO } = await import(
        '../../mcp/consent.js'
      );
      const { TrustStore } = await import('../../mcp/trust.js');
      const store = new TrustStore(opts.trustFile ? resolve(opts.trustFile) : undefined);
      if (opts.list) {
        list(store, ctx, opts.json === true);
        ctx.setExit(EXIT.ok);
        return;
      }
      if (opts.revoke !== undefined) {
        const found = store.revokeFlow(opts.revoke);
        ctx.out(
          found
            ? `revoked every approval of flow "${opts.revoke}" (${store.path})\n`
            : `flow "${opts.revoke}" had no approval (${store.path})\n`,
        );
        ctx.setExit(found ? EXIT.ok : EXIT.failed);
        return;
      }
      if (file === undefined) {
        ctx.err(
          'switchboard trust: name a flow file (or --data DIR FLOW_ID), or use --list or --revoke FLOW_ID\n',
        );
        ctx.setExit(EXIT.usage);
        return;
      }
      const fromCatalog = opts.data !== undefined && !existsSync(file);
      const flow = fromCatalog
        ? await storedFlow(opts.data as string, file, ctx)
        : await readValidFlow('trust', file, ctx);
      if (!flow) return;
      const uses = commandsOf(flow, store);
      const interactive = ctx.isTTY && (ctx.stdin as { isTTY?: boolean } | undefined)?.isTTY === true;
      const io = terminalConsentIO(ctx.stdin ?? process.stdin, process.stderr);

      if (opts.json) {
        if (opts.yes && uses.some((u) => !u.approved)) approveFlow(store, flow);
        const now = commandsOf(flow, store);
        ctx.out(`${JSON.stringify(now, null, 2)}\n`);
        ctx.setExit(now.every((u) => u.approved) ? EXIT.ok : EXIT.needsHuman);
        return;
      }
      if (uses.length === 0) ctx.out(`${file}: runs no commands\n`);
      else ctx.out(`flow "${flow.id}":\n`);
      let pending = 0;
      const yesNow = uses.filter((u) => u.approved);
      for (const u of uses) {
        ctx.out(`${describeUse(u)}\n`);
        if (u.approved) continue;
        let yes = opts.yes === true;
        if (!yes && interactive) yes = await io.ask(`Approve this exact command line for flow "${flow.id}"?`);
        if (yes) {
          yesNow.push(u);
          ctx.out(`  approved for flow "${flow.id}" (${store.path})\n`);
        } else {
          pending++;
          ctx.out(`  not approved${interactive ? '' : ' (re-run on a terminal, or with --yes)'}\n`);
        }
      }
      if (yesNow.length > uses.filter((u) => u.approved).length) approveFlow(store, flow, yesNow);
      if (opts.tools) {
        const { repinFlowTools } = await import('../../mcp/repin.js');
        try {
          const r = await repinFlowTools(flow, {
            trust: store,
            baseDir: fromCatalog ? process.cwd() : dirname(resolve(file)),
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
