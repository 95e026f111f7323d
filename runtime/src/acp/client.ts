/**
 * External agents over the Agent Client Protocol (ACP, @agentclientprotocol/sdk) on stdio: an
 * `agent` node may be backed by an agent process instead of a model (issue 4, item 5).
 *
 * - The process is spawned on the first prompt with `shell: false` and a minimal environment
 *   (PATH, HOME, locale, temp dir, plus exactly the variables the config names): no model keys, no
 *   server token. Consent for the command line is the caller's job (DESIGN.md: a stdio command
 *   runs only after the local operator approved it) — this module only runs what it is given.
 * - One ACP session per agent process; prompts are serialised (one turn at a time).
 * - Streamed `agent_message_chunk` text goes to `onUpdate`; the agent's permission requests are
 *   answered by `requestPermission(toolName, args)` (the run's grants); without one, refused.
 * - Cancellation sends `session/cancel`; an agent that does not end its turn within the grace
 *   period is killed. Every prompt is bounded by `timeoutMs`.
 * - Failures are `AcpError` with a code and the tail of the agent's stderr.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import {
  type ClientConnection,
  client,
  methods,
  ndJsonStream,
  PROTOCOL_VERSION,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from '@agentclientprotocol/sdk';
import { dict } from '@switchboard/schemas/core';

export interface AcpAgentConfig {
  command: string;
  args?: string[];
  /** Variables the flow names for this agent (already resolved); nothing else is inherited but PATH, HOME, locale, temp. */
  env?: Record<string, string>;
  cwd?: string;
  /** Time for spawn + initialize + session/new. Default 20 s. */
  startTimeoutMs?: number;
  /** Time an agent gets to end its turn after session/cancel before it is killed. Default 2 s. */
  cancelGraceMs?: number;
  /** Largest stderr tail kept for error messages. Default 8 KiB. */
  maxStderrBytes?: number;
}

export interface AcpPromptOptions {
  signal?: AbortSignal;
  /** Streamed text of the agent's reply, as it arrives. */
  onUpdate?: (text: string) => void;
  /** Every raw session update (tool calls, plans, …), for events. */
  onSessionUpdate?: (update: SessionNotification['update']) => void;
  /** Decides a tool-permission request of the agent; absent means refused. */
  requestPermission?: (toolName: string, args: unknown) => Promise<boolean>;
  /** Longest one prompt turn may take. Default 10 min. */
  timeoutMs?: number;
}

export interface AcpPromptResult {
  text: string;
  stopReason: string;
}

export interface AcpAgent {
  prompt(text: string, options?: AcpPromptOptions): Promise<AcpPromptResult>;
  /** Ends the session and the process. Idempotent. */
  close(): Promise<void>;
  /** The agent process id once started. */
  readonly pid: number | undefined;
  /** The last bytes the agent wrote to stderr. */
  stderr(): string;
}

export type AcpErrorCode = 'spawn' | 'exited' | 'protocol' | 'timeout' | 'cancelled' | 'closed';

export class AcpError extends Error {
  override readonly name = 'AcpError';
  constructor(
    readonly code: AcpErrorCode,
    message: string,
    readonly stderrTail = '',
  ) {
    super(stderrTail ? `${message}\n--- agent stderr ---\n${stderrTail}` : message);
  }
}

/** The variables a spawned agent inherits; everything else must be named by the flow. */
const INHERITED = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'TEMP', 'TMP', 'SYSTEMROOT', 'USERPROFILE'];

export function minimalEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env = dict<string>();
  for (const name of INHERITED) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return dict([...Object.entries(env), ...Object.entries(extra)]);
}

interface Turn {
  options: AcpPromptOptions;
  text: string;
}

class StdioAcpAgent implements AcpAgent {
  private child: ChildProcess | undefined;
  private connection: ClientConnection | undefined;
  private sessionId: string | undefined;
  private starting: Promise<void> | undefined;
  private turn: Turn | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private stderrTail = '';
  private exitInfo: string | undefined;
  private closed = false;
  /** Settles when the process and its pipes are closed. */
  private exited: Promise<void> = Promise.resolve();
  /** Settles when the process has exited (its pipes may still drain). */
  private exitedOnly: Promise<void> = Promise.resolve();

