/**
 * Run events. Every step of a run emits one; `seq` is strictly increasing per run, and an
 * event that belongs to a node or edge names it, so the canvas can light it up.
 * `event.schema.json` is generated from these definitions.
 */
import { type Static, type TObject, type TProperties, Type } from '@sinclair/typebox';

export const EVENT_SCHEMA_ID = 'https://switchboard.dev/schemas/event.schema.json';

const Usage = Type.Object({
  promptTokens: Type.Integer({ minimum: 0 }),
  completionTokens: Type.Integer({ minimum: 0 }),
});

const ErrorInfo = Type.Object({
  code: Type.String(),
  message: Type.String(),
  cause: Type.Optional(Type.String()),
  attempts: Type.Optional(Type.Integer({ minimum: 0 })),
});

const base = {
  runId: Type.String({ minLength: 1 }),
  seq: Type.Integer({ minimum: 1 }),
  ts: Type.Number(),
  nodeId: Type.Optional(Type.String()),
  edgeId: Type.Optional(Type.String()),
  /** True when the model replies come from a script, never a real model. */
  scripted: Type.Optional(Type.Boolean()),
  /**
   * True on an event a resumed run emits again: the log already holds it from before the
   * resume (the turns after the checkpoint the run resumed from). Counted once.
   */
  replayed: Type.Optional(Type.Boolean()),
  /** Set on events of a nested (delegated) run. */
  parentRunId: Type.Optional(Type.String()),
  parentCallId: Type.Optional(Type.String()),
};

function ev<T extends string, P extends TProperties>(
  type: T,
  props: P,
): TObject<typeof base & { type: ReturnType<typeof Type.Literal<T>> } & P> {
  return Type.Object(
    { ...base, type: Type.Literal(type), ...props },
    { additionalProperties: true },
  ) as never;
}

const Msg = Type.Object({
  seq: Type.Integer({ minimum: 0 }),
  role: Type.String(),
  author: Type.Optional(Type.String()),
  content: Type.String(),
});

/**
 * One message of a `model.request`. A body is stored once per log: a long body carries `h` (its
 * content address) and its `content` only the first time the log holds it; a short body is
 * always inline. `resolveModelRequest` (model-request.ts) rebuilds the full messages.
 */
const RequestMessage = Type.Object({
  role: Type.Union([
    Type.Literal('system'),
    Type.Literal('user'),
    Type.Literal('assistant'),
    Type.Literal('tool'),
  ]),
  name: Type.Optional(Type.String()),
  toolCallId: Type.Optional(Type.String()),
  toolCalls: Type.Optional(
    Type.Array(Type.Object({ id: Type.String(), name: Type.String(), arguments: Type.String() })),
  ),
  /** Content address of the body (see CONTENT_HASH in model-request.ts). */
  h: Type.Optional(Type.String()),
  content: Type.Optional(Type.String()),
});

/** `count` messages from index `from` of the messages of the earlier `model.request` at `seq`. */
const RequestRef = Type.Object({
  ref: Type.Integer({ minimum: 1 }),
  from: Type.Integer({ minimum: 0 }),
  count: Type.Integer({ minimum: 1 }),
});

const RequestTool = Type.Object({
  name: Type.String(),
  h: Type.String(),
  /** Present the first time the log holds this tool's spec (by `h`). */
  description: Type.Optional(Type.String()),
  parameters: Type.Optional(Type.Unknown()),
});

