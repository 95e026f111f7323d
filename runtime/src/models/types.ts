/**
 * The contract between the interpreter and model providers. Providers are injected, so the
 * same flow runs on the openai SDK, on a script, or on anything a host adds.
 */

// The message shapes are defined once, in the behaviour contract of @switchboard/nodes, so that
// node behaviours and model providers speak the same types without a copy to keep in step.
import type { ChatMessage, ToolCallRequest, ToolSpec } from '@switchboard/nodes/core';
import type { ModelConfigT } from '@switchboard/schemas';
import type { OutboundPolicy } from '../net/outbound.js';
import type { SecretsPolicy } from '../net/secrets.js';

export type { ChatMessage, ToolCallRequest, ToolSpec };

export interface ModelRequest {
  /** The node this call is for; providers use it in errors, scripted providers to pick a reply. */
  nodeId: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  /** Ask for JSON matching this schema (structured output). */
  jsonSchema?: { name: string; schema: Record<string, unknown>; strict?: boolean };
  /** A cap on the reply's tokens below the model config's `maxTokens` (e.g. MCP sampling). */
  maxTokens?: number;
  signal: AbortSignal;
  /** Streamed text, as it arrives. Best-effort. */
  onDelta?: (text: string) => void;
  /** Called before each transport retry. */
  onRetry?: (info: { attempt: number; delayMs: number; cause: string }) => void;
  /**
   * Called before the provider asks again with correcting user messages appended to `messages`
   * (an answer it could not use: invalid JSON, a truncated tool call), so the call is recorded
   * with what is really sent.
   */
  onCorrection?: (corrections: readonly string[]) => void;
}

export interface TokenCount {
  promptTokens: number;
  completionTokens: number;
}

export interface ModelResponse {
  text: string;
  toolCalls: ToolCallRequest[];
  usage: TokenCount;
  finishReason: string;
  /** The model that answered. */
  model: string;
}

export interface ModelProvider {
  /** True when replies come from a script: every event of such a run says so. */
  readonly scripted: boolean;
  complete(request: ModelRequest): Promise<ModelResponse>;
}

export type ModelErrorCode =
  | 'rate_limited'
  | 'server_error'
  | 'timeout'
  | 'network'
  | 'bad_response'
  | 'stream_interrupted'
  | 'length'
  | 'cancelled'
  | 'auth'
  | 'bad_request'
  | 'not_found'
  | 'refused'
  | 'deadline'
  | 'script_exhausted'
  /** The operator's policy refuses the endpoint (`--allow-outbound`); never retried. */
  | 'outbound_refused'
  /** The operator's secrets policy refuses the key for the endpoint; never retried. */
  | 'secret_refused';

/**
 * Failures no retry can fix, at any level: the request itself is refused (400, 401, 403, 404, a
 * refusal under a JSON schema), the total deadline passed, the answer hit the token limit, the
 * run was cancelled, or a script ran out.
 */
const FINAL_CODES: ReadonlySet<ModelErrorCode> = new Set<ModelErrorCode>([
  'auth',
  'bad_request',
  'not_found',
  'refused',
  'deadline',
  'length',
  'cancelled',
  'script_exhausted',
  'outbound_refused',
  'secret_refused',
]);

/** A typed model failure: what happened, why, and after how many attempts. */
export class ModelError extends Error {
  override readonly name = 'ModelError';
  constructor(
    readonly code: ModelErrorCode,
    message: string,
    readonly attempts: number,
    readonly causeText?: string,
    /** The provider spent the call's retry budget on it (retry.ts): nobody retries it again. */
    readonly budgetSpent = false,
  ) {
    super(message);
  }

  /**
   * Whether another try could succeed and is still within the one retry budget of a model call:
   * the agent's whole-turn retry asks this, so a 401 is sent once and a dead endpoint costs the
   * provider's attempts, not the agent's retries times them.
   */
  get retryable(): boolean {
    return !this.budgetSpent && !FINAL_CODES.has(this.code);
  }
}

/** Resolves `${env:NAME}` references at run time; secrets never live in the flow. */
export type EnvResolver = (value: string | undefined) => string | undefined;

export interface ModelFactoryContext {
  resolveEnv: EnvResolver;
  /** Directory of the flow file, for scripted `scriptFile`s. */
  baseDir?: string;
  /**
   * The operator allowed model endpoints on this machine or the local network (loopback and
   * private addresses): set it for `--model NAME=BASEURL` or an operator setting. Without it the
   * openai provider refuses such endpoints unless SWITCHBOARD_ALLOW_LOCAL_MODELS=1 (read through
   * `resolveEnv`). Link-local addresses (cloud metadata) stay refused.
   */
  allowLocalEndpoints?: boolean;
  /** The operator's outbound destinations (`--allow-outbound`, SWITCHBOARD_ALLOW_OUTBOUND). */
  outbound?: OutboundPolicy;
  /** Which `${env:NAME}` an apiKey may name and where each may go; default: the built-in defaults. */
  secrets?: SecretsPolicy;
}

export type ModelFactory = (name: string, config: ModelConfigT, ctx: ModelFactoryContext) => ModelProvider;
