/**
 * The heavy half of `runFlow`: validates the flow and builds the interpreter. Loaded on the first
 * run (see index.ts), so that importing the library does not load the validator or the kinds.
 */
import { validate } from '@switchboard/nodes';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { errorInfo } from './error-info.js';
import { RunFailure } from './errors.js';
import type { EventQueue } from './event-queue.js';
import { Run } from './run.js';
import type { RunOptions, RunResult } from './types.js';

export interface Started {
  run: Run | undefined;
  result: Promise<RunResult>;
}

/** Builds and starts a run; an unusable flow gives a failed run with one `run.failed` event. */
export function startRun(
  flow: Flow,
  input: unknown,
  options: RunOptions & { runId: string },
  queue: EventQueue,
): Started {
  let run: Run;
  try {
    if (options.validate !== false) {
      const v = validate(flow, options.registry ? { kinds: options.registry } : {});
      if (!v.ok)
        throw new RunFailure(
          'flow_invalid',
          `the flow is invalid: ${v.errors
            .slice(0, 5)
            .map((p) => `${p.path || '/'}: ${p.message}`)
            .join('; ')}`,
        );
    }
    run = new Run(flow, input, options, queue);
  } catch (e) {
    const runId = options.runId;
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
    return {
      run: undefined,
      result: Promise.resolve({
        runId,
        status: 'failed',
        error: { code: error.code, message: error.message },
      }),
    };
  }
  void run.start();
  return { run, result: run.result };
}
