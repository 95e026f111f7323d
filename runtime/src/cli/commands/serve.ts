/**
 * `switchboard serve [--port 5170] [--host 127.0.0.1] [--data DIR]`: the editor, the REST API
 * and the WebSocket endpoints over one data directory, until SIGINT/SIGTERM. Runs left live by
 * a previous process are resumed (or marked interrupted) at start. With a token it prints the
 * editor's address with `?token=` once, as Jupyter does.
 */
import type { Command } from 'commander';
import { type CliContext, EXIT } from '../context.js';
import { addOperatorFlags, type OperatorFlags } from '../operator-flags.js';
import { untilStopSignal } from '../stop-signal.js';

export interface ServeOptions extends OperatorFlags {
  port: string;
  host: string;
  data?: string;
  allowHost?: string[];
  allowOrigin?: string[];
  trustProxy?: string[];
  maxRuns?: string;
  quiet?: boolean;
  redis?: string;
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

/** The storage name of a file-system failure (storage_full, storage_unavailable, storage_io). */
function storageName(err: Error & { code?: string; path?: string }): { code: string; message: string } {
  if (err.name === 'StorageError') return { code: err.code!, message: err.message };
  const code =
    err.code === 'ENOSPC' || err.code === 'EDQUOT'
      ? 'storage_full'
      : ['ENOENT', 'EROFS', 'EACCES', 'EPERM', 'ENOTDIR'].includes(err.code!)
        ? 'storage_unavailable'
        : 'storage_io';
  return { code, message: `${err.code}${err.path ? ` at ${err.path}` : ''}: ${err.message}` };
}

/** How long shutdown may take before unsaved writes are abandoned (SWITCHBOARD_SHUTDOWN_MS). */
export function shutdownBoundMs(env: NodeJS.ProcessEnv = process.env): number {
  const v = env.SWITCHBOARD_SHUTDOWN_MS;
  const n = v === undefined || v === '' ? 4000 : Number(v);
  return Number.isFinite(n) && n > 0 ? n : 4000;
}

/**
 * Closes the server within `ms`: resolves to undefined when everything was saved, or to a
 * sentence naming what was not (a storage error, or writes still hanging at the bound).
 */
export async function boundedClose(close: () => Promise<void>, ms: number): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<'timeout'>((res) => {
    timer = setTimeout(() => res('timeout'), ms);
  });
  try {
    const r = await Promise.race([close().then(() => 'ok' as const), bound]);
    if (r === 'timeout')
      return `storage_io: writes did not finish within ${ms} ms of the shutdown; abandoned (runs resume from their last checkpoint at the next start)`;
    return undefined;
  } catch (e) {
    const err = e as Error & { code?: string; unsaved?: number };
    const s =
      err.name === 'StorageError' || err.code ? storageName(err) : { code: 'shutdown', message: err.message };
    return `${s.code}: could not save everything at shutdown: ${s.message}`;
  } finally {
    clearTimeout(timer);
  }
}

/** Explains a failure to start in one sentence the operator can act on. */
export function startFailure(e: unknown): { message: string; code: number } {
  const err = e as Error & { code?: string; file?: string; syscall?: string };
  if (
    err?.name === 'StorageError' ||
    (typeof err?.code === 'string' && /^E[A-Z]+$/.test(err.code) && err.syscall && err.code !== 'EADDRINUSE')
  ) {
    const s = storageName(err);
    return { message: `${s.code}: ${s.message}`, code: EXIT.failed };
  }
  if (err?.name === 'StoreError' && err.code === 'locked')
    return {
      message: `${err.message}; stop that process or use another --data directory`,
      code: EXIT.failed,
    };
  if (err?.name === 'StoreError')
    return {
      message: `the data directory is damaged: ${err.message}. Nothing was changed; move the file aside or restore it from a backup, then start again`,
      code: EXIT.failed,
    };
  if (err?.name === 'ServerConfigError') return { message: err.message, code: EXIT.usage };
  if (err?.code === 'EADDRINUSE') return { message: `the port is in use: ${err.message}`, code: EXIT.failed };
  return { message: err?.message ?? String(e), code: EXIT.failed };
}

