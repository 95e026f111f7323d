/** Typed run failures: every failed run names a stable code, a sentence, and where it can, a cause. */

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

/** The sentence for a flow the validator refused: its first five problems, with their paths. */
export function invalidFlowMessage(problems: ReadonlyArray<{ path: string; message: string }>): string {
  return `the flow is invalid: ${problems
    .slice(0, 5)
    .map((p) => `${p.path || '/'}: ${p.message}`)
    .join('; ')}`;
}

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
