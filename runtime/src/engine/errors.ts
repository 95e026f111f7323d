/** Typed run failures: every failed run names a stable code, a sentence, and where it can, a cause. */
import { NodeError } from '@switchboard/nodes';
import type { EventError } from '@switchboard/schemas';
import { ModelError } from '../models/types.js';

export type RunErrorCode =
  | 'flow_invalid'
  | 'budget_exceeded'
  | 'human_input_required'
  | 'human_timeout'
  | 'node_failed'
  | 'unknown_model'
  | 'delegation_too_deep'
  | 'internal'
  | (string & {});

/** A failure that ends the run (after a node's own retries, or a budget). */
export class RunFailure extends Error {
  override readonly name = 'RunFailure';
  constructor(
    readonly code: RunErrorCode,
    message: string,
    readonly attempts?: number,
    readonly causeText?: string,
  ) {
    super(message);
  }
}

/** Internal signal: the run was cancelled; unwinds without emitting anything. */
export class Cancelled extends Error {
  override readonly name = 'Cancelled';
}

export function errorInfo(e: unknown): EventError {
  if (e instanceof RunFailure) {
    const info: EventError = { code: e.code, message: e.message };
    if (e.attempts !== undefined) info.attempts = e.attempts;
    if (e.causeText !== undefined) info.cause = e.causeText;
    return info;
  }
  if (e instanceof ModelError) {
    const info: EventError = { code: `model_${e.code}`, message: e.message, attempts: e.attempts };
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
