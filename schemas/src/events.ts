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

export const EventSchemas = [
  ev('run.started', { flowId: Type.String(), input: Type.Unknown() }),
  ev('run.paused', { reason: Type.Optional(Type.String()) }),
  ev('run.resumed', { fromCheckpoint: Type.Optional(Type.Boolean()) }),
  ev('run.completed', { output: Type.Unknown() }),
  ev('run.failed', { error: ErrorInfo }),
  ev('run.cancelled', { reason: Type.Optional(Type.String()) }),
  ev('run.interrupted', { reason: Type.Optional(Type.String()) }),
  ev('node.started', { nodeId: Type.String() }),
  ev('node.completed', { nodeId: Type.String(), output: Type.Optional(Type.Unknown()) }),
  ev('node.failed', { nodeId: Type.String(), error: ErrorInfo }),
  ev('turn.started', { nodeId: Type.String(), turn: Type.Integer({ minimum: 1 }) }),
  ev('turn.completed', {
    nodeId: Type.String(),
    turn: Type.Integer({ minimum: 1 }),
    usage: Usage,
    model: Type.Optional(Type.String()),
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
  ev('input.requested', { question: Type.String(), options: Type.Optional(Type.Array(Type.String())) }),
  ev('input.received', { answer: Type.String() }),
  ev('budget.exceeded', { budget: Type.String(), limit: Type.Number(), used: Type.Number() }),
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
export type EventError = Static<typeof ErrorInfo>;

/** Events that may be dropped under pressure; everything else is durable. */
export function isDurable(type: RunEventType): boolean {
  return type !== 'model.delta';
}