export function registerServe(program: Command, ctx: CliContext): void {
  const cmd = program
    .command('serve')
    .description('Serve the editor, the REST API and WebSocket endpoints (127.0.0.1 by default).')
    .option('--port <port>', 'port to listen on (0: any free port)', '5170')
    .option(
      '--host <host>',
      'address to listen on; any non-loopback address needs SWITCHBOARD_TOKEN',
      '127.0.0.1',
    )
    .option('--data <dir>', 'data directory (default $SWITCHBOARD_DATA or ./.switchboard)')
    .option('--allow-host <host:port>', 'another Host header value to accept (repeatable)', collect)
    .option('--allow-origin <origin>', 'another browser origin to accept (repeatable)', collect)
    .option(
      '--trust-proxy <addr>',
      'a reverse proxy (address, CIDR or "loopback") whose X-Forwarded-For names the client (repeatable); otherwise the header is ignored',
      collect,
    )
    .option(
      '--max-runs <n>',
      'runs live at once; more are refused with 429 (default $SWITCHBOARD_MAX_RUNS or 64)',
    )
    .option('--quiet', 'only warnings and errors in the log')
    .option(
      '--redis <url>',
      'scale out: enqueue runs on this Redis for `switchboard worker` processes (default $SWITCHBOARD_REDIS_URL)',
    );
  addOperatorFlags(cmd).action(async (opts: ServeOptions) => {
    const port = Number(opts.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      ctx.err(`switchboard serve: --port must be 0…65535, not ${opts.port}\n`);
      ctx.setExit(EXIT.usage);
      return;
    }
    if (opts.maxRuns !== undefined && !/^[1-9]\d{0,8}$/.test(opts.maxRuns)) {
      ctx.err(`switchboard serve: --max-runs must be a positive integer, not ${opts.maxRuns}\n`);
      ctx.setExit(EXIT.usage);
      return;
    }
    let redisUrl: string | undefined;
    try {
      redisUrl = (await import('../../redis/keys.js')).redisUrlFrom(opts.redis);
    } catch (e) {
      ctx.err(`switchboard serve: ${(e as Error).message}\n`);
      ctx.setExit(EXIT.usage);
      return;
    }
    const { createServer } = await import('../../server/create-server.js');
    const { resolveDataDir } = await import('../../store/store.js');
    let server: Awaited<ReturnType<typeof createServer>>;
    try {
      server = await createServer({
        dataDir: resolveDataDir(opts.data),
        host: opts.host,
        port,
        ...(opts.allowHost ? { allowedHosts: opts.allowHost } : {}),
        ...(opts.allowOrigin ? { allowedOrigins: opts.allowOrigin } : {}),
        ...(opts.trustProxy ? { trustProxy: opts.trustProxy } : {}),
        ...(opts.maxRuns !== undefined ? { maxRuns: Number(opts.maxRuns) } : {}),
        ...(opts.allowOutbound ? { allowOutbound: opts.allowOutbound } : {}),
        ...(opts.secretsConfig ? { secretsConfig: opts.secretsConfig } : {}),
        ...(opts.allowSecret ? { allowSecrets: opts.allowSecret } : {}),
        ...(redisUrl ? { redis: { url: redisUrl } } : {}),
        logger: { level: opts.quiet ? 'warn' : 'info' },
      });
    } catch (e) {
      const f = startFailure(e);
      ctx.err(`switchboard serve: ${f.message}\n`);
      ctx.setExit(f.code);
      return;
    }
    let url: string;
    let editor: string;
    try {
      ({ url, editor } = await server.listen());
    } catch (e) {
      await server.close();
      const f = startFailure(e);
      ctx.err(`switchboard serve: ${f.message}\n`);
      ctx.setExit(f.code);
      return;
    }
    const r = server.recovered;
    ctx.out(`switchboard: listening on ${url} (data ${server.store.dir})\n`);
    if (redisUrl) ctx.out('switchboard: runs are enqueued on Redis for `switchboard worker` processes\n');
    // Printed once, here, for the operator (the log never carries the token): the editor
    // takes the token from this address, keeps it and removes it from the address bar.
    if (server.editorRoutes.size > 0) ctx.out(`switchboard: open the editor at ${editor}\n`);
    else ctx.out('switchboard: the editor is not built (pnpm build); serving the API only\n');
    ctx.out(`switchboard: stored flows are MCP tools at ${url}/mcp (streamable HTTP)\n`);
    if (server.tokenRequired)
      ctx.out('switchboard: API clients send Authorization: Bearer $SWITCHBOARD_TOKEN (MCP clients too)\n');
    if (r.resumed.length + r.interrupted.length > 0)
      ctx.out(
        `switchboard: recovered runs: ${r.resumed.length} resumed, ${r.interrupted.length} interrupted\n`,
      );
    await untilStopSignal();
    ctx.out('switchboard: shutting down; live runs continue at the next start\n');
    // Bounded: a disk that hangs or a data directory that vanished must not keep the process
    // alive (an orchestrator would have to SIGKILL it); what could not be saved is named.
    const ms = shutdownBoundMs();
    const problem = await boundedClose(async () => {
      await server.close();
      // MCP servers the runs started (pooled process-wide) stop with us.
      await (await import('../../mcp/pool.js')).shutdownMcpPool();
    }, ms);
    if (problem) {
      ctx.err(`switchboard serve: ${problem}\n`);
      ctx.setExit(EXIT.failed);
      // A write stuck in the kernel keeps the event loop alive: leave anyway.
      setTimeout(() => process.exit(EXIT.failed), 200).unref();
      return;
    }
    ctx.setExit(EXIT.ok);
  });
}
