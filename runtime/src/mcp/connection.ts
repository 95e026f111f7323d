/**
 * One MCP server connection: a stdio child, a streamable HTTP session or an in-process built-in.
 * It connects on first use, keeps the tool list current (`tools/list`, refreshed on
 * `notifications/tools/list_changed` and after a reconnect), forwards stderr as bounded log
 * lines, and survives its server dying: it reconnects once, and the second death is a clear,
 * sticky failure (`mcp.server-failed`) — never an exception that escapes into the process.
 */
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type CallToolResult,
  CreateMessageRequestSchema,
  type CreateMessageResult,
  ElicitRequestSchema,
  type ElicitResult,
  ErrorCode,
  McpError,
  type Tool,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { ElicitationAnswer, ElicitationAsk, SamplingAnswer, SamplingAsk } from '../tools/types.js';
import { errorText, McpHostError } from './errors.js';
import type { StoredOAuthProvider } from './oauth/provider.js';
import { readSamplingRequest, SAMPLING_REJECTED, samplingRefused } from './sampling.js';
import { StderrLines } from './stderr-lines.js';

export type ServerSpec =
  | {
      kind: 'stdio';
      /** Pool key: same key, same shared process. */
      key: string;
      label: string;
      command: string;
      args: string[];
      /** The complete environment of the child (minimal env + the flow's resolved variables). */
      env: Record<string, string>;
      cwd?: string;
    }
  | {
      kind: 'http';
      key: string;
      label: string;
      url: string;
      headers: Record<string, string>;
      /** The guarded fetch of the outbound module: the SDK must never use the global fetch. */
      fetch: typeof fetch;
      /** OAuth with the operator's stored credentials (`./oauth/`), when the operator has a store. */
      auth?: StoredOAuthProvider;
    }
  | { kind: 'builtin'; key: string; label: string; create: () => McpServer };

export interface ConnectionListener {
  log?(level: string, text: string): void;
  toolsChanged?(tools: Tool[]): void;
}

export interface ConnectionOptions {
  /** Time for spawn + initialize + first tools/list. Default 30 s. */
  connectTimeoutMs?: number;
  /** Largest single JSON-RPC message from a stdio server. Default 4 MiB. */
  maxMessageBytes?: number;
  /** Unparseable stdout lines tolerated before the server is considered broken. Default 100. */
  maxProtocolErrors?: number;
}

type State = 'idle' | 'connecting' | 'ready' | 'failed' | 'closed';

export class McpConnection {
  readonly spec: ServerSpec;
  private state: State = 'idle';
  private client?: Client;
  private transport?: Transport;
  private connecting?: Promise<Client>;
  private deaths = 0;
  private failure?: McpHostError;
  private lastError?: string;
  private protocolErrors = 0;
  private tools: Tool[] = [];
  private readonly listeners = new Set<ConnectionListener>();
  private readonly opts: Required<ConnectionOptions>;
  private builtinServer?: McpServer;
  private pidValue: number | null = null;

  constructor(spec: ServerSpec, opts: ConnectionOptions = {}) {
    this.spec = spec;
    this.opts = {
      connectTimeoutMs: opts.connectTimeoutMs ?? 30_000,
      maxMessageBytes: opts.maxMessageBytes ?? 4 * 1024 * 1024,
      maxProtocolErrors: opts.maxProtocolErrors ?? 100,
    };
  }

  get status(): State {
    return this.state;
  }
  /** The pid of a stdio server's process while it runs. */
  get pid(): number | null {
    return this.pidValue;
  }
  get currentTools(): readonly Tool[] {
    return this.tools;
  }

