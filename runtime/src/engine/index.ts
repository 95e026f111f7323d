/**
 * `runFlow(flow, input, options)`: the library entry point. Returns at once with a handle; the
 * run starts on the next microtask, so the caller can read `handle.events` first.
 */
import { validate } from '@switchboard/nodes';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { errorInfo, RunFailure } from './errors.js';
import { Run } from './run.js';
import type { RunCommand, RunHandle, RunOptions, RunResult, RunStatus } from './types.js';

export { Cancelled, errorInfo, type RunErrorCode, RunFailure } from './errors.js';
export { compileFlow, FlowError, joinNode } from './graph.js';
export { DEFAULT_MAX_STEPS, MAX_DELEGATION_DEPTH } from './run.js';
export type { CheckpointData, Cursor, RunData, Scope } from './state.js';

class Handle implements RunHandle {
  constructor(
    private readonly run: Run | undefined,
    readonly runId: string,
    readonly result: Promise<RunResult>,
    private readonly failed?: RunEvent[],
  ) {}
  get status(): RunStatus {
    return this.run?.status ?? 'failed';
  }
  get events(): AsyncIterable<RunEvent> {
    if (this.run) {
      this.run.queue.attach();
      return this.run.queue;
    }
    const list = this.failed ?? [];
    return (async function* () {
      yield* list;
    })();
  }
  send(command: RunCommand): void {
    this.run?.send(command);
  }
}

/** Starts a run of `flow` on `input`. Never throws: an unusable flow gives a failed run. */
export function runFlow(flow: Flow, input: unknown, options: RunOptions = {}): RunHandle {
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
    run = new Run(flow, input, options);
  } catch (e) {
    // Report as a failed run with one event, so hosts handle it like any other failure.
    const runId = options.resume?.runId ?? options.runId ?? 'run_invalid';
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
    queueMicrotask(() => options.onEvent?.(ev));
    return new Handle(
      undefined,
      runId,
      Promise.resolve({ runId, status: 'failed', error: { code: error.code, message: error.message } }),
      [ev],
    );
  }
  queueMicrotask(() => {
    void run.start();
  });
  return new Handle(run, run.runId, run.result);
}
