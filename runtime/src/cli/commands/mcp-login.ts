/**
 * `switchboard mcp-login URL [--data DIR]`: the operator logs in to a remote MCP server that
 * asks for OAuth. It prints the authorization URL, receives the callback on a loopback port and
 * stores the tokens (mode 0600) in `$SWITCHBOARD_HOME/mcp-auth`, or in `DIR/mcp-auth` for a
 * server started with `serve --data DIR`. `--client-id` (+ `--client-secret-env`) configures a
 * pre-registered client; with `--client-credentials` runs get tokens with no person at all, the
 * client authenticating with its secret or, with `--private-key FILE`, with signed assertions
 * (private_key_jwt).
 * `--list` shows the stored logins (never a secret), `--logout` forgets one.
 */
import type { Command } from 'commander';
import { type CliContext, EXIT } from '../context.js';
import { addOperatorFlags, type OperatorFlags, operatorPolicyOf } from '../operator-flags.js';

interface LoginFlags extends OperatorFlags {
  data?: string;
  port?: string;
  clientId?: string;
  clientSecretEnv?: string;
  clientCredentials?: boolean;
  privateKey?: string;
  signingAlg?: string;
  scope?: string;
  list?: boolean;
  logout?: boolean;
}

export function registerMcpLogin(program: Command, ctx: CliContext): void {
  const cmd = program
    .command('mcp-login')
    .description(
      'Log in to a remote MCP server that needs OAuth; the tokens stay with the operator, never in a flow.',
    )
    .argument('[url]', "the MCP server's URL, as the flow names it")
    .option('--data <dir>', "store the login in a server's data directory (as serve --data DIR uses it)")
    .option('--port <port>', 'loopback port of the callback (0 picks a free one)', '33418')
    .option('--client-id <id>', 'a client registered with the authorization server beforehand')
    .option('--client-secret-env <name>', "the environment variable holding that client's secret")
    .option('--client-credentials', 'use the client_credentials grant (machine to machine, no browser)')
    .option(
      '--private-key <file>',
      'authenticate the client with assertions signed by this PEM private key (private_key_jwt) instead of a secret',
    )
    .option('--signing-alg <alg>', "the assertions' algorithm (default: the key's, e.g. ES256 for P-256)")
    .option('--scope <scope>', 'scope to ask for with --client-credentials')
    .option('--list', 'list the stored logins')
    .option('--logout', 'forget the login of URL');
  addOperatorFlags(cmd).action(async (url: string | undefined, opts: LoginFlags) => {
    const { resolve } = await import('node:path');
    const { McpAuthStore, mcpAuthDir, defaultMcpAuthStore, canonicalServerUrl } = await import(
      '../../mcp/oauth/store.js'
    );
    const store = opts.data ? new McpAuthStore(mcpAuthDir(resolve(opts.data))) : defaultMcpAuthStore();
    const usage = (msg: string) => {
      ctx.err(`switchboard mcp-login: ${msg}\n`);
      ctx.setExit(EXIT.usage);
    };
    if (opts.list) {
      for (const e of store.list())
        ctx.out(
          `${e.serverUrl}\t${e.grant}\t${e.hasTokens ? 'tokens' : 'no tokens'}${e.expiresAt ? `\texpires ${new Date(e.expiresAt).toISOString()}` : ''}\n`,
        );
      return;
    }
    if (!url) return usage('needs the server URL (or --list)');
    let serverUrl: string;
    try {
      serverUrl = canonicalServerUrl(url);
    } catch (e) {
      return usage((e as Error).message);
    }
    if (opts.logout) {
      ctx.out(
        store.remove(serverUrl) ? `forgot the login of ${serverUrl}\n` : `no login stored for ${serverUrl}\n`,
      );
      return;
    }
    const port = Number(opts.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      return usage(`--port needs a port number, got ${opts.port}`);
    if (opts.clientCredentials && !opts.clientId) return usage('--client-credentials needs --client-id');
    if ((opts.privateKey || opts.signingAlg) && !opts.clientId)
      return usage(`${opts.privateKey ? '--private-key' : '--signing-alg'} needs --client-id`);
    if (opts.signingAlg && !opts.privateKey) return usage('--signing-alg needs --private-key');
    if (opts.privateKey && opts.clientSecretEnv)
      return usage(
        '--private-key and --client-secret-env are two ways to authenticate the client: choose one',
      );
    if (opts.clientId) {
      let secret: string | undefined;
      if (opts.clientSecretEnv) {
        secret = process.env[opts.clientSecretEnv];
        if (!secret) return usage(`--client-secret-env ${opts.clientSecretEnv}: that variable is not set`);
      }
      let signingKey: { pem: string; alg: string } | undefined;
      if (opts.privateKey) {
        const { readFileSync } = await import('node:fs');
        const { readSigningKey } = await import('../../mcp/oauth/signing-key.js');
        const where = `--private-key ${opts.privateKey}`;
        try {
          signingKey = readSigningKey(readFileSync(resolve(opts.privateKey), 'utf8'), where, opts.signingAlg);
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          return usage(code ? `${where}: cannot read it (${code})` : (e as Error).message);
        }
      }
      store.write(serverUrl, {
        grant: opts.clientCredentials ? 'client_credentials' : 'authorization_code',
        preRegistered: true,
        client: { client_id: opts.clientId, ...(secret ? { client_secret: secret } : {}) },
        ...(signingKey ? { signingKey } : {}),
        ...(opts.scope ? { scope: opts.scope } : {}),
      });
    }
    let policy: Awaited<ReturnType<typeof operatorPolicyOf>>;
    try {
      policy = await operatorPolicyOf(opts);
    } catch (e) {
      return usage((e as Error).message);
    }
    const { createGuardedFetch } = await import('../../net/outbound.js');
    const { loginToServer } = await import('../../mcp/oauth/login.js');
    try {
      const r = await loginToServer({
        serverUrl,
        store,
        fetch: createGuardedFetch(policy.outbound),
        port,
        onUrl: (u) =>
          ctx.err(`Open this page to authorize Switchboard:\n\n  ${u.href}\n\nWaiting for the callback…\n`),
      });
      ctx.out(
        `logged in to ${serverUrl}: ${r.tools.length} tools; the login is stored in ${r.file} (mode 0600)\n`,
      );
    } catch (e) {
      ctx.err(`switchboard mcp-login: ${(e as Error).message}\n`);
      ctx.setExit(EXIT.failed);
    }
  });
}