  addListener(l: ConnectionListener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  private log(level: string, text: string): void {
    for (const l of this.listeners) l.log?.(level, `[${this.spec.label}] ${text}`);
  }

  /** Connects if needed and returns the client; throws `mcp.server-failed` once it is dead for good. */
  async ready(): Promise<Client> {
    if (this.state === 'ready' && this.client) return this.client;
    if (this.state === 'failed') throw this.failure!;
    if (this.state === 'closed')
      throw new McpHostError('mcp.server-failed', `${this.spec.label}: connection closed`);
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async connect(authRounds = 0): Promise<Client> {
    this.state = 'connecting';
    this.protocolErrors = 0;
    const client = new Client(
      { name: 'switchboard', version: '0.1.0' },
      { capabilities: { elicitation: { form: {} }, sampling: {} } },
    );
    client.setRequestHandler(ElicitRequestSchema, (req) => this.onElicit(req.params));
    client.setRequestHandler(CreateMessageRequestSchema, (req) => this.onSample(req.params));
    let transport: Transport;
    try {
      transport = this.makeTransport();
    } catch (e) {
      this.state = 'idle';
      return this.fail(`${this.spec.label}: cannot create the transport: ${errorText(e)}`);
    }
    this.transport = transport;
    this.client = client;
    client.onerror = (e) => this.onProtocolError(client, e);
    client.onclose = () => this.onClosed(client);
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      await this.refreshTools(client).catch((e) =>
        this.log('warn', `tools/list after list_changed failed: ${errorText(e)}`),
      );
    });
    try {
      if (this.spec.kind === 'builtin') {
        const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
        this.builtinServer = this.spec.create();
        await this.builtinServer.connect(serverSide);
        await client.connect(clientSide, { timeout: this.opts.connectTimeoutMs });
      } else {
        await client.connect(transport, { timeout: this.opts.connectTimeoutMs });
      }
      if (transport instanceof StdioClientTransport) this.pidValue = transport.pid;
      await this.refreshTools(client);
    } catch (e) {
      const why = this.lastError ? `${errorText(e)} (${this.lastError})` : errorText(e);
      await this.dispose(client);
      if ((this.state as State) === 'closed')
        throw new McpHostError('mcp.server-failed', `${this.spec.label}: connection closed`);
      // Authorization is not a crash: no restart is spent on it, and nothing sticks, so a
      // login made meanwhile (mcp-login, the editor's Connect) works on the next use.
      const authRetry = await this.afterAuthorization(e, transport, authRounds);
      if (authRetry) return this.connect(authRounds + 1);
      if (isAuthRequired(e) || e instanceof UnauthorizedError) {
        // No restart either: each one would send the user to the authorization page again.
        this.state = 'idle';
        this.lastError = undefined;
        if (isAuthRequired(e)) throw e;
        throw new McpHostError(
          'mcp.auth-required',
          `${this.spec.label}: authorization did not succeed: ${errorText(e)}`,
          { cause: e },
        );
      }
      this.deaths++;
      if (this.deaths > 1) return this.fail(`${this.spec.label}: could not start: ${why}`);
      // One more try straight away: a restart after a failed start counts as the one restart.
      this.log('warn', `could not start (${why}); retrying once`);
      return this.connect();
    }
    if (this.state !== 'connecting' || this.client !== client) {
      // Closed while connecting.
      await this.dispose(client);
      throw new McpHostError('mcp.server-failed', `${this.spec.label}: connection closed`);
    }
    this.state = 'ready';
    // Cleared only now: a call that failed with the previous process still reports its cause.
    this.lastError = undefined;
    return client;
  }

  private makeTransport(): Transport {
    const spec = this.spec;
    if (spec.kind === 'stdio') {
      const t = new StdioClientTransport({
        command: spec.command,
        args: spec.args,
        env: spec.env,
        ...(spec.cwd ? { cwd: spec.cwd } : {}),
        stderr: 'pipe',
        maxBufferSize: this.opts.maxMessageBytes,
      });
      const lines = new StderrLines((l) => this.log('stderr', l));
      t.stderr?.on('data', (c: Buffer) => lines.push(c));
      t.stderr?.on('end', () => lines.flush());
      return t;
    }
    if (spec.kind === 'http') {
      return new StreamableHTTPClientTransport(new URL(spec.url), {
        fetch: spec.fetch,
        ...(spec.auth ? { authProvider: spec.auth } : {}),
        requestInit: { headers: spec.headers },
        reconnectionOptions: {
          maxReconnectionDelay: 5000,
          initialReconnectionDelay: 500,
          reconnectionDelayGrowFactor: 2,
          maxRetries: 1,
        },
      });
    }
    // In-process: the linked pair is made in connect().
    return { start: async () => {}, send: async () => {}, close: async () => {} };
  }

