/**
 * The interfaces a runtime supplies to node behaviours. A kind's behaviour (agent turn, decider,
 * observer, human, end, team policy) is written only against these, so the same kinds run in
 * any host: the Node interpreter, a browser preview, a test harness. Browser-safe: no node: imports.
 *
 * Division of labour: behaviours decide *what* a node does with one turn (prompt, tool rounds,
 * repairs, a choice, a verdict); the runtime decides *when* (control flow, teams, parallel
 * branches, budgets, commands, checkpoints) and owns the events' envelope (runId, seq, ts).
 */
import type { ConditionT } from '@switchboard/schemas';

// ---------------------------------------------------------------------------------------------
// Models (structurally identical to the runtime's provider contract)

export interface ToolCallRequest {
  id: string;
  name: string;
  /** Raw argument text as the model produced it; checked before anything runs. */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string; name?: string }
  | { role: 'assistant'; content: string; name?: string; toolCalls?: ToolCallRequest[] }
  | { role: 'tool'; content: string; toolCallId: string };

export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface ModelCall {
  messages: ChatMessage[];
  tools?: ToolSpec[];
  /**
   * Ask for JSON matching this schema. `strict`: the schema is written for providers that enforce
   * it exactly (every property required, no extra ones), so they cannot answer outside it.
   */
  jsonSchema?: { name: string; schema: Record<string, unknown>; strict?: boolean };
  /** A cap on the reply's tokens below the model config's own (an MCP server's sampling request). */
  maxTokens?: number;
}

export interface ModelReply {
  text: string;
  toolCalls: ToolCallRequest[];
  usage: TokenUsage;
  finishReason: string;
  model: string;
}

/**
 * One of the flow's models, bound to the calling node. The runtime applies the run's signal,
 * emits `model.delta` / `model.completed` / `model.retry`, counts tokens against budgets and
 * throws a typed error when a call fails after the provider's own retries.
 */
export interface ModelPort {
  readonly name: string;
  complete(call: ModelCall): Promise<ModelReply>;
  /**
   * `complete(call).then(then)`, with `then` run in the same reaction that accounts for the
   * reply: one promise and one microtask fewer per call. Optional; behaviours fall back to `complete`.
   */
  completeThen?<T>(call: ModelCall, then: (reply: ModelReply) => T | PromiseLike<T>): Promise<T>;
}

// ---------------------------------------------------------------------------------------------
// Transcript, inbox, state

export interface Message {
  /** Position in the run's transcript, from 1; strictly increasing. */
  seq: number;
  role: 'user' | 'assistant';
  /** The node that wrote it, or `user` for the run input and injected messages. */
  author: string;
  content: string;
  /** Parsed JSON when the author produced structured output. */
  json?: unknown;
  /** The node it was addressed to (handover results, answers, injected directives). */
  to?: string;
}

export type InboxKind = 'toolResult' | 'directive' | 'briefing' | 'reflection' | 'user';

/** Lower runs first: tool results, then directives and briefings, then user messages. */
export const INBOX_PRIORITY: Readonly<Record<InboxKind, number>> = {
  toolResult: 0,
  directive: 1,
  briefing: 1,
  reflection: 1,
  user: 2,
};

export interface InboxItem {
  kind: InboxKind;
  text: string;
  /** The node or edge it came from. */
  from?: string;
  /** Arrival order, to keep the sort stable across checkpoints. */
  order: number;
}

export interface Summary {
  text: string;
  /** The last transcript seq the summary covers; every later message stays verbatim. */
  coversSeq: number;
}

export type MemoryPolicy = 'transcript' | 'thread' | 'summary';

export interface StateAccess {
  /** A value by dotted path (`plan.steps.0`), or undefined. */
  get(path: string): unknown;
  set(key: string, value: unknown): void;
  snapshot(): Readonly<Record<string, unknown>>;
}

export interface Counters {
  turns: number;
  steps: number;
  tokens: number;
  failures: Readonly<Record<string, number>>;
}

