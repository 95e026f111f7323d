/**
 * The operator's policy flags shared by `run`, `serve` and `mcp` (and the future `worker`):
 * `--allow-outbound <loopback|private|HOST[:PORT]|CIDR>` (repeatable; added to
 * SWITCHBOARD_ALLOW_OUTBOUND), `--secrets-config FILE` and `--allow-secret NAME=HOST[,HOST]`
 * (repeatable). See docs/security-consent-secrets.md.
 */
import type { Command } from 'commander';
import type { OutboundPolicy } from '../net/outbound.js';
import type { SecretsPolicy } from '../net/secrets.js';

export interface OperatorFlags {
  allowOutbound?: string[];
  secretsConfig?: string;
  allowSecret?: string[];
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

export function addOperatorFlags(cmd: Command): Command {
  return cmd
    .option(
      '--allow-outbound <dest>',
      'let models, MCP HTTP servers and the http tool reach loopback, private, HOST[:PORT] or a CIDR range (repeatable; also SWITCHBOARD_ALLOW_OUTBOUND)',
      collect,
    )
    .option('--secrets-config <file>', 'which ${env:NAME} flows may use and the hosts each may go to (JSON)')
    .option(
      '--allow-secret <name=hosts>',
      'let flows send the variable NAME to these hosts: NAME=HOST[,HOST] (repeatable)',
      collect,
    );
}

/** The policies the flags (and the environment) give; throws with a message naming the bad value. */
export async function operatorPolicyOf(
  flags: OperatorFlags,
  env: Record<string, string | undefined> = process.env,
  dataDir?: string,
): Promise<{ outbound: OutboundPolicy; secrets: SecretsPolicy }> {
  const { operatorOutboundEntries, outboundPolicyFrom } = await import('../net/destinations.js');
  const { loadSecretsPolicy } = await import('../net/secrets.js');
  return {
    outbound: outboundPolicyFrom(operatorOutboundEntries(flags.allowOutbound, env)),
    secrets: loadSecretsPolicy({
      ...(dataDir ? { dataDir } : {}),
      ...(flags.secretsConfig ? { configFile: flags.secretsConfig } : {}),
      ...(flags.allowSecret ? { allow: flags.allowSecret } : {}),
    }),
  };
}