  /**
   * After the SDK sent the user to the authorization page (`UnauthorizedError` with a code held
   * by the provider): exchanges the code for tokens. True when the failed step should be retried.
   */
  private async afterAuthorization(e: unknown, transport: Transport, rounds: number): Promise<boolean> {
    const spec = this.spec;
    if (spec.kind !== 'http' || !spec.auth || !(e instanceof UnauthorizedError) || rounds >= 2) return false;
    const code = spec.auth.takeAuthorizationCode();
    if (!code || !(transport instanceof StreamableHTTPClientTransport)) return false;
    await transport.finishAuth(code);
    this.log('info', 'authorized');
    return true;
  }

  private onProtocolError(client: Client, e: Error): void {
    if (client !== this.client) return;
    const msg = errorText(e);
    // The first error explains a close best; later ones are often its echo (a cut-off message).
    this.lastError ??= msg.slice(0, 300);
    this.protocolErrors++;
    if (this.protocolErrors <= 5) this.log('warn', `protocol error: ${msg.slice(0, 300)}`);
    if (this.protocolErrors === this.opts.maxProtocolErrors) {
      this.log('error', `more than ${this.opts.maxProtocolErrors} protocol errors; closing the connection`);
      void client.close().catch(() => {});
    }
  }

  private onClosed(client: Client): void {
    if (client !== this.client) return;
    this.client = undefined;
    this.transport = undefined;
    this.pidValue = null;
    if (this.state === 'closed' || this.state === 'failed') return;
    const wasReady = this.state === 'ready';
    this.state = 'idle';
    if (!wasReady) return; // a failed start is counted by connect()
    this.deaths++;
    const why = this.lastError ? ` (${this.lastError})` : '';
    if (this.deaths > 1) {
      // Runs inside the SDK's close handler: record the failure, never throw from here.
      this.markFailed(`${this.spec.label}: the server stopped again after a restart${why}`);
      return;
    }
    this.log('warn', `the server stopped${why}; it will be restarted once on next use`);
    // Restart now, so that a list_changed-like difference after restart is seen early.
    void this.ready().catch(() => {});
  }

  private markFailed(message: string): McpHostError {
    this.state = 'failed';
    this.failure = new McpHostError('mcp.server-failed', message);
    this.log('error', message);
    return this.failure;
  }

  private fail(message: string): never {
    throw this.markFailed(message);
  }

