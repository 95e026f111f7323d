/**
 * The heavy half of `runFlow`: validates the flow and builds the interpreter. Loaded on the first
 * run (see index.ts), so that importing the library does not load the kinds. The validator is
 * not imported here: index.ts loads it (and Ajv with it) only for runs that validate, and hands
 * it in, so hosts that run pre-validated flows with `validate: false` never load it.
 */
import type { validate } from '@switchboard/nodes';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { errorInfo } from './error-info.js';
import { invalidFlowMessage, RunFailure } from './errors.js';
import type { EventQueue } from './event-queue.js';
import { Run } from './run.js';
import type { RunOptions, RunResult } from './types.js';
import { validateOnce } from './validated.js';

/** `validate` of `@switchboard/nodes`, bound to the default registry. */
export type Checker = typeof validate;

/**
 * Builds and starts a run, which calls `done` with its result; an unusable flow gives no run
 * (undefined) and a failed result with one `run.failed` event.
 */
export function startRun(
  flow: Flow,
  input: unknown,
  options: RunOptions,
  runId: string,
  queue: EventQueue,
  done: (r: RunResult) => void,
  check?: Checker,
): Run | undefined {
  let run: Run;
  try {
    if (options.validate !== false) {
      // Never skip validation silently: index.ts always hands the validator in when it is asked for.
      if (!check) throw new RunFailure('internal', 'validation was asked for but no validator was loaded');
      const v = validateOnce(check, flow, options.registry);
      if (!v.ok) throw new RunFailure('flow_invalid', invalidFlowMessage(v.errors));
    }
    run = new Run(flow, input, options, queue, runId, done);
  } catch (e) {
    const error = errorInfo(
      e instanceof RunFailure ? e : new RunFailure('flow_invalid', (e as Error).message),
    );
    const ev = {
      runId,
      seq: (options.resume?.seq ?? 0) + 1,
      ts: Date.now(),
      type: 'run.failed',
      error,
    } as RunEvent;
    options.onEvent?.(ev);
    queue.push(ev);
    queue.close();
    done({ runId, status: 'failed', error: { code: error.code, message: error.message } });
    return undefined;
  }
  void run.start();
  return run;
}
