/**
 * The serialisable state of a run: what a checkpoint holds. Everything here is plain JSON so
 * another process can resume from it. Control position lives in cursors (one per parallel
 * branch), each with an explicit stack of team scopes — no JS call stack is part of the state.
 */
import type { InboxItem, Message, Summary } from '@switchboard/nodes';
import { type Dict, dict } from '@switchboard/schemas/core';

export type ScopeMode = 'root' | 'handover' | 'groupChat' | 'fsm';

/** One activation of a team (or the flow's top level) on a cursor's scope stack. */
export interface Scope {
  team: string | null;
  mode: ScopeMode;
  turns: number;
  tokens: number;
  startedAt: number;
  /** Group chat: speakers chosen so far. */
  spoken: number;
  lastSpeaker?: string;
  /** FSM: the current state (member) whose transition the decider picks. */
  state?: string;
}

/** A control position. Parallel branches are child cursors of a fork. */
export interface Cursor {
  /** The node that runs next; null when the innermost scope has nothing more to run. */
  at: string | null;
  scopes: Scope[];
  fork?: { origin: string; join: string | null; edges: string[]; branches: Cursor[] };
  /** Parallel branch: stop before entering this node (the join). */
  stopAt?: string | null;
  /** Delegated run: stop after this node completes. */
  stopAfter?: string;
  done?: boolean;
  /** The last message this cursor committed (branch results at a join). */
  lastSeq?: number;
  /** A failure that is waiting to be handled by the enclosing FSM scope. */
  escalateFrom?: string;
}

export interface NodeUsage {
  turns: number;
  promptTokens: number;
  completionTokens: number;
}

export interface RunCounters {
  turns: number;
  steps: number;
  tokens: number;
  promptTokens: number;
  completionTokens: number;
  failures: Dict<number>;
  byNode: Dict<NodeUsage>;
  byModel: Dict<NodeUsage>;
  /** Spending against node, team and cost budgets (`node\u0000tokens` → used), when any is set. */
  budgetUse?: Dict<number>;
}

export interface RunData {
  input: unknown;
  task: string;
  transcript: Message[];
  msgSeq: number;
  inbox: Dict<InboxItem[]>;
  inboxOrder: number;
  /** Thread memory: seqs each tracked node sees (its own messages and what was handed to it). */
  threads: Dict<number[]>;
  /** Handover context: messages before this seq are hidden from the node. */
  floors: Dict<number>;
  /** Latest summary per summarizer observer. */
  summaries: Dict<Summary>;
  /** Private memory per node (round-robin positions). */
  memo: Dict<Dict<unknown>>;
  mic?: string;
  state: Dict<unknown>;
  counters: RunCounters;
  /** Position in `options.answers` lists per human node. */
  answerPos: Dict<number>;
  /** Message timestamps per author within the last minute (guard rate limits). */
  recent: Dict<number[]>;
  output?: unknown;
  hasOutput?: boolean;
}

export interface CheckpointData {
  v: 1;
  root: Cursor;
  data: RunData;
  /** Scripted providers' positions, by model name. */
  providers: Dict<unknown>;
  /** Node ids to pause before: a resumed run stops where its operator asked it to. */
  breakpoints?: string[];
  /** Answers sent before their human node asked, by node id (or '*'). */
  answers?: Record<string, string[]>;
}

export function inputText(input: unknown): string {
  if (typeof input === 'string') return input;
  if (input === undefined || input === null) return '';
  if (typeof input === 'object' && typeof (input as { task?: unknown }).task === 'string')
    return (input as { task: string }).task;
  return JSON.stringify(input);
}

export function newCounters(): RunCounters {
  return {
    turns: 0,
    steps: 0,
    tokens: 0,
    promptTokens: 0,
    completionTokens: 0,
    failures: dict(),
    byNode: dict(),
    byModel: dict(),
  };
}

export function newRunData(
  input: unknown,
  shared?: { counters: RunCounters; state: Dict<unknown> },
): RunData {
  return {
    input,
    task: inputText(input),
    transcript: [],
    msgSeq: 0,
    inbox: dict(),
    inboxOrder: 0,
    threads: dict(),
    floors: dict(),
    summaries: dict(),
    memo: dict(),
    state: shared?.state ?? dict(),
    counters: shared?.counters ?? newCounters(),
    answerPos: dict(),
    recent: dict(),
  };
}

/**
 * Run data read back from a checkpoint (parsed JSON) with every table keyed by node ids, model
 * names or state keys turned into a null-prototype object, as `newRunData` makes them: a key
 * such as `__proto__` that a later write adds must stay an ordinary key.
 */
export function restoreRunData(d: RunData): RunData {
  const c = d.counters;
  const counters: RunCounters = {
    ...c,
    failures: dict(c.failures),
    byNode: dict(c.byNode),
    byModel: dict(c.byModel),
  };
  const memo = dict<Dict<unknown>>();
  for (const [k, v] of Object.entries(d.memo ?? {})) memo[k] = dict(v);
  return {
    ...d,
    inbox: dict(d.inbox),
    threads: dict(d.threads),
    floors: dict(d.floors),
    summaries: dict(d.summaries),
    memo,
    state: dict(d.state),
    counters,
    answerPos: dict(d.answerPos),
    recent: dict(d.recent),
  };
}

export function rootScope(now: number): Scope {
  return { team: null, mode: 'root', turns: 0, tokens: 0, startedAt: now, spoken: 0 };
}
