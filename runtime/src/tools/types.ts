/**
 * The contract between the interpreter and tools. An agent sees exactly the tools its `tools`
 * edges grant (after filters); the tool host resolves those grants to callable handles.
 */
export interface ToolResult {
  /** Text given back to the model. */
  content: string;
  isError: boolean;
  /** Structured content, when the tool returned some. */
  structured?: unknown;
}

/** A server's `elicitation/create` (form mode) during a call, and the answer the run gives. */
export interface ElicitationAsk {
  message: string;
  requestedSchema: Record<string, unknown>;
}
export interface ElicitationAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, string | number | boolean | string[]>;
}

/**
 * A server's `sampling/createMessage` during a call (MCP sampling): the server asks the model of
 * the agent that called it. Text only; see `runtime/src/mcp/sampling.ts`.
 */
export interface SamplingAsk {
  messages: Array<{ role: 'user' | 'assistant'; text: string }>;
  systemPrompt?: string;
  /** What the server asks for at most; the tool node's `sampling.maxTokens` may lower it. */
  maxTokens: number;
}
export interface SamplingAnswer {
  text: string;
  /** The model that answered. */
  model: string;
  stopReason: string;
}

export interface ToolCallOptions {
  signal: AbortSignal;
  timeoutMs?: number;
  /** Progress or log lines from the tool (e.g. a stdio server's stderr). */
  onLog?: (text: string) => void;
  /** Answers the server's elicitation requests made during this call (absent: declined). */
  elicit?: (ask: ElicitationAsk) => Promise<ElicitationAnswer>;
  /** Answers the server's sampling requests made during this call (absent: refused). */
  sample?: (ask: SamplingAsk) => Promise<SamplingAnswer>;
}

export interface ToolHandle {
  /** The stable, collision-free name shown to the model. */
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  inputSchema: Record<string, unknown>;
  /** The tool node that grants it, and the server and tool name behind it. */
  toolNodeId: string;
  server: string;
  remoteName: string;
  call(args: Record<string, unknown>, options: ToolCallOptions): Promise<ToolResult>;
}

export interface ToolHostContext {
  runId: string;
  /** The run's data directory (documents, workspaces). */
  dataDir?: string;
  /** The run's JSON state, for the built-in `state` server. */
  state: {
    get(key: string): unknown;
    set(key: string, value: unknown): void;
    snapshot(): Record<string, unknown>;
  };
  signal: AbortSignal;
  /** Events the tool host wants in the run's log (stderr lines, tool disabled, server failed). */
  emit?: (
    event:
      | { type: 'log'; level: string; text: string; nodeId?: string }
      | { type: 'tool.disabled'; tool: string; reason: string; nodeId?: string },
  ) => void;
}

export interface ToolHost {
  /** The tools granted to one agent node, in a stable order. */
  toolsFor(agentNodeId: string, ctx: ToolHostContext): Promise<ToolHandle[]>;
  /** Releases what the run holds (servers stay pooled for other runs until idle). */
  release(runId: string): Promise<void>;
}
