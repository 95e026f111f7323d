/**
 * The secrets of a model provider: its key, looked up only where the operator's policy lets it
 * go (`resolveApiKey`), and a provider whose answers, streamed text, retry causes and errors carry
 * no secret value (`withRedaction`) — an endpoint may echo the Authorization header into an error
 * body or an answer, and that text would become events, stored files and API answers.
 */
import { envRefsIn } from '../mcp/env.js';
import type { BoundSecret } from '../net/outbound.js';
import { redact, SecretRefusedError, SecretsPolicy } from '../net/secrets.js';
import {
  ModelError,
  type ModelFactoryContext,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from './types.js';

/**
 * A model's `apiKey`, looked up only once the operator's secrets policy lets each variable it
 * names go to `endpoint` (else `secret_refused`, naming the variable and the host); with the
 * secret values the provider must never send elsewhere nor report.
 */
export function resolveApiKey(
  modelName: string,
  apiKeyRef: string | undefined,
  endpoint: string,
  ctx: ModelFactoryContext,
): { apiKey: string | undefined; bound: BoundSecret[] } {
  const policy = ctx.secrets ?? new SecretsPolicy();
  const bound = policy.boundSecrets((n) => ctx.resolveEnv(`\${env:${n}}`));
  if (!apiKeyRef) return { apiKey: undefined, bound };
  const refs = envRefsIn(apiKeyRef);
  for (const ref of refs) {
    try {
      policy.check(ref, endpoint, `models.${modelName}.apiKey`);
    } catch (e) {
      if (e instanceof SecretRefusedError) throw new ModelError('secret_refused', e.message, 0);
      throw e;
    }
  }
  const apiKey = ctx.resolveEnv(apiKeyRef);
  if (apiKey && refs.length === 1 && !bound.some((b) => b.value === apiKey))
    bound.push({ name: refs[0]!, value: apiKey, hosts: policy.hostsFor(refs[0]!) ?? [] });
  return { apiKey, bound };
}

/**
 * Streamed text with secret values taken out, even when a value arrives split over several
 * deltas: the tail that could still be the start of one is held back until it is not.
 */
export class DeltaRedactor {
  private pending = '';
  constructor(
    private readonly secrets: readonly BoundSecret[],
    private readonly out: (text: string) => void,
  ) {}

  push(text: string): void {
    this.pending = redact(this.pending + text, this.secrets);
    let hold = 0;
    for (const { value } of this.secrets)
      for (let n = Math.min(value.length - 1, this.pending.length); n > hold; n--)
        if (this.pending.endsWith(value.slice(0, n))) {
          hold = n;
          break;
        }
    const ready = this.pending.slice(0, this.pending.length - hold);
    this.pending = this.pending.slice(this.pending.length - hold);
    if (ready) this.out(ready);
  }

  flush(): void {
    if (this.pending) this.out(redact(this.pending, this.secrets));
    this.pending = '';
  }
}

/** `inner` with every value of `secrets` replaced by `[secret NAME]` in all it reports. */
export function withRedaction(inner: ModelProvider, secrets: readonly BoundSecret[]): ModelProvider {
  if (secrets.length === 0) return inner;
  return {
    scripted: inner.scripted,
    async complete(request: ModelRequest): Promise<ModelResponse> {
      const deltas = request.onDelta ? new DeltaRedactor(secrets, request.onDelta) : undefined;
      const onRetry = request.onRetry;
      const wrapped: ModelRequest = {
        ...request,
        ...(deltas ? { onDelta: (t: string) => deltas.push(t) } : {}),
        ...(onRetry ? { onRetry: (i) => onRetry({ ...i, cause: redact(i.cause, secrets) }) } : {}),
      };
      try {
        const r = await inner.complete(wrapped);
        deltas?.flush();
        return {
          ...r,
          text: redact(r.text, secrets),
          model: redact(r.model, secrets),
          toolCalls: r.toolCalls.map((c) => ({
            ...c,
            name: redact(c.name, secrets),
            arguments: redact(c.arguments, secrets),
          })),
        };
      } catch (e) {
        if (e instanceof ModelError)
          throw new ModelError(
            e.code,
            redact(e.message, secrets),
            e.attempts,
            e.causeText === undefined ? undefined : redact(e.causeText, secrets),
          );
        throw new Error(redact(e instanceof Error ? e.message : String(e), secrets));
      }
    },
  };
}
