/**
 * The public contract of the interpreter: how a host starts, watches, steers, checkpoints and
 * resumes a run. The server, the CLI and the MCP flow server all go through this.
 * (Draft owned by the engine; other parts may rely on every name here.)
 */
import type { KindRegistry } from '@switchboard/nodes';
import type { BudgetsT, Flow, RunEvent } from '@switchboard/schemas';
import type { ModelFactory, ModelProvider } from '../models/types.js';
import type { OutboundPolicy } from '../net/outbound.js';
import type { SecretsPolicy } from '../net/secrets.js';
import type { ToolHost } from '../tools/types.js';

export type RunStatus =
  | 'pending'
  | 'running'
  | 'paused'
  | 'waiting'
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'interrupted';

export type RunCommand =
  | { type: 'pause' }
  | { type: 'resume' }
  | { type: 'cancel'; reason?: string }
  | { type: 'step' }
  | { type: 'inject'; text: string; nodeId?: string }
  | { type: 'answer'; nodeId?: string; answer: string }
  | { type: 'breakpoint'; nodeId: string; on: boolean }
  /**
   * The host ends the run with a named failure (e.g. the person asked through MCP elicitation
   * declined: `human_declined`). Not offered over REST.
   */
  | { type: 'fail'; code: string; message: string };

/** Everything needed to continue a run in a new process. Plain JSON. */
export interface RunCheckpoint {
  version: 1;
  runId: string;
  flowId: string;
  /** The last event seq written before this checkpoint; a resumed run continues after it. */
  seq: number;
  /** Engine-private state (transcript, inboxes, state, counters, summaries, control position). */
  data: unknown;
}

export interface RunResult {
  runId: string;
  status: 'completed' | 'failed' | 'cancelled' | 'interrupted';
  output?: unknown;
  error?: { code: string; message: string };
}

export interface RunOptions {
  runId?: string;
  /** Providers by the flow's model names, or a factory; defaults to the built-in providers. */
  models?: Record<string, ModelProvider> | ModelFactory;
  tools?: ToolHost;
  signal?: AbortSignal;
  /** A fork of a past run (see cassette/fork.ts): said in the `run.started` event. */
  forkedFrom?: { runId: string; nodeId: string; turn: number };
  /**
   * Pinned nodes (see ../pins/): each named node's turns make no model or tool call and produce
   * the pinned output instead. Said in `run.started` (`pins`) and, per turn, in `node.pinned`.
   */
  pins?: readonly import('@switchboard/schemas').Pin[];
  /** Called synchronously for every event, in seq order (the store appends here). */
  onEvent?: (event: RunEvent) => void;
  /**
   * Called at every turn boundary; the run waits for the promise it returns, so a checkpoint
   * is durable before it goes on. Returning nothing says the host is done with it already
   * (kept, or deliberately skipped): the run goes on at once, without a microtask.
   */
  checkpoint?: (cp: RunCheckpoint) => Promise<void> | undefined;
  /** Continue from a checkpoint instead of starting. */
  resume?: RunCheckpoint;
  /** Answers for human nodes, by node id (headless runs). */
  answers?: Record<string, string | string[]>;
  /** Overrides the flow's budgets. */
  budgets?: BudgetsT;
  /** Where run files live (documents, workspaces). */
  dataDir?: string;
  /** The flow file's directory, for relative script files. */
  baseDir?: string;
  /** Resolves `${env:NAME}`; defaults to process.env in Node hosts. */
  env?: Record<string, string | undefined>;
  /**
   * What a human node does when no answer was supplied in `answers`: `wait` for an `answer`
   * command (default; servers), or `fail` at once with error code `human_input_required`
   * (headless runs that have no one to ask).
   */
  humanInput?: 'wait' | 'fail';
  /** Node kinds to interpret; defaults to the built-in registry of @switchboard/nodes. */
  registry?: KindRegistry;
  /**
   * What the run answers when an MCP server asks through elicitation during a tool call: `ask`
   * (human input of the run: `input.requested` with the `form`, answered like a human node, by
   * the agent's node id; the default when `humanInput` is `wait`), `decline` (the default
   * otherwise) or `accept-defaults` (the form's defaults, declined when a required field has
   * none). The question and the outcome are logged as a `log` event.
   */
  elicitation?: 'ask' | 'decline' | 'accept-defaults';
  /** Validate the flow before running (default true); an invalid flow fails with `flow_invalid`. */
  validate?: boolean;
  /** Milliseconds clock for timestamps and timeouts; defaults to Date.now. */
  now?: () => number;
  /**
   * Lets the default model factory reach loopback/private model endpoints (the operator named
   * them, e.g. `switchboard run --model default=http://127.0.0.1:11434/v1`). Default false.
   */
  allowLocalModels?: boolean;
  /**
   * The operator's outbound destinations (`--allow-outbound`): which loopback, private hosts or
   * ranges model endpoints may reach. Default: public addresses only.
   */
  outbound?: OutboundPolicy;
  /** Which `${env:NAME}` a model's apiKey may name, and where each may go. Default: the built-in defaults. */
  secrets?: SecretsPolicy;
}

export interface RunHandle {
  readonly runId: string;
  readonly status: RunStatus;
  /**
   * Every event of the run, from the first, as an async iterable (one consumer). The run starts
   * on the microtask after `runFlow` returns, so read this property before awaiting anything;
   * events are buffered only once it has been read, and dropped once delivered.
   */
  events: AsyncIterable<RunEvent>;
  send(command: RunCommand): void;
  result: Promise<RunResult>;
}

export type RunFlow = (flow: Flow, input: unknown, options?: RunOptions) => RunHandle;
