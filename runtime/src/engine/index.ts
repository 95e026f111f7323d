/**
 * `runFlow(flow, input, options)`: the library entry point. It returns a handle at once; the
 * interpreter (with the node kinds) is loaded on the first run, so importing the library stays
 * cheap, and the validator (with Ajv, ~10 MB resident) only on the first run that asks for
 * validation. The run starts after `runFlow` returns, so read `handle.events` first.
 */
import type { Flow, RunEvent } from '@switchboard/schemas';
import { EventQueue } from './event-queue.js';
import type { Checker } from './start.js';
import type { RunCommand, RunHandle, RunOptions, RunResult, RunStatus } from './types.js';

export { Cancelled, type RunErrorCode, RunFailure } from './errors.js';
export { DEFAULT_MAX_STEPS, MAX_DELEGATION_DEPTH } from './limits.js';
export type { CheckpointData, Cursor, RunData, Scope } from './state.js';

type StartModule = typeof import('./start.js');
let loaded: StartModule | undefined;
let loading: Promise<StartModule> | undefined;
let checker: Checker | undefined;
let loadingChecker: Promise<Checker> | undefined;

function loadEngine(): Promise<StartModule> {
  loading ??= import('./start.js').then((m) => {
    loaded = m;
    return m;
  });
  return loading;
}

function loadChecker(): Promise<Checker> {
  loadingChecker ??= import('@switchboard/nodes').then((m) => {
    checker = m.validate;
    return checker;
  });
  return loadingChecker;
}

const STARTED: Promise<void> = Promise.resolve();

interface RunLike {
  readonly status: RunStatus;
  send(command: RunCommand): void;
}

class Handle implements RunHandle {
  readonly result: Promise<RunResult>;
  private readonly queue = new EventQueue();
  private run: RunLike | undefined;
  private started = false;
  private pending: RunCommand[] | undefined;

  constructor(
    readonly runId: string,
    flow: Flow,
    input: unknown,
    options: RunOptions,
  ) {
    const checks = options.validate !== false;
    // The run settles this promise itself: no promise of its own for this one to adopt.
    let settle!: (r: RunResult) => void;
    let fail!: (e: unknown) => void;
    this.result = new Promise<RunResult>((resolve, reject) => {
      settle = resolve;
      fail = reject;
    });
    const begin = (m: StartModule) => {
      try {
        const run = m.startRun(flow, input, options, runId, this.queue, settle, checks ? checker : undefined);
        this.run = run;
        this.started = true;
        const pending = this.pending;
        this.pending = undefined;
        if (pending) for (const c of pending) run?.send(c);
      } catch (e) {
        fail(e);
      }
    };
    // Once loaded, a run starts on the next microtask: no macrotask on the hot path.
    const m = loaded;
    // (Not queueMicrotask: Node gives each such callback an async resource.)
    if (m && (!checks || checker)) void STARTED.then(() => begin(m));
    else if (!checks) loadEngine().then(begin, fail);
    else Promise.all([loadEngine(), loadChecker()]).then(([m]) => begin(m), fail);
  }

  get status(): RunStatus {
    if (this.run) return this.run.status;
    return this.started ? 'failed' : 'pending';
  }

  get events(): AsyncIterable<RunEvent> {
    this.queue.attach();
    return this.queue;
  }

  send(command: RunCommand): void {
    if (this.run) this.run.send(command);
    else if (!this.started) {
      this.pending ??= [];
      this.pending.push(command);
    }
  }
}

/** Starts a run of `flow` on `input`. Never throws: an unusable flow gives a failed run. */
export function runFlow(flow: Flow, input: unknown, options: RunOptions = {}): RunHandle {
  const runId =
    options.resume?.runId ??
    options.runId ??
    `run_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  return new Handle(runId, flow, input, options);
}
