/**
 * The `openai` model provider: the openai SDK against any OpenAI-compatible endpoint (OpenAI,
 * Azure's compatible endpoint, Ollama, vLLM, LM Studio, …).
 *
 * - Every request goes through `createGuardedFetch` (net/outbound.ts). Loopback and private
 *   endpoints are refused unless the operator allowed local models: `ctx.allowLocalEndpoints`
 *   (set by hosts for `--model NAME=BASEURL`), `SWITCHBOARD_ALLOW_LOCAL_MODELS=1`, or the
 *   `allowLocalEndpoints` option of `makeOpenAIProvider`.
 * - The SDK's retries are off (`maxRetries: 0`); retry.ts holds the one policy (transport and
 *   answer layers), the one retry budget of a call. `config.maxRetries` sets the transport budget,
 *   `config.timeoutMs` the time to response headers and the longest silence inside a stream, and
 *   `config.deadlineMs` the total time of the call (every attempt, wait and delta; default 30 s
 *   plus 20 ms per token of `maxTokens`), past which it fails with `model_deadline`.
 * - What no retry can fix is never retried: 400, 401/403, 404 and a refusal (`message.refusal`).
 * - A body that is not JSON (or a stream without one JSON event) is reported as such.
 * - Streaming (when the caller passes `onDelta`) assembles tool-call deltas itself, by index, or by
 *   id when a server omits the index; usage comes from `stream_options.include_usage`.
 * - The caller's AbortSignal reaches the HTTP request: aborting destroys the socket.
 */
import type { ModelConfigT } from '@switchboard/schemas';
import OpenAI, { APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import {
  type BoundSecret,
  createGuardedFetch,
  OutboundBlockedError,
  OutboundNetworkError,
  type OutboundPolicy,
} from '../net/outbound.js';
import {
  type AnswerCheck,
  AttemptError,
  type AttemptFailure,
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  type RetryPolicy,
  withAnswerRetry,
  withTransportRetry,
} from './retry.js';
import { resolveApiKey, withRedaction } from './secrets.js';
import {
  type ChatMessage,
  ModelError,
  type ModelFactory,
  type ModelFactoryContext,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCallRequest,
} from './types.js';

type ChatParams = OpenAI.Chat.Completions.ChatCompletionCreateParams;
type MessageParam = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;

export interface OpenAIProviderOptions {
  /** Allow loopback and private endpoints (local model servers). */
  allowLocalEndpoints?: boolean;
  /** Replaces the derived outbound policy entirely (e.g. with an `allowHosts` list). */
  policy?: OutboundPolicy;
  /** Transport retry policy; `config.maxRetries` overrides `maxRetries`. */
  retry?: Partial<RetryPolicy>;
  /** Re-prompts for unusable answers (empty, non-JSON tool arguments or structured output). Default 2. */
  maxAnswerRetries?: number;
  /** Time to response headers and longest silence in a stream; `config.timeoutMs` overrides. Default 60 s. */
  timeoutMs?: number;
  /** Longest one attempt may take in total, streaming included. Default 10 min, and never past the deadline. */
  attemptTimeoutMs?: number;
  /** The total time of one call, all attempts included; `config.deadlineMs` overrides. */
  deadlineMs?: number;
  /** Largest response body. Default 32 MiB. */
  maxResponseBytes?: number;
}

const PLACEHOLDER_KEY = 'switchboard-no-key';
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_ATTEMPT_TIMEOUT_MS = 600_000;
/** A call's total deadline: this, plus DEADLINE_MS_PER_TOKEN per token of `maxTokens` when set. */
export const DEFAULT_DEADLINE_MS = 30_000;
export const DEADLINE_MS_PER_TOKEN = 20;

/** The total deadline of one call under this config (see ModelConfig.deadlineMs). */
export function callDeadlineMs(config: ModelConfigT, fallback?: number): number {
  return (
    config.deadlineMs ?? fallback ?? DEFAULT_DEADLINE_MS + (config.maxTokens ?? 0) * DEADLINE_MS_PER_TOKEN
  );
}
const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/** OpenAI's `name` fields accept `[A-Za-z0-9_-]{1,64}`; our node ids may hold `.` and `:`. */
function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'unnamed';
}