  private async refreshTools(client: Client): Promise<Tool[]> {
    const all: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const r = await client.listTools(cursor ? { cursor } : undefined, {
        timeout: this.opts.connectTimeoutMs,
      });
      all.push(...r.tools);
      cursor = r.nextCursor;
      if (!cursor) break;
    }
    if (client !== this.client) return all;
    this.tools = all;
    for (const l of this.listeners) l.toolsChanged?.(all);
    return all;
  }

  /** The server's tools (connecting first if needed). */
  async listTools(): Promise<Tool[]> {
    await this.ready();
    return this.tools;
  }

  /** Elicitation answerers of the calls in flight, by call. */
  private readonly elicitors = new Map<
    symbol,
    ((ask: ElicitationAsk) => Promise<ElicitationAnswer>) | undefined
  >();

  /**
   * A server's question during a call. MCP does not say which call a request belongs to, and a
   * pooled connection may carry calls of several runs: the request goes to the one call in
   * flight that can answer; with none, or several (ambiguous), it is declined and logged.
   */
  private async onElicit(params: {
    mode?: string;
    message: string;
    requestedSchema?: unknown;
  }): Promise<ElicitResult> {
    if (params.mode === 'url' || !params.requestedSchema) {
      this.log('warn', 'declined an elicitation request that is not a form');
      return { action: 'decline' };
    }
    const calls = [...this.elicitors.values()];
    const answer = calls.length === 1 ? calls[0] : undefined;
    if (!answer) {
      this.log(
        'warn',
        `declined an elicitation request: ${calls.length > 1 ? `${calls.length} calls in flight, it names none` : 'no call in flight can answer it'}`,
      );
      return { action: 'decline' };
    }
    const a = await answer({
      message: params.message,
      requestedSchema: params.requestedSchema as Record<string, unknown>,
    });
    return a.action === 'accept' ? { action: 'accept', content: a.content ?? {} } : { action: a.action };
  }

  /** Sampling answerers of the calls in flight, by call (absent: the flow does not allow it). */
  private readonly samplers = new Map<symbol, ((ask: SamplingAsk) => Promise<SamplingAnswer>) | undefined>();

  /**
   * A server asking the model during a call (MCP sampling). As with elicitation, the one call in
   * flight answers it, through its agent's model, only where the flow's tool node allows it;
   * otherwise the server gets an error that says why, and the refusal is logged.
   */
  private async onSample(params: Record<string, unknown>): Promise<CreateMessageResult> {
    const calls = [...this.samplers.values()];
    const answer = calls.length === 1 ? calls[0] : undefined;
    if (!answer) {
      const why =
        calls.length > 1
          ? `${calls.length} calls in flight, it names none`
          : calls.length === 1
            ? "the flow's tool node does not allow sampling"
            : 'no call in flight can answer it';
      this.log('warn', `refused a sampling request: ${why}`);
      throw samplingRefused(why);
    }
    let a: SamplingAnswer;
    try {
      a = await answer(readSamplingRequest(params));
    } catch (e) {
      throw e instanceof McpError ? e : new McpError(SAMPLING_REJECTED, errorText(e));
    }
    return {
      role: 'assistant',
      content: { type: 'text', text: a.text },
      model: a.model,
      stopReason: a.stopReason,
    };
  }

  /**
   * Calls a tool. A timeout or an abort sends `notifications/cancelled` to the server (the SDK
   * does) and rejects with `mcp.timeout` / `mcp.cancelled`; a dead server rejects with
   * `mcp.server-failed`. A guard timer makes sure the promise settles even if the transport hangs.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    o: {
      signal: AbortSignal;
      timeoutMs: number;
      onProgress?: (p: { progress: number; total?: number; message?: string }) => void;
      elicit?: (ask: ElicitationAsk) => Promise<ElicitationAnswer>;
      sample?: (ask: SamplingAsk) => Promise<SamplingAnswer>;
    },
  ): Promise<CallToolResult> {
    if (o.signal.aborted) throw new McpHostError('mcp.cancelled', `${name}: cancelled before it started`);
    const client = await this.ready();
    const me = Symbol(name);
    // The time a person takes to answer a server's question does not count against the call's
    // timeout: with an answerer, the clock stops while a question is open (and the SDK's own
    // timeout is off; this clock aborts the request, which tells the server).
    const clock = new PausableTimeout(
      o.elicit || o.sample ? o.timeoutMs : o.timeoutMs + 500,
      () => new McpHostError('mcp.timeout', `${name}: no answer within ${o.timeoutMs} ms`),
    );
    const elicit = o.elicit;
    this.elicitors.set(
      me,
      elicit
        ? async (ask) => {
            clock.pause();
            try {
              return await elicit(ask);
            } finally {
              clock.resume();
            }
          }
        : undefined,
    );
    const sample = o.sample;
    // The model's time answering a server's sampling request does not count against the call either.
    this.samplers.set(
      me,
      sample
        ? async (ask) => {
            clock.pause();
            try {
              return await sample(ask);
            } finally {
              clock.resume();
            }
          }
        : undefined,
    );
    const paused = elicit !== undefined || sample !== undefined;
    // The SDK adds an abort listener to the signal it is given and never removes it; a run
    // passes one signal to all its calls, so each call gets its own, relayed and let go after.
    const own = new AbortController();
    const relay = () => own.abort(o.signal.reason);
    o.signal.addEventListener('abort', relay, { once: true });
    if (o.signal.aborted) relay();
    const call = () =>
      Promise.race([
        client.callTool({ name, arguments: args }, undefined, {
          signal: paused ? AbortSignal.any([own.signal, clock.signal]) : own.signal,
          timeout: paused ? MAX_TIMER_MS : o.timeoutMs,
          ...(o.onProgress ? { onprogress: o.onProgress } : {}),
        }),
        clock.expired,
      ]);
    try {
      let r: Awaited<ReturnType<typeof call>>;
      try {
        r = await call();
      } catch (e) {
        // Step-up: the server wanted more scope, the user granted it; the call is sent again once.
        const transport = this.transport;
        if (!transport || !(await this.afterAuthorization(e, transport, 0))) throw e;
        r = await call();
      }
      return r as CallToolResult;
    } catch (e) {
      if (e instanceof McpHostError) throw e;
      if (clock.signal.aborted) throw clock.signal.reason as McpHostError;
      if (o.signal.aborted) throw new McpHostError('mcp.cancelled', `${name}: cancelled`, { cause: e });
      if (e instanceof McpError && e.code === ErrorCode.RequestTimeout)
        throw new McpHostError('mcp.timeout', `${name}: no answer within ${o.timeoutMs} ms`, { cause: e });
      if (e instanceof McpError && e.code === ErrorCode.ConnectionClosed) {
        const why = this.lastError ? `: ${this.lastError}` : '';
        throw new McpHostError(
          'mcp.server-failed',
          `${name}: the server closed the connection during the call${why}`,
          { cause: e },
        );
      }
      throw new McpHostError('mcp.protocol', `${name}: ${errorText(e)}`, { cause: e });
    } finally {
      o.signal.removeEventListener('abort', relay);
      clock.clear();
      this.elicitors.delete(me);
      this.samplers.delete(me);
    }
  }

  private async dispose(client: Client): Promise<void> {
    if (this.client === client) {
      this.client = undefined;
      this.transport = undefined;
      this.pidValue = null;
    }
    await client.close().catch(() => {});
    if (this.builtinServer) {
      const s = this.builtinServer;
      this.builtinServer = undefined;
      await s.close().catch(() => {});
    }
  }

  /** Stops the server (stdio: stdin closed, then SIGTERM, then SIGKILL — the SDK's sequence). */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    const c = this.client;
    const t = this.transport;
    if (c) await this.dispose(c);
    else if (t) await t.close().catch(() => {});
    this.listeners.clear();
  }
}

