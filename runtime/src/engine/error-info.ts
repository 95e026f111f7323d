/** Turns any failure into the `{ code, message, cause?, attempts? }` of run.failed / node.failed events. */
import { NodeError } from '@switchboard/nodes/core';
import type { EventError } from '@switchboard/schemas';
import { ModelError } from '../models/types.js';
import { RunFailure } from './errors.js';

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
