/**
 * The flow document, version 1. These TypeBox definitions are the single source of truth:
 * the TypeScript types are derived from them and `flow.schema.json` is generated from them
 * (`pnpm --filter @switchboard/schemas gen`); a test fails when the committed file is stale.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { MAX_ID_LENGTH } from './limits.js';

export const FLOW_VERSION = 1 as const;
export const FLOW_SCHEMA_ID = 'https://switchboard.dev/schemas/flow.schema.json';

/** Ids are plain ASCII so they survive URLs, file names and terminals, and cannot hide characters. */
export const Id = Type.String({
  minLength: 1,
  maxLength: MAX_ID_LENGTH,
  pattern: '^[A-Za-z0-9_][A-Za-z0-9_.:-]*$',
  description: 'A stable identifier: ASCII letters, digits, `_ . : -`.',
});

/** Names of `models` and `mcpServers` entries, which nodes refer to. */
export const RefName = Type.String({
  pattern: '^[A-Za-z0-9_.-]+$',
  description: 'A name of letters, digits, `_ . -`.',
});

export const Position = Type.Object({ x: Type.Number(), y: Type.Number() }, { additionalProperties: false });
export const Size = Type.Object(
  { width: Type.Number({ minimum: 0 }), height: Type.Number({ minimum: 0 }) },
  { additionalProperties: false },
);

const JsonObject = Type.Record(Type.String(), Type.Unknown());

/** A string that may hold a secret: only an `${env:NAME}` reference is allowed there. */
export const SecretRef = Type.String({
  pattern: '^\\$\\{env:[A-Za-z_][A-Za-z0-9_]*\\}$',
  description: 'A secret is never written into a flow: use `${env:NAME}`.',
});

export const ModelConfig = Type.Object(
  {
    provider: Type.String({
      minLength: 1,
      description: '`openai` or `scripted`, or a provider added by a host.',
    }),
    model: Type.Optional(Type.String()),
    baseURL: Type.Optional(Type.String()),
    apiKey: Type.Optional(SecretRef),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    maxTokens: Type.Optional(Type.Integer({ minimum: 1 })),
    /** Time to response headers, and the longest silence inside a streamed answer. */
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1 })),
    /**
     * The total time one model call may take, every attempt, wait and streamed delta included; past
     * it the call fails with `model_deadline`. Default 30 s, plus 20 ms per token of `maxTokens`.
     */
    deadlineMs: Type.Optional(Type.Integer({ minimum: 1 })),
    /** Transport retries of one model call: its one retry budget (agent turns never add to it). */
    maxRetries: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
    /** Scripted replies, for tests and offline demos (provider `scripted`). */
    script: Type.Optional(Type.Array(Type.Unknown())),
    /** A scripted-reply file next to the flow (provider `scripted`). */
    scriptFile: Type.Optional(Type.String()),
    /** Milliseconds a scripted reply takes, to simulate latency. */
    latencyMs: Type.Optional(Type.Number({ minimum: 0 })),
    /** Prices per million tokens, in the currency the flow's users count in; shown as each node's cost. */
    pricing: Type.Optional(
      Type.Object(
        {
          input: Type.Number({ minimum: 0, description: 'Price of 1M input (prompt) tokens.' }),
          output: Type.Number({ minimum: 0, description: 'Price of 1M output (completion) tokens.' }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const McpServerConfig = Type.Union([
  Type.Object(
    {
      builtin: Type.String({ minLength: 1 }),
      options: Type.Optional(JsonObject),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      command: Type.String({ minLength: 1 }),
      args: Type.Optional(Type.Array(Type.String())),
      env: Type.Optional(Type.Record(Type.String(), Type.String())),
      cwd: Type.Optional(Type.String()),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      url: Type.String({ minLength: 1 }),
      headers: Type.Optional(Type.Record(Type.String(), Type.String())),
    },
    { additionalProperties: false },
  ),
]);

/** A budget of one node; a team's budget counts every call made inside it (nested teams included). */
export const NodeBudget = Type.Object(
  {
    node: Id,
    maxTokens: Type.Optional(Type.Integer({ minimum: 1 })),
    /** USD, priced by the models' `cost`. */
    maxCost: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  },
  { additionalProperties: false },
);

export const Budgets = Type.Object(
  {
    maxSteps: Type.Optional(Type.Integer({ minimum: 1 })),
    maxTokens: Type.Optional(Type.Integer({ minimum: 1 })),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1 })),
    /** USD for the whole run, priced by the models' `cost`. */
    maxCost: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** A `budget.warning` event is emitted once a token or cost budget is this fraction spent (default 0.8). */
    warnAt: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1 })),
    /** Token and cost budgets per node or team. */
    nodes: Type.Optional(Type.Array(NodeBudget)),
  },
  { additionalProperties: false },
);

export const FlowNode = Type.Object(
  {
    id: Id,
    kind: Type.String({ minLength: 1, maxLength: 64 }),
    parent: Type.Optional(Id),
    label: Type.Optional(Type.String({ maxLength: 200 })),
    position: Position,
    size: Type.Optional(Size),
    config: JsonObject,
  },
  { additionalProperties: false },
);

export const EDGE_KINDS = ['handover', 'tools', 'delegate', 'observe'] as const;
export const EdgeKind = Type.Union(EDGE_KINDS.map((k) => Type.Literal(k)));

export const FlowEdge = Type.Object(
  {
    id: Id,
    kind: EdgeKind,
    source: Id,
    target: Id,
    sourceHandle: Type.Optional(Type.String()),
    targetHandle: Type.Optional(Type.String()),
    label: Type.Optional(Type.String({ maxLength: 200 })),
    config: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);

export const FlowDocument = Type.Object(
  {
    $schema: Type.Optional(Type.String()),
    version: Type.Literal(FLOW_VERSION),
    id: Id,
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Type.String()),
    models: Type.Record(RefName, ModelConfig),
    mcpServers: Type.Optional(Type.Record(RefName, McpServerConfig)),
    budgets: Type.Optional(Budgets),
    nodes: Type.Array(FlowNode),
    edges: Type.Array(FlowEdge),
    metadata: Type.Optional(JsonObject),
  },
  { additionalProperties: false, $id: FLOW_SCHEMA_ID, title: 'Switchboard flow' },
);

export type Flow = Static<typeof FlowDocument>;
export type FlowNodeT = Static<typeof FlowNode>;
export type FlowEdgeT = Static<typeof FlowEdge>;
export type EdgeKindT = (typeof EDGE_KINDS)[number];
export type ModelConfigT = Static<typeof ModelConfig>;
export type McpServerConfigT = Static<typeof McpServerConfig>;
export type BudgetsT = Static<typeof Budgets>;
export type NodeBudgetT = Static<typeof NodeBudget>;
export type PositionT = Static<typeof Position>;

/** Turns a TypeBox schema into plain JSON (drops TypeBox's symbol keys). */
export function toJsonSchema(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}