  constructor(private readonly config: AcpAgentConfig) {}

  get pid() {
    return this.child?.pid;
  }

  stderr() {
    return this.stderrTail;
  }

  prompt(text: string, options: AcpPromptOptions = {}): Promise<AcpPromptResult> {
    const run = this.queue.then(() => this.runTurn(text, options));
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    if (this.closed) return this.exited;
    this.closed = true;
    this.connection?.close();
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      child.stdin?.end();
      const killer = setTimeout(() => child.kill('SIGKILL'), 1_000);
      child.kill('SIGTERM');
      await this.exited;
      clearTimeout(killer);
    }
  }

  private fail(code: AcpErrorCode, message: string): AcpError {
    return new AcpError(code, message, this.stderrTail.trim());
  }

  private start(): Promise<void> {
    this.starting ??= this.spawnAndInitialize().catch((err) => {
      this.starting = undefined;
      void this.close();
      throw err;
    });
    return this.starting;
  }

  private async spawnAndInitialize(): Promise<void> {
    const { command, args = [], cwd } = this.config;
    const maxStderr = this.config.maxStderrBytes ?? 8 * 1024;
    let child: ChildProcess;
    try {
      child = spawn(command, args, {
        shell: false,
        cwd: cwd ?? process.cwd(),
        env: minimalEnv(this.config.env),
        stdio: ['pipe', 'pipe', 'pipe'],
        windowsHide: true,
      });
    } catch (err) {
      throw this.fail('spawn', `cannot start ACP agent ${command}: ${(err as Error).message}`);
    }
    this.child = child;
    this.exited = new Promise((resolve) => child.once('close', () => resolve()));
    this.exitedOnly = new Promise((resolve) => child.once('exit', () => resolve()));
    const spawnError = new Promise<never>((_, reject) => {
      child.once('error', (err) =>
        reject(this.fail('spawn', `cannot start ACP agent ${command}: ${err.message}`)),
      );
    });
    spawnError.catch(() => undefined);
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-maxStderr);
    });
    child.once('exit', (code, signal) => {
      if (this.child !== child) return; // an old process, already replaced
      this.exitInfo = signal ? `killed by ${signal}` : `exited with code ${code}`;
      this.connection?.close(this.fail('exited', `ACP agent ${command} ${this.exitInfo}`));
    });
    // A peer that closes its stdin must not crash us with EPIPE.
    child.stdin!.on('error', () => undefined);

    const app = client({ name: 'switchboard' })
      .onNotification(methods.client.session.update, ({ params }) => this.onUpdate(params))
      .onRequest(methods.client.session.requestPermission, ({ params }) => this.onPermission(params));
    const stream = ndJsonStream(
      Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
    );
    const connection = app.connect(stream);
    this.connection = connection;

    const timeoutMs = this.config.startTimeoutMs ?? 20_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(this.fail('timeout', `ACP agent ${command} did not initialize within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([
        spawnError,
        timeout,
        (async () => {
          await connection.agent.request(methods.agent.initialize, {
            protocolVersion: PROTOCOL_VERSION,
            // We offer no file system or terminal: tools reach the agent through its own grants.
            clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
            clientInfo: { name: 'switchboard', version: '0.1.0' },
          });
          const session = await connection.agent.request(methods.agent.session.new, {
            cwd: cwd ?? process.cwd(),
            mcpServers: [],
          });
          this.sessionId = session.sessionId;
        })(),
      ]);
    } catch (err) {
      if (err instanceof AcpError) throw err;
      throw this.fail(
        this.exitInfo ? 'exited' : 'protocol',
        `ACP agent ${command} failed to start: ${describe(err)}`,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  private onUpdate(params: SessionNotification) {
    const turn = this.turn;
    if (!turn || params.sessionId !== this.sessionId) return;
    const update = params.update;
    try {
      turn.options.onSessionUpdate?.(update);
    } catch {
      // Listeners are best-effort.
    }
    if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') {
      turn.text += update.content.text;
      try {
        turn.options.onUpdate?.(update.content.text);
      } catch {
        // Listeners are best-effort.
      }
    }
  }

  private async onPermission(params: RequestPermissionRequest): Promise<RequestPermissionResponse> {
    const turn = this.turn;
    const cancelled: RequestPermissionResponse = { outcome: { outcome: 'cancelled' } };
    if (!turn || params.sessionId !== this.sessionId) return cancelled;
    const tool = params.toolCall.name ?? params.toolCall.title ?? params.toolCall.toolCallId;
    let allowed = false;
    try {
      allowed = (await turn.options.requestPermission?.(tool, params.toolCall.rawInput)) === true;
    } catch {
      allowed = false;
    }
    const pick = (kinds: string[]) => params.options.find((o) => kinds.includes(o.kind));
    // Only ever a one-time grant: "always" would let the agent skip our grants later.
    const option = allowed ? pick(['allow_once']) : pick(['reject_once', 'reject_always']);
    if (!option) return cancelled;
    return { outcome: { outcome: 'selected', optionId: option.optionId } };
  }

  private async runTurn(text: string, options: AcpPromptOptions): Promise<AcpPromptResult> {
    if (this.closed) throw this.fail('closed', 'ACP agent is closed');
    const signal = options.signal;
    if (signal?.aborted) throw this.fail('cancelled', 'prompt cancelled before it started');
    // A process that exited, or that we killed, cannot take this prompt: start afresh.
    const child = this.child;
    if (child && (this.exitInfo || child.killed || child.exitCode !== null || child.signalCode !== null)) {
      this.reset();
    }
    await this.start();
    const connection = this.connection!;
    const sessionId = this.sessionId!;
    const turn: Turn = { options, text: '' };
    this.turn = turn;
    const timeoutMs = options.timeoutMs ?? 600_000;
    const grace = this.config.cancelGraceMs ?? 2_000;
    let graceTimer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const cancelTurn = () => {
      connection.agent.notify(methods.agent.session.cancel, { sessionId }).catch(() => undefined);
      // An agent that ignores the cancel loses its process.
      graceTimer ??= setTimeout(() => this.child?.kill('SIGKILL'), grace);
    };
    const onAbort = () => cancelTurn();
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => {
      timedOut = true;
      cancelTurn();
    }, timeoutMs);
    try {
      const response = await connection.agent.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text }],
      });
      if (signal?.aborted || response.stopReason === 'cancelled') {
        throw this.fail(timedOut ? 'timeout' : 'cancelled', `prompt ${timedOut ? 'timed out' : 'cancelled'}`);
      }
      return { text: turn.text, stopReason: response.stopReason };
    } catch (err) {
      if (timedOut) throw this.fail('timeout', `ACP agent did not finish its turn within ${timeoutMs} ms`);
      if (signal?.aborted) throw this.fail('cancelled', 'prompt cancelled (the agent was stopped)');
      if (err instanceof AcpError) throw err;
      // The connection may notice the closed stdout before the process reports its exit.
      if (!this.exitInfo) await Promise.race([this.exitedOnly, new Promise((r) => setTimeout(r, 500))]);
      if (this.exitInfo)
        throw this.fail('exited', `ACP agent ${this.config.command} ${this.exitInfo} during a prompt`);
      throw this.fail('protocol', `ACP prompt failed: ${describe(err)}`);
    } finally {
      clearTimeout(timer);
      clearTimeout(graceTimer);
      signal?.removeEventListener('abort', onAbort);
      if (this.turn === turn) this.turn = undefined;
    }
  }

  private reset() {
    this.connection?.close();
    this.connection = undefined;
    this.child = undefined;
    this.sessionId = undefined;
    this.starting = undefined;
    this.exitInfo = undefined;
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** An external agent process speaking ACP over stdio. Spawned on the first prompt. */
export function createAcpAgent(config: AcpAgentConfig): AcpAgent {
  if (!config.command || typeof config.command !== 'string') {
    throw new AcpError('spawn', 'ACP agent: `command` must be a non-empty string');
  }
  return new StdioAcpAgent(config);
}