/** What conditions and rules read: see `schemas/src/condition.ts` for the path grammar. */
export interface ConditionContext {
  last?: { content: string; author: string; json?: unknown };
  state: Readonly<Record<string, unknown>>;
  counters: Counters;
  turn?: { toolCalls: number; node?: string };
  input: unknown;
}

/** A read view of the run for the node that is executing. */
export interface RunView {
  readonly runId: string;
  readonly input: unknown;
  /** The input as text (`{{task}}`). */
  readonly task: string;
  /** Committed messages, oldest first. Do not mutate. */
  readonly transcript: readonly Message[];
  readonly state: StateAccess;
  readonly counters: Counters;
  /** The latest summary visible to this node (its team's, else the run's). */
  summary(): Summary | undefined;
  /** The messages this node sees under a memory policy (handover floors and threads applied). */
  view(memory: MemoryPolicy): readonly Message[];
  /** The node that holds the mic, when a decider granted it. */
  readonly mic: string | undefined;
}

// ---------------------------------------------------------------------------------------------
// Tools and choices

export interface ToolOutcome {
  content: string;
  isError: boolean;
  structured?: unknown;
}

/** A tool the node may call: a granted MCP tool, a delegated agent/team, or a generated handover. */
export interface ToolPort extends ToolSpec {
  readonly source: 'mcp' | 'delegate' | 'handover';
  /** For handover tools: the edge taken. */
  readonly edgeId?: string;
  /** Runs the tool; the runtime emits tool.called / tool.result and counts a step. */
  call(args: Record<string, unknown>, callId: string): Promise<ToolOutcome>;
}

