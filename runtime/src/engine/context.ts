/**
 * What the concerns of a run share: the run context (`Ctx`, one per top-level or delegated run),
 * a step's outcome, the state view behaviours read, and the shared empty tables.
 */
import { getPath, type InboxItem, type StateAccess, type StepOutcome } from '@switchboard/nodes/core';
import type { EventError, Flow } from '@switchboard/schemas';
import type { Cancelled, RunFailure } from './errors.js';
import type { Emitter } from './events.js';
import type { Graph } from './graph.js';
import type { RunData } from './state.js';
import type { RunOptions, RunStatus } from './types.js';

/** What every concern of a run may read of it (the `Run` in run.ts is one). */
export interface RunCore {
  readonly runId: string;
  readonly flow: Flow;
  readonly options: RunOptions;
  readonly graph: Graph;
  /** Aborted when the run stops: calls in flight listen on it. */
  readonly signal: AbortSignal;
  readonly events: Emitter;
  readonly now: () => number;
  status: RunStatus;
  /** Why the run stops (cancelled, failed), once it does: every await point rethrows it. */
  readonly stop: RunFailure | Cancelled | undefined;
}

/** A run context: the top-level run or a delegated (nested) run sharing budgets and state. */
export interface Ctx {
  runId: string;
  parentRunId?: string;
  parentCallId?: string;
  data: RunData;
  depth: number;
  /** `data.state` as behaviours access it. */
  state: StateView;
}

export interface Failed {
  failed: EventError;
}

export type Outcome = StepOutcome & { escalateTo?: string };

export function isFailed(o: Outcome | Failed): o is Failed {
  return (o as Failed).failed !== undefined;
}

export class StateView implements StateAccess {
  constructor(private readonly d: RunData) {}
  get(path: string): unknown {
    return getPath(this.d.state, path);
  }
  set(key: string, value: unknown): void {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') return;
    this.d.state[key] = value;
  }
  snapshot(): Readonly<Record<string, unknown>> {
    return this.d.state;
  }
}

export const SETTLED: Promise<void> = Promise.resolve();

// The tables most runs never fill (breakpoints, early answers, waiting humans, tool and ACP
// handles) share one empty instance until their first entry: an empty Map costs ~270 bytes,
// and a process running many runs at once carries and collects them all (bench gate e).
export const NO_ENTRIES: ReadonlyMap<string, never> = new Map<string, never>();
export const NO_NAMES: ReadonlySet<string> = new Set<string>();

/** `t`, or a new table of the run's own if `t` is the shared empty one. */
export function own<V>(t: ReadonlyMap<string, V>): Map<string, V> {
  return t === NO_ENTRIES ? new Map() : (t as Map<string, V>);
}

export function ownSet(t: ReadonlySet<string>): Set<string> {
  return t === NO_NAMES ? new Set() : (t as Set<string>);
}
export const NO_ITEMS: readonly InboxItem[] = [];
export const NO_SEQS: readonly number[] = [];

export function emptyUsage() {
  return { turns: 0, promptTokens: 0, completionTokens: 0 };
}