const MAX_TIMER_MS = 2 ** 31 - 1;

function isAuthRequired(e: unknown): e is McpHostError {
  return e instanceof McpHostError && e.code === 'mcp.auth-required';
}

/** A timeout that can stop while something else (a person) is being waited for. */
class PausableTimeout {
  private readonly ac = new AbortController();
  private left: number;
  private since = 0;
  private timer: NodeJS.Timeout | undefined;
  private paused = 0;
  private reject!: (e: Error) => void;
  readonly expired: Promise<never>;

  constructor(
    ms: number,
    private readonly error: () => Error,
  ) {
    this.left = ms;
    this.expired = new Promise<never>((_, reject) => {
      this.reject = reject;
    });
    this.expired.catch(() => {});
    this.arm();
  }

  get signal(): AbortSignal {
    return this.ac.signal;
  }

  private arm(): void {
    this.since = Date.now();
    this.timer = setTimeout(() => {
      const e = this.error();
      this.ac.abort(e);
      this.reject(e);
    }, this.left);
  }

  pause(): void {
    if (this.paused++ > 0 || this.ac.signal.aborted) return;
    clearTimeout(this.timer);
    this.left = Math.max(0, this.left - (Date.now() - this.since));
  }

  resume(): void {
    if (--this.paused > 0 || this.ac.signal.aborted) return;
    this.arm();
  }

  clear(): void {
    clearTimeout(this.timer);
    this.paused = Number.POSITIVE_INFINITY;
  }
}