/** An outgoing choice of a decider, an agent or a human gate: one edge and where it leads. */
export interface Candidate {
  edgeId: string;
  target: string;
  /** The target's label or id, and its role line (agents) for arbiters and managers. */
  label: string;
  role?: string;
  description?: string;
  /** The edge's `branch` (human approve/reject gates). */
  branch?: string;
  /** FSM escalation edge. */
  escalation?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Events a behaviour may emit (the runtime stamps runId, seq, ts, nodeId and `scripted`)

export type BehaviorEvent =
  | { type: 'tool.denied'; callId: string; tool: string; reason: string }
  | { type: 'tool.refused'; callId: string; tool: string; error: string; reason: string }
  | { type: 'decision'; choice: string | string[]; reason: string }
  | { type: 'handover.missing'; candidates: string[]; action: 'reask'; attempt: number }
  | { type: 'observer.fired'; observer: string; target?: string; action: string; detail?: unknown }
  | { type: 'log'; level: string; text: string };

/** A failure with a stable code, raised by behaviours and turned into node.failed / run.failed. */
export class NodeError extends Error {
  override readonly name = 'NodeError';
  constructor(
    readonly code: string,
    message: string,
    readonly attempts?: number,
    /** False when retrying the same turn cannot help (e.g. no answer can come). */
    readonly retryable = true,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------
// Contexts

export interface NodeInfo<C> {
  id: string;
  kind: string;
  label: string;
  config: C;
  parent?: string;
}

export interface NodeContext<C = Record<string, unknown>> {
  readonly node: NodeInfo<C>;
  readonly run: RunView;
  /** Pending inbox items for this node, sorted by priority; the runtime removes them when the turn commits. */
  readonly inbox: readonly InboxItem[];
  /** Outgoing choices (edges) in the current control position. */
  readonly candidates: readonly Candidate[];
  readonly signal: AbortSignal;
  readonly clock: { now(): number };
  emit(event: BehaviorEvent): void;
  /** A flow model by name (`default` when omitted). */
  model(name?: string): ModelPort;
  /** The tools this node may call (its grant, delegates and generated handover tools). */
  tools(): Promise<readonly ToolPort[]>;
  /**
   * True when the host knows this node has no tools at all, so a behaviour need not await
   * `tools()` (a turn's only await besides the model call). Hosts that cannot tell leave it unset.
   */
  readonly noTools?: boolean;
  /** Asks a person and waits for the answer (human nodes). Rejects with NodeError when none can come. */
  ask(question: string, options?: string[]): Promise<string>;
  /** What conditions read right now (last message, state, counters, input). */
  conditions(extra?: Partial<ConditionContext>): ConditionContext;
  /** Private, checkpointed memory of this node (e.g. a round-robin position). Plain JSON values. */
  readonly memo: { get(key: string): unknown; set(key: string, value: unknown): void };
}

/** What a flow node's turn produced. */
export interface StepOutcome {
  /** A message to append to the transcript (authored by this node). */
  message?: { content: string; json?: unknown; to?: string };
  /** Where control goes: chosen edge ids (several run in parallel), or `done` to end the team. */
  route?: { edges: string[]; reason?: string } | { done: true; reason?: string };
  /** The run's final answer (end nodes). */
  output?: unknown;
  /** Tool calls made in this turn (reflection rules read `turn.toolCalls`). */
  toolCalls?: number;
  /** State keys to set when the turn commits. */
  state?: Record<string, unknown>;
  /** The node that receives the mic (deciders with `grantMic`). */
  grantMic?: string;
}

/** The behaviour of a node on the control path: start, end, agent, decider, human, custom steps. */
export interface FlowBehavior<C = Record<string, unknown>> {
  type: 'flow';
  run(ctx: NodeContext<C>): Promise<StepOutcome>;
}

export interface ObserverContext<C = Record<string, unknown>> extends NodeContext<C> {
  readonly phase: 'before' | 'after';
  /** The node whose turn is observed. */
  readonly subject: string;
  /**
   * After a turn: the message about to be committed (guards may reject it). Before a turn: what
   * the subject is about to read — its pending inbox items, or else the last message someone
   * else wrote.
   */
  readonly pending?: { content: string; json?: unknown };
  /** After a turn: how many tool calls it made. */
  readonly toolCalls: number;
  /** Times the current turn has already been rejected by this observer. */
  readonly rejections: number;
  /** Earlier messages of the subject in the last minute (rate limits). */
  readonly recentBySubject: number;
}

export type ObserverOutcome =
  | { action: 'none' }
  | { action: 'summary'; summary: Summary; usage?: TokenUsage }
  | {
      action: 'violation';
      reason: string;
      onViolation: 'retry' | 'block' | 'escalate';
      escalateTo?: string;
      maxRetries: number;
    }
  | { action: 'remind'; text: string };

export interface ObserverBehavior<C = Record<string, unknown>> {
  type: 'observer';
  /** Whether this observer runs at this phase for this config. */
  runsAt(config: C, phase: 'before' | 'after'): boolean;
  observe(ctx: ObserverContext<C>): Promise<ObserverOutcome>;
}

/** The progress of one team activation, as team policies see it. */
export interface TeamStats {
  turns: number;
  tokens: number;
  startedAt: number;
  /** Member speaking order so far (round robin position). */
  spoken: number;
  lastSpeaker?: string;
}

export interface TeamMember {
  id: string;
  kind: string;
  label: string;
  role?: string;
}

export interface TeamContext<C = Record<string, unknown>> extends NodeContext<C> {
  readonly members: readonly TeamMember[];
  readonly stats: TeamStats;
}

export interface TeamBehavior<C = Record<string, unknown>> {
  type: 'team';
  /** A reason to stop the team now (max turns, tokens, phrase, timeout), or undefined. */
  terminated(config: C, stats: TeamStats, last: Message | undefined, now: number): string | undefined;
  /** Group chat: the next speaker (round robin or an LLM manager), or done. Deciders are run by the runtime. */
  nextSpeaker(
    ctx: TeamContext<C>,
  ): Promise<{ speaker: string; reason: string } | { done: true; reason: string }>;
}

export type KindBehavior<C = Record<string, unknown>> =
  | FlowBehavior<C>
  | ObserverBehavior<C>
  | TeamBehavior<C>;

/** Condition helper type re-exported for behaviours. */
export type { ConditionT };
