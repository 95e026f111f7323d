/** Turns any failure into the `{ code, message, cause?, attempts? }` of run.failed / node.failed events. */
import { NodeError } from '@switchboard/nodes/core';
import type { EventError } from '@switchboard/schemas';
import { ModelError } from '../models/types.js';
import { RunFailure } from './errors.js';

/** Model failures that retrying the node cannot change: a cancel, or the operator's refusal. */
export const FINAL_MODEL_CODES: ReadonlySet<string> = new Set([
  'cancelled',
  'outbound_refused',
  'secret_refused',
]);

/** Codes of the operator's decisions; they keep their name in events (no `model_` prefix). */
const OPERATOR_CODES: ReadonlySet<string> = new Set(['outbound_refused', 'secret_refused']);

/**
 * A tool host's refusal that retrying cannot change — a command not approved for the flow, a
 * destination or a secret the operator does not allow — as a named, non-retryable NodeError.
 */
export function operatorRefusal(e: unknown): NodeError | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  const message = e instanceof Error ? e.message : String(e);
  if (code === 'mcp.consent-required') return new NodeError('consent_required', message, 1, false);
  // A server that needs the operator to log in (switchboard mcp-login): no retry logs in.
  if (code === 'mcp.auth-required') return new NodeError('auth_required', message, 1, false);
  if (typeof code === 'string' && OPERATOR_CODES.has(code)) return new NodeError(code, message, 1, false);
  return undefined;
}

export function errorInfo(e: unknown): EventError {
  if (e instanceof RunFailure) {
    const info: EventError = { code: e.code, message: e.message };
    if (e.attempts !== undefined) info.attempts = e.attempts;
    if (e.causeText !== undefined) info.cause = e.causeText;
    return info;
  }
  if (e instanceof ModelError) {
    const code = OPERATOR_CODES.has(e.code) ? e.code : `model_${e.code}`;
    const info: EventError = { code, message: e.message, attempts: e.attempts };
    if (e.causeText !== undefined) info.cause = e.causeText;
    return info;
  }
  if (e instanceof NodeError) {
    const info: EventError = { code: e.code, message: e.message };
    if (e.attempts !== undefined) info.attempts = e.attempts;
    return info;
  }
  const err = e as Error;
  return { code: 'internal', message: err?.message ?? String(e) };
}