export function toOpenAIMessages(messages: ChatMessage[]): MessageParam[] {
  return messages.map((m): MessageParam => {
    switch (m.role) {
      case 'system':
        return { role: 'system', content: m.content };
      case 'user':
        return { role: 'user', content: m.content, ...(m.name ? { name: safeName(m.name) } : {}) };
      case 'assistant':
        return {
          role: 'assistant',
          content: m.toolCalls?.length && !m.content ? null : m.content,
          ...(m.name ? { name: safeName(m.name) } : {}),
          ...(m.toolCalls?.length
            ? {
                tool_calls: m.toolCalls.map((c) => ({
                  id: c.id,
                  type: 'function' as const,
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : {}),
        };
      default:
        return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
    }
  });
}

/** Follows `cause` links to the first error matching `test`. */
function findCause<T>(err: unknown, test: (e: unknown) => e is T): T | undefined {
  const seen = new Set<unknown>();
  for (let e: unknown = err; e && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    if (test(e)) return e;
  }
  return undefined;
}

const isBlocked = (e: unknown): e is OutboundBlockedError => e instanceof OutboundBlockedError;
const isNetwork = (e: unknown): e is OutboundNetworkError => e instanceof OutboundNetworkError;
const describe = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Classifies anything an attempt threw (SDK errors, our outbound errors, parse errors). */
export function classifyOpenAIError(err: unknown): AttemptFailure {
  const blocked = findCause(err, isBlocked);
  if (blocked)
    return {
      code: blocked.reason.includes('the secret') ? 'secret_refused' : 'outbound_refused',
      retryable: false,
      message: blocked.message,
    };
  if (err instanceof APIError && err.status !== undefined) {
    const status = err.status;
    const message = `HTTP ${status}: ${err.message}`.slice(0, 500);
    if (status === 429) {
      return { code: 'rate_limited', retryable: true, message, retryAfterMs: parseRetryAfter(err.headers) };
    }
    if (status === 408) return { code: 'timeout', retryable: true, message };
    if (status === 401 || status === 403) return { code: 'auth', retryable: false, message };
    if (status === 404) return { code: 'not_found', retryable: false, message };
    if (status === 409 || status >= 500) {
      return { code: 'server_error', retryable: true, message, retryAfterMs: parseRetryAfter(err.headers) };
    }
    return { code: 'bad_request', retryable: false, message };
  }
  if (err instanceof APIConnectionTimeoutError)
    return { code: 'timeout', retryable: true, message: err.message };
  const net = findCause(err, isNetwork);
  if (net) {
    if (net.code === 'ETIMEDOUT') return { code: 'timeout', retryable: true, message: net.message };
    if (net.code === 'ERR_RESPONSE_TOO_LARGE')
      return { code: 'bad_response', retryable: false, message: net.message };
    return { code: 'network', retryable: true, message: `${net.code}: ${net.message}` };
  }
  if (err instanceof APIError && err.status === undefined && !(err instanceof APIUserAbortError)) {
    // An `{"error": …}` event inside a stream, or a connection error without our cause.
    const isConnection = err.constructor.name === 'APIConnectionError';
    return { code: isConnection ? 'network' : 'server_error', retryable: true, message: describe(err) };
  }
  if (err instanceof SyntaxError) {
    return { code: 'bad_response', retryable: true, message: `the body was not JSON: ${err.message}` };
  }
  return { code: 'bad_response', retryable: false, message: describe(err) };
}

/** A refusal (e.g. under a JSON schema): asking again cannot change it. */
function refused(text: string): AttemptError {
  return new AttemptError({
    code: 'refused',
    retryable: false,
    message: `the model refused: ${text.slice(0, 300)}`,
  });
}

/** Builds tool calls from streamed deltas; tolerant of servers that omit `index`, `id` or `type`. */
export class ToolCallAssembler {
  private readonly calls: Array<{ id: string; name: string; arguments: string }> = [];
  private readonly byIndex = new Map<number, number>();

  add(delta: NonNullable<Chunk['choices'][number]['delta']['tool_calls']>[number]) {
    let slot: number | undefined;
    if (typeof delta.index === 'number') slot = this.byIndex.get(delta.index);
    else if (delta.id) slot = this.calls.findIndex((c) => c.id === delta.id);
    else slot = this.calls.length - 1; // a continuation without index or id belongs to the last call
    if (slot === undefined || slot < 0) {
      this.calls.push({ id: delta.id ?? '', name: '', arguments: '' });
      slot = this.calls.length - 1;
      if (typeof delta.index === 'number') this.byIndex.set(delta.index, slot);
    }
    const call = this.calls[slot]!;
    if (delta.id && !call.id) call.id = delta.id;
    if (delta.function?.name)
      call.name += call.name && call.name === delta.function.name ? '' : delta.function.name;
    if (delta.function?.arguments) call.arguments += delta.function.arguments;
  }

  result(): ToolCallRequest[] {
    return this.calls.map((c, i) => ({ id: c.id || `call_${i}`, name: c.name, arguments: c.arguments }));
  }
}

/** Answers that cannot be used as they are, and the message that asks the model to fix them. */
export function checkAnswer(answer: ModelResponse, wantsJson: boolean): AnswerCheck {
  for (const call of answer.toolCalls) {
    if (!call.name) {
      return {
        ok: false,
        cause: 'a tool call without a tool name',
        corrective:
          'Your previous reply contained a tool call without a tool name. Call the tool again with its name.',
      };
    }
    const args = call.arguments.trim() === '' ? '{}' : call.arguments;
    let parsed: unknown;
    try {
      parsed = JSON.parse(args);
    } catch (e) {
      return {
        ok: false,
        cause: `arguments of tool call ${call.name} are not valid JSON (${(e as Error).message})`,
        corrective:
          `Your previous call to the tool "${call.name}" had arguments that are not valid JSON ` +
          `(${(e as Error).message}). Call it again with the arguments as one JSON object.`,
      };
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return {
        ok: false,
        cause: `arguments of tool call ${call.name} are not a JSON object`,
        corrective: `Your previous call to the tool "${call.name}" had arguments that are not a JSON object. Call it again with a JSON object.`,
      };
    }
  }
  if (answer.toolCalls.length > 0) return { ok: true };
  if (answer.text.trim() === '') {
    return {
      ok: false,
      cause: 'empty reply',
      corrective: 'Your previous reply was empty. Reply to the conversation above.',
    };
  }
  if (wantsJson) {
    try {
      JSON.parse(answer.text);
    } catch (e) {
      return {
        ok: false,
        cause: `structured output is not valid JSON (${(e as Error).message})`,
        corrective:
          `Your previous reply was not valid JSON (${(e as Error).message}). ` +
          'Reply with only a JSON value that matches the requested schema.',
      };
    }
  }
  return { ok: true };
}

class OpenAIProvider implements ModelProvider {
  readonly scripted = false;
  private readonly client: OpenAI;
  private readonly retry: RetryPolicy;
  private readonly maxAnswerRetries: number;
  private readonly attemptTimeoutMs: number;
  private readonly deadlineMs: number;
  private readonly label: string;

  constructor(
    private readonly name: string,
    private readonly config: ModelConfigT,
    apiKey: string,
    policy: OutboundPolicy,
    options: OpenAIProviderOptions,
    secrets: readonly BoundSecret[] = [],
  ) {
    const timeoutMs = config.timeoutMs ?? options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.attemptTimeoutMs = Math.max(options.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS, timeoutMs);
    this.retry = {
      ...DEFAULT_RETRY_POLICY,
      ...options.retry,
      ...(config.maxRetries !== undefined ? { maxRetries: config.maxRetries } : {}),
    };
    this.maxAnswerRetries = options.maxAnswerRetries ?? 2;
    this.deadlineMs = callDeadlineMs(config, options.deadlineMs);
    this.label = `model "${name}"`;
    this.client = new OpenAI({
      apiKey,
      baseURL: config.baseURL,
      maxRetries: 0,
      timeout: this.attemptTimeoutMs,
      fetch: createGuardedFetch(policy, {
        timeoutMs,
        idleTimeoutMs: timeoutMs,
        maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
        secrets,
      }),
    });
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const counter = { attempts: 0 };
    const label = `${this.label} (node ${request.nodeId})`;
    if (request.signal.aborted)
      throw new ModelError('cancelled', `${label}: cancelled`, 0, 'the run was cancelled');
    // The call's total deadline reaches every attempt and wait through the signal: a stream that
    // never ends, or retries that never succeed, stop here and say so.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new Error('deadline')), this.deadlineMs);
    const signal = AbortSignal.any([request.signal, deadline.signal]);
    const bounded: ModelRequest = { ...request, signal };
    try {
      return await withAnswerRetry(
        (corrections) => {
          if (corrections.length > 0) request.onCorrection?.(corrections);
          return withTransportRetry(() => this.attempt(bounded, corrections), {
            policy: this.retry,
            signal,
            classify: classifyOpenAIError,
            onRetry: request.onRetry,
            counter,
            label,
          });
        },
        {
          maxAnswerRetries: this.maxAnswerRetries,
          check: (answer) => this.checkFinal(answer, request, label, counter.attempts),
          signal,
          onRetry: request.onRetry,
          counter,
          label,
        },
      );
    } catch (e) {
      if (deadline.signal.aborted && !request.signal.aborted)
        throw new ModelError(
          'deadline',
          `${label}: no complete answer within the call's deadline of ${this.deadlineMs} ms (models.${this.name}.deadlineMs; after ${counter.attempts} attempt${counter.attempts === 1 ? '' : 's'})`,
          counter.attempts,
          e instanceof Error ? e.message : String(e),
          true,
        );
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  private checkFinal(
    answer: ModelResponse,
    request: ModelRequest,
    label: string,
    attempts: number,
  ): AnswerCheck {
    const structured = request.jsonSchema !== undefined || answer.toolCalls.length > 0;
    if (answer.finishReason === 'length' && structured) {
      // Asking again would stop at the same limit: a larger maxTokens is the fix.
      throw new ModelError(
        'length',
        `${label}: the answer hit the token limit before its ${answer.toolCalls.length ? 'tool call' : 'JSON'} was complete (after ${attempts} attempts)`,
        attempts,
        'finish_reason: length',
      );
    }
    if (answer.finishReason === 'length' && answer.text !== '') return { ok: true };
    return checkAnswer(answer, request.jsonSchema !== undefined);
  }

  private params(request: ModelRequest, corrections: string[], stream: boolean): ChatParams {
    const messages = toOpenAIMessages([
      ...request.messages,
      ...corrections.map((content): ChatMessage => ({ role: 'user', content })),
    ]);
    const cap = request.maxTokens;
    const own = this.config.maxTokens;
    const maxTokens = cap === undefined ? own : own === undefined ? cap : Math.min(cap, own);
    const params: ChatParams = {
      model: this.config.model ?? 'gpt-4o-mini',
      messages,
      ...(this.config.temperature !== undefined ? { temperature: this.config.temperature } : {}),
      ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
      ...(request.tools?.length
        ? {
            tools: request.tools.map((t) => ({
              type: 'function' as const,
              function: { name: t.name, description: t.description, parameters: t.parameters },
            })),
          }
        : {}),
      ...(request.jsonSchema
        ? {
            response_format: {
              type: 'json_schema' as const,
              json_schema: {
                name: safeName(request.jsonSchema.name),
                schema: request.jsonSchema.schema,
                ...(request.jsonSchema.strict ? { strict: true } : {}),
              },
            },
          }
        : {}),
    };
    if (stream) Object.assign(params, { stream: true, stream_options: { include_usage: true } });
    return params;
  }

  /** One HTTP attempt, bounded by the attempt timeout, cancelled with the caller's signal. */
  private async attempt(request: ModelRequest, corrections: string[]): Promise<ModelResponse> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error('attempt timeout'));
    }, this.attemptTimeoutMs);
    const onAbort = () => controller.abort(request.signal.reason);
    request.signal.addEventListener('abort', onAbort, { once: true });
    const state = { outputStarted: false };
    try {
      return request.onDelta
        ? await this.streamed(request, corrections, controller.signal, state)
        : await this.whole(request, corrections, controller.signal);
    } catch (err) {
      if (request.signal.aborted) throw err; // the retry layer turns this into `cancelled`
      const failure: AttemptFailure = timedOut
        ? {
            code: 'timeout',
            retryable: true,
            message: `no complete answer within ${this.attemptTimeoutMs} ms`,
          }
        : err instanceof AttemptError
          ? err.failure
          : classifyOpenAIError(err);
      throw new AttemptError({ ...failure, outputStarted: state.outputStarted });
    } finally {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onAbort);
    }
  }

  private async whole(
    request: ModelRequest,
    corrections: string[],
    signal: AbortSignal,
  ): Promise<ModelResponse> {
    const completion = (await this.client.chat.completions.create(
      this.params(
        request,
        corrections,
        false,
      ) as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming,
      { signal },
    )) as OpenAI.Chat.Completions.ChatCompletion;
    if (typeof completion !== 'object' || completion === null) {
      // The SDK hands back the text of a body it could not take as JSON.
      throw new AttemptError({
        code: 'bad_response',
        retryable: true,
        message: `the body was not JSON: it starts with ${JSON.stringify(String(completion).slice(0, 80))}`,
      });
    }
    const choice = completion.choices?.[0];
    if (!choice) {
      throw new AttemptError({
        code: 'bad_response',
        retryable: true,
        message: 'the response has no choices',
      });
    }
    const message = choice.message ?? { content: '' };
    const refusal = (message as { refusal?: unknown }).refusal;
    if (typeof refusal === 'string' && refusal !== '' && !message.content && !message.tool_calls?.length)
      throw refused(refusal);
    const toolCalls = (message.tool_calls ?? [])
      .filter((c) => c.type === undefined || c.type === 'function')
      .map((c, i) => {
        const fn = (c as { function?: { name?: string; arguments?: string } }).function ?? {};
        return { id: c.id || `call_${i}`, name: fn.name ?? '', arguments: fn.arguments ?? '' };
      });
    return {
      text: typeof message.content === 'string' ? message.content : '',
      toolCalls,
      usage: {
        promptTokens: completion.usage?.prompt_tokens ?? 0,
        completionTokens: completion.usage?.completion_tokens ?? 0,
      },
      finishReason: choice.finish_reason ?? 'stop',
      model: completion.model || this.config.model || this.name,
    };
  }

  private async streamed(
    request: ModelRequest,
    corrections: string[],
    signal: AbortSignal,
    state: { outputStarted: boolean },
  ): Promise<ModelResponse> {
    const stream = await this.client.chat.completions.create(
      this.params(request, corrections, true) as OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming,
      { signal },
    );
    let text = '';
    let finishReason: string | undefined;
    let model = '';
    let sawChoice = false;
    let chunks = 0;
    let refusal = '';
    const usage = { promptTokens: 0, completionTokens: 0 };
    const tools = new ToolCallAssembler();
    for await (const chunk of stream) {
      chunks++;
      if (chunk.model) model = chunk.model;
      if (chunk.usage) {
        usage.promptTokens = chunk.usage.prompt_tokens ?? 0;
        usage.completionTokens = chunk.usage.completion_tokens ?? 0;
      }
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      sawChoice = true;
      const delta = choice.delta ?? {};
      if (typeof delta.content === 'string' && delta.content !== '') {
        text += delta.content;
        state.outputStarted = true;
        try {
          request.onDelta?.(delta.content);
        } catch {
          // Deltas are best-effort; a failing listener must not fail the call.
        }
      }
      for (const call of delta.tool_calls ?? []) tools.add(call);
      const r = (delta as { refusal?: unknown }).refusal;
      if (typeof r === 'string') refusal += r;
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }
    // The SDK ends iteration quietly when the request is aborted; that is not a complete answer.
    if (signal.aborted) throw signal.reason ?? new Error('aborted');
    if (chunks === 0) {
      throw new AttemptError({
        code: 'bad_response',
        retryable: true,
        message: 'the body was not JSON: no server-sent event of the stream carried a JSON chunk',
      });
    }
    if (!sawChoice) {
      throw new AttemptError({
        code: 'bad_response',
        retryable: true,
        message: 'the stream carried no choices',
      });
    }
    if (refusal !== '' && text === '' && tools.result().length === 0) throw refused(refusal);
    if (!finishReason) {
      throw new AttemptError({
        code: 'stream_interrupted',
        retryable: true,
        message: 'the stream ended without a finish reason',
      });
    }
    return {
      text,
      toolCalls: tools.result(),
      usage,
      finishReason,
      model: model || this.config.model || this.name,
    };
  }
}

/** Whether an env-style flag is on (`1`, `true`, `yes`). */
function flagOn(value: string | undefined): boolean {
  return value !== undefined && /^(1|true|yes)$/i.test(value.trim());
}

const OPENAI_ENDPOINT = 'https://api.openai.com/v1';

/** The provider with explicit options; `createOpenAIProvider` derives them from the context. */
export function makeOpenAIProvider(
  name: string,
  config: ModelConfigT,
  ctx: ModelFactoryContext,
  options: OpenAIProviderOptions = {},
): ModelProvider {
  if (config.baseURL !== undefined) {
    try {
      const u = new URL(config.baseURL);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
    } catch {
      throw new ModelError('bad_request', `models.${name}.baseURL: not an http(s) URL: ${config.baseURL}`, 0);
    }
  }
  const endpoint = config.baseURL ?? OPENAI_ENDPOINT;
  const { apiKey, bound } = resolveApiKey(name, config.apiKey, endpoint, ctx);
  const local = options.allowLocalEndpoints ?? false;
  const operator = ctx.outbound ?? {};
  const policy = options.policy ?? {
    ...operator,
    allowLoopback: local || operator.allowLoopback === true,
    allowPrivate: local || operator.allowPrivate === true,
  };
  // What the endpoint sends back loses every secret value (it may echo the Authorization header).
  return withRedaction(
    new OpenAIProvider(name, config, apiKey || PLACEHOLDER_KEY, policy, options, bound),
    bound,
  );
}

/** The factory the engine loads lazily (`await import('./openai.js')`). */
export const createOpenAIProvider: ModelFactory = (name, config, ctx) =>
  makeOpenAIProvider(name, config, ctx, {
    allowLocalEndpoints:
      ctx.allowLocalEndpoints === true || flagOn(ctx.resolveEnv('${env:SWITCHBOARD_ALLOW_LOCAL_MODELS}')),
  });
