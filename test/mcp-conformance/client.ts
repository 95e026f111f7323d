/**
 * The client the conformance suite launches (`conformance client --command "…"`): the suite
 * appends its server's URL and names the scenario in MCP_CONFORMANCE_SCENARIO. Everything here
 * goes through Switchboard's own MCP client (`McpConnection` over the guarded fetch), the way a
 * flow's `mcpServers` entry does: connect, list the tools, call each one with arguments built
 * from its input schema, answer elicitation with the form's defaults, then close.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { answerElicitation } from '../../runtime/src/engine/elicitation.js';
import { McpConnection } from '../../runtime/src/mcp/connection.js';
import { StoredOAuthProvider } from '../../runtime/src/mcp/oauth/provider.js';
import { readSigningKey } from '../../runtime/src/mcp/oauth/signing-key.js';
import { McpAuthStore } from '../../runtime/src/mcp/oauth/store.js';
import { createGuardedFetch } from '../../runtime/src/net/outbound.js';

const url = process.argv.at(-1);
if (!url || !URL.canParse(url)) {
  console.error(`usage: client.ts SERVER_URL (got ${JSON.stringify(url)})`);
  process.exit(2);
}

/** A value of each required property's type: enough for the suite's test tools. */
function argsFor(tool: Tool): Record<string, unknown> {
  const args = Object.create(null) as Record<string, unknown>;
  const props = (tool.inputSchema.properties ?? {}) as Record<string, { type?: string }>;
  for (const key of tool.inputSchema.required ?? []) {
    const t = props[key]?.type;
    args[key] = t === 'number' || t === 'integer' ? 1 : t === 'boolean' ? true : t === 'object' ? {} : 'x';
  }
  return args;
}

/**
 * The person at the browser: the suite's authorization server approves at once and redirects to
 * the callback with a code, which is read from the redirect (state checked, as a callback does).
 */
function authorizer(guarded: typeof fetch) {
  return async (authorizationUrl: URL): Promise<string> => {
    const res = await guarded(authorizationUrl, { redirect: 'manual' });
    await res.body?.cancel();
    const location = res.headers.get('location');
    if (!location) throw new Error(`the authorization page answered ${res.status} without a redirect`);
    const back = new URL(location, authorizationUrl);
    if (back.searchParams.get('state') !== authorizationUrl.searchParams.get('state'))
      throw new Error('the callback carries another state: refused');
    const code = back.searchParams.get('code');
    if (!code) throw new Error(`the callback has no code: ${back.searchParams.get('error') ?? '?'}`);
    return code;
  };
}

async function main(serverUrl: string): Promise<void> {
  // The operator's store, as `switchboard mcp-login` would leave it (here: empty, or the client
  // the operator pre-registered, which the suite hands over in MCP_CONFORMANCE_CONTEXT).
  const dir = mkdtempSync(join(tmpdir(), 'sb-conformance-auth-'));
  const store = new McpAuthStore(join(dir, 'mcp-auth'));
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as {
    client_id?: string;
    client_secret?: string;
    private_key_pem?: string;
    signing_algorithm?: string;
  };
  if (context.client_id) {
    const grant = process.env.MCP_CONFORMANCE_SCENARIO?.startsWith('auth/client-credentials')
      ? ('client_credentials' as const)
      : ('authorization_code' as const);
    store.write(serverUrl, {
      grant,
      preRegistered: true,
      client: {
        client_id: context.client_id,
        ...(context.client_secret ? { client_secret: context.client_secret } : {}),
      },
      // private_key_jwt: the key the operator configures with `mcp-login --private-key FILE`.
      ...(context.private_key_pem
        ? { signingKey: readSigningKey(context.private_key_pem, 'context', context.signing_algorithm) }
        : {}),
    });
  }
  const guarded = createGuardedFetch({ allowLoopback: true });
  const auth = new StoredOAuthProvider({
    serverUrl,
    store,
    label: 'conformance',
    authorize: authorizer(guarded),
    // A published client metadata document (SEP-991), for servers that take one as the client id.
    clientMetadataUrl: 'https://conformance-test.local/client-metadata.json',
  });
  try {
    await session(serverUrl, guarded, auth);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function session(serverUrl: string, guarded: typeof fetch, auth: StoredOAuthProvider): Promise<void> {
  const conn = new McpConnection({
    kind: 'http',
    key: 'conformance',
    label: 'conformance',
    url: serverUrl,
    headers: {},
    // The suite's servers listen on localhost: the operator's --allow-outbound loopback.
    fetch: guarded,
    auth,
  });
  conn.addListener({ log: (level, text) => console.error(`${level}: ${text}`) });
  try {
    const tools = await conn.listTools();
    for (const tool of tools) {
      const r = await conn.callTool(tool.name, argsFor(tool), {
        signal: AbortSignal.timeout(25_000),
        timeoutMs: 25_000,
        elicit: async (ask) => answerElicitation(ask, 'accept-defaults'),
      });
      console.log(`${tool.name}: ${JSON.stringify(r.content).slice(0, 200)}`);
    }
  } finally {
    await conn.close();
  }
}

main(url).then(
  () => process.exit(0),
  (e) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
    process.exit(1);
  },
);
