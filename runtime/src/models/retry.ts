/**
 * The two retry layers of model calls, kept apart from any SDK so that there is exactly one
 * policy (the openai SDK's own retries are turned off):
 *
 * - transport: an attempt failed on the wire (429, 5xx, 408, timeout, connection reset, a body we
 *   could not read). Retried with exponential backoff and jitter, honouring Retry-After up to a
 *   cap; a Retry-After beyond the cap fails fast, since waiting less would only be refused again.
 *   An attempt that already streamed output to the caller is never retried: the caller has shown
 *   that text, so a silent second answer would duplicate or contradict it.
 * - answer: the attempt succeeded but the answer is unusable (empty, tool-call arguments or
 *   structured output that are not JSON). The model is asked again with a corrective message.
 *
 * Both are bounded; exhausting either ends in a `ModelError` with the attempt count.
 *
 * One budget per model call. These layers are the only place a model call is retried: a
 * `ModelError` they throw after spending the budget (or for a failure no retry can fix: 400, 401,
 * 403, 404, a refusal, the call's total deadline) says so (`retryable` false), and the agent's
 * whole-turn retry (`config.retries`) never repeats it. A call therefore costs at most
 * 1 + `maxRetries` requests (+ `maxAnswerRetries` re-prompts), and a 401 exactly one. The agent's
 * retries are for failures of the turn itself (invalid output or tool calls after their repairs,
 * a tool error, a scripted error).
 */
import { ModelError, type ModelErrorCode } from './types.js';

export interface RetryPolicy {
  /** Transport retries after the first attempt. */
  maxRetries: number;
  /** First backoff delay; doubles per retry. */
  baseDelayMs: number;
  /** Largest backoff delay. */
  maxDelayMs: number;
  /** Largest Retry-After we wait for; a longer one fails the call at once. */
  maxRetryAfterMs: number;
  /** Jitter source in [0, 1); injectable for tests. */
  random: () => number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 3,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 30_000,
  random: Math.random,
};

/** One failed attempt, classified. */
export interface AttemptFailure {
  code: ModelErrorCode;
  /** Whether another attempt could succeed (before the output-already-streamed rule). */
  retryable: boolean;
  /** What happened, for people. */
  message: string;
  /** The server's Retry-After, in milliseconds, when it sent one. */
  retryAfterMs?: number;
  /** True when this attempt already delivered output to the caller. */
  outputStarted?: boolean;
}

/** Thrown by an attempt to report a classified failure. */
export class AttemptError extends Error {
  constructor(readonly failure: AttemptFailure) {
    super(failure.message);
  }
}

type HeaderSource = Headers | Record<string, string | string[] | undefined> | undefined;