export const EventSchemas = [
  ev('run.started', {
    flowId: Type.String(),
    input: Type.Unknown(),
    /** A fork: the past run whose state up to this node's turn it started from. */
    forkedFrom: Type.Optional(
      Type.Object({ runId: Type.String(), nodeId: Type.String(), turn: Type.Integer({ minimum: 1 }) }),
    ),
    /**
     * The pins the run started with (pins.ts: each a snapshot of a node's output from a past
     * run), so that a replay or a fork of this run pins the same nodes.
     */
    pins: Type.Optional(Type.Array(Type.Record(Type.String(), Type.Unknown()))),
  }),
  ev('run.paused', { reason: Type.Optional(Type.String()) }),
  ev('run.resumed', { fromCheckpoint: Type.Optional(Type.Boolean()) }),
  ev('run.completed', { output: Type.Unknown() }),
  ev('run.failed', { error: ErrorInfo }),
  ev('run.cancelled', { reason: Type.Optional(Type.String()) }),
  ev('run.interrupted', { reason: Type.Optional(Type.String()) }),
  ev('node.started', { nodeId: Type.String() }),
  ev('node.completed', { nodeId: Type.String(), output: Type.Optional(Type.Unknown()) }),
  /**
   * This turn of the node was not run: its output comes from a pin (the node's turn `fromTurn`
   * in run `fromRun`). No model and no tool is called; the message, decision and handover
   * events that follow replay what that turn produced. `stale`: the node's config has changed
   * since that run (the pin still applies). `toolCalls`: the calls the recorded turn made,
   * which are not repeated.
   */
  ev('node.pinned', {
    nodeId: Type.String(),
    fromRun: Type.String(),
    fromTurn: Type.Integer({ minimum: 1 }),
    stale: Type.Optional(Type.Boolean()),
    toolCalls: Type.Optional(Type.Integer({ minimum: 0 })),
  }),
  ev('node.failed', { nodeId: Type.String(), error: ErrorInfo }),
  ev('turn.started', { nodeId: Type.String(), turn: Type.Integer({ minimum: 1 }) }),
  ev('turn.completed', {
    nodeId: Type.String(),
    turn: Type.Integer({ minimum: 1 }),
    usage: Usage,
    model: Type.Optional(Type.String()),
  }),
  ev('model.request', {
    nodeId: Type.String(),
    /** The run's turn the call belongs to (an observer's call: its subject's turn; 0: none). */
    turn: Type.Integer({ minimum: 0 }),
    /** The node's attempt at this turn (retries and guard rejections add one). */
    attempt: Type.Integer({ minimum: 1 }),
    /** The call's number within the attempt (tool rounds and repairs make more than one). */
    call: Type.Integer({ minimum: 1 }),
    /** The flow's model name, its provider, and the model it names. */
    model: Type.String(),
    provider: Type.Optional(Type.String()),
    modelId: Type.Optional(Type.String()),
    /** Sampling and limit parameters of the model config (temperature, maxTokens, …). */
    params: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    tools: Type.Optional(Type.Array(RequestTool)),
    responseFormat: Type.Optional(
      Type.Object({
        type: Type.Literal('json_schema'),
        name: Type.String(),
        h: Type.String(),
        schema: Type.Optional(Type.Unknown()),
        /** Structured outputs asked for (the provider may not answer outside the schema). */
        strict: Type.Optional(Type.Boolean()),
      }),
    ),
    /** The messages sent, in order; runs of messages an earlier request sent too are references. */
    messages: Type.Array(Type.Union([RequestMessage, RequestRef])),
    /** Names of the `${env:…}` variables whose values were replaced by `[redacted:NAME]`. */
    redacted: Type.Optional(Type.Array(Type.String())),
  }),
  ev('model.delta', { nodeId: Type.String(), text: Type.String() }),
  ev('model.completed', {
    nodeId: Type.String(),
    text: Type.String(),
    usage: Type.Optional(Usage),
    model: Type.Optional(Type.String()),
    finishReason: Type.Optional(Type.String()),
  }),
  ev('model.retry', {
    nodeId: Type.String(),
    attempt: Type.Integer(),
    delayMs: Type.Number(),
    cause: Type.String(),
  }),
  ev('tool.called', { callId: Type.String(), tool: Type.String(), args: Type.Unknown() }),
  ev('tool.result', {
    callId: Type.String(),
    tool: Type.String(),
    result: Type.Unknown(),
    isError: Type.Boolean(),
  }),
  ev('tool.denied', { callId: Type.String(), tool: Type.String(), reason: Type.String() }),
  /** A call the model made that was not run (invalid, over the per-turn cap, no rounds left): why. */
  ev('tool.refused', {
    callId: Type.String(),
    tool: Type.String(),
    error: Type.String(),
    reason: Type.String(),
  }),
  ev('tool.disabled', { tool: Type.String(), reason: Type.String() }),
  ev('handover', { edgeId: Type.String(), from: Type.String(), to: Type.String() }),
  /** An agent that could hand over along several edges chose none: what happened instead. */
  ev('handover.missing', {
    nodeId: Type.String(),
    candidates: Type.Array(Type.String()),
    action: Type.Union([
      Type.Literal('reask'),
      Type.Literal('default'),
      Type.Literal('done'),
      Type.Literal('fail'),
    ]),
    attempt: Type.Optional(Type.Integer({ minimum: 1 })),
  }),
  ev('decision', { choice: Type.Union([Type.String(), Type.Array(Type.String())]), reason: Type.String() }),
  /** The mic (who may speak under a micGrant guard) went to `holder`, given by the decider `by`. */
  ev('mic.granted', { holder: Type.String(), by: Type.String() }),
  ev('mic.released', { holder: Type.String(), reason: Type.String() }),
  ev('observer.fired', {
    observer: Type.String(),
    target: Type.Optional(Type.String()),
    action: Type.String(),
    detail: Type.Optional(Type.Unknown()),
  }),
  ev('message', { message: Msg }),
  ev('input.requested', {
    question: Type.String(),
    options: Type.Optional(Type.Array(Type.String())),
    /**
     * An MCP server's elicitation form (a flat JSON Schema object) asked during a tool call:
     * the answer is the content as JSON text, or `decline` / `cancel`.
     */
    form: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  }),
  ev('input.received', { answer: Type.String() }),
  ev('budget.exceeded', {
    budget: Type.String(),
    limit: Type.Number(),
    used: Type.Number(),
    /** Whose budget: the run's (absent), a node's or a team's (named by `nodeId`). */
    scope: Type.Optional(Type.String()),
  }),
  ev('budget.warning', {
    budget: Type.String(),
    limit: Type.Number(),
    used: Type.Number(),
    /** The configured fraction (`budgets.warnAt`) that was reached. */
    fraction: Type.Number(),
    scope: Type.Optional(Type.String()),
  }),
  ev('log', { level: Type.String(), text: Type.String() }),
] as const;

export const RUN_EVENT_TYPES = EventSchemas.map((s) => (s.properties.type as { const: string }).const);

export const RunEventSchema = Type.Union([...EventSchemas], {
  $id: EVENT_SCHEMA_ID,
  title: 'Switchboard run event',
});

export type RunEvent = Static<typeof RunEventSchema>;
export type RunEventType = RunEvent['type'];
export type EventOf<T extends RunEventType> = Extract<RunEvent, { type: T }>;
/** An event before the store stamps `runId`, `seq` and `ts`. */
export type EventInput = RunEvent extends infer E
  ? E extends RunEvent
    ? Omit<E, 'runId' | 'seq' | 'ts'>
    : never
  : never;
export type TokenUsage = Static<typeof Usage>;
export type RequestMessageT = Static<typeof RequestMessage>;
export type RequestRefT = Static<typeof RequestRef>;
export type RequestToolT = Static<typeof RequestTool>;
export type EventError = Static<typeof ErrorInfo>;

/** Events that may be dropped under pressure; everything else is durable. */
export function isDurable(type: RunEventType): boolean {
  return type !== 'model.delta';
}