function header(headers: HeaderSource, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const value = (headers as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The server's requested wait, in ms: `retry-after-ms` (OpenAI), `Retry-After` as seconds
 * (fractions allowed) or as an HTTP date. Undefined when absent or unreadable.
 */
export function parseRetryAfter(headers: HeaderSource, now: number = Date.now()): number | undefined {
  const ms = header(headers, 'retry-after-ms');
  if (ms !== undefined && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Math.max(0, Number(ms));
  const value = header(headers, 'retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.max(0, Number(value) * 1000);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Exponential backoff with jitter: a delay in [half, full] of base·2^(retry-1), capped. */
export function backoffDelay(retry: number, policy: RetryPolicy): number {
  const full = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.round(full / 2 + (policy.random() * full) / 2);
}

/** Waits, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface TransportRetryOptions {
  policy: RetryPolicy;
  signal: AbortSignal;
  /** Turns anything an attempt threw into a classified failure. */
  classify: (error: unknown) => AttemptFailure;
  onRetry?: (info: { attempt: number; delayMs: number; cause: string }) => void;
  /** Counts attempts across both layers; the count goes into every ModelError. */
  counter: { attempts: number };
  /** Prefix for error messages, e.g. `model "default"`. */
  label: string;
}

function cancelled(label: string, attempts: number): ModelError {
  return new ModelError('cancelled', `${label}: cancelled`, attempts, 'the run was cancelled');
}

/** Runs `attempt` until it succeeds, fails for good, or the retry budget is spent. */
export async function withTransportRetry<T>(attempt: () => Promise<T>, o: TransportRetryOptions): Promise<T> {
  for (let retry = 0; ; retry++) {
    if (o.signal.aborted) throw cancelled(o.label, o.counter.attempts);
    o.counter.attempts++;
    let failure: AttemptFailure;
    try {
      return await attempt();
    } catch (err) {
      if (err instanceof ModelError) throw err;
      if (o.signal.aborted) throw cancelled(o.label, o.counter.attempts);
      failure = err instanceof AttemptError ? err.failure : o.classify(err);
    }
    const attempts = o.counter.attempts;
    // Whatever ends here has had every retry this call may have.
    const fail = (code: ModelErrorCode, why: string, spent = true) =>
      new ModelError(
        code,
        `${o.label}: ${why} (after ${attempts} attempt${attempts === 1 ? '' : 's'})`,
        attempts,
        failure.message,
        spent,
      );
    if (failure.outputStarted) {
      // The caller already has part of this answer; a second one would not continue it. A whole
      // new turn may still use what is left of the budget.
      throw fail(
        'stream_interrupted',
        `the stream broke after output had started: ${failure.message}`,
        retry >= o.policy.maxRetries,
      );
    }
    if (!failure.retryable) throw fail(failure.code, failure.message);
    if (retry >= o.policy.maxRetries) throw fail(failure.code, `${failure.message}; retry budget spent`);
    let delayMs: number;
    if (failure.retryAfterMs !== undefined) {
      if (failure.retryAfterMs > o.policy.maxRetryAfterMs) {
        throw fail(
          failure.code,
          `the server asks to wait ${Math.ceil(failure.retryAfterMs / 1000)} s, more than the ${Math.round(
            o.policy.maxRetryAfterMs / 1000,
          )} s we wait for`,
        );
      }
      delayMs = Math.max(failure.retryAfterMs, 0);
    } else {
      delayMs = backoffDelay(retry + 1, o.policy);
    }
    o.onRetry?.({ attempt: attempts + 1, delayMs, cause: `${failure.code}: ${failure.message}` });
    try {
      await sleep(delayMs, o.signal);
    } catch {
      throw cancelled(o.label, attempts);
    }
  }
}

/** The verdict on one answer: usable, or a message that tells the model what to fix. */
export type AnswerCheck = { ok: true } | { ok: false; corrective: string; cause: string };

export interface AnswerRetryOptions<T> {
  /** Re-prompts allowed after the first answer. */
  maxAnswerRetries: number;
  check: (answer: T) => AnswerCheck;
  signal: AbortSignal;
  onRetry?: (info: { attempt: number; delayMs: number; cause: string }) => void;
  counter: { attempts: number };
  label: string;
}

/**
 * Asks, checks the answer, and asks again with the accumulated corrective messages while the
 * answer is unusable. `ask` receives the corrective messages to append to the conversation; the
 * unusable answer itself is never sent back, so malformed output never enters the history.
 */
export async function withAnswerRetry<T>(
  ask: (corrections: string[]) => Promise<T>,
  o: AnswerRetryOptions<T>,
): Promise<T> {
  const corrections: string[] = [];
  for (let round = 0; ; round++) {
    const answer = await ask(corrections);
    const verdict = o.check(answer);
    if (verdict.ok) return answer;
    const attempts = o.counter.attempts;
    if (round >= o.maxAnswerRetries) {
      throw new ModelError(
        'bad_response',
        `${o.label}: unusable answer after ${round + 1} answer${round === 0 ? '' : 's'}: ${verdict.cause}`,
        attempts,
        verdict.cause,
        true,
      );
    }
    if (o.signal.aborted) throw cancelled(o.label, attempts);
    o.onRetry?.({ attempt: attempts + 1, delayMs: 0, cause: `answer: ${verdict.cause}` });
    corrections.push(verdict.corrective);
  }
}
