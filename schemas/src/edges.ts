/** Config schemas of the four edge kinds. Edges are not pluggable, so they live here. */
import { type Static, Type } from '@sinclair/typebox';

export const HandoverContext = Type.Object(
  {
    mode: Type.Union([
      Type.Literal('none'),
      Type.Literal('lastN'),
      Type.Literal('summary'),
      Type.Literal('state'),
      Type.Literal('all'),
    ]),
    n: Type.Optional(Type.Integer({ minimum: 1 })),
    keys: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false },
);

export const HandoverConfig = Type.Object(
  {
    /** What context goes along to the receiver. Default: the whole transcript is visible. */
    context: Type.Optional(HandoverContext),
    /** Becomes the receiver's first inbox item; may use `{{task}}`, `{{last}}`, `{{state.x}}`. */
    briefing: Type.Optional(Type.String()),
    /** Shown to an LLM decider or as a handover tool description. */
    description: Type.Optional(Type.String()),
    /** For FSM teams: this transition is taken when a member escalates after N failures. */
    escalation: Type.Optional(Type.Boolean()),
    /** Which branch of a human approval gate this edge is (`approve` / `reject`). */
    branch: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const ToolsConfig = Type.Object(
  {
    /** Narrows the grant to these tool names (after the tool node's own filter). */
    allow: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false },
);

export const DelegateConfig = Type.Object(
  {
    toolName: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' })),
    description: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const ObserveConfig = Type.Object({}, { additionalProperties: false });

export const EDGE_CONFIG_SCHEMAS = {
  handover: HandoverConfig,
  tools: ToolsConfig,
  delegate: DelegateConfig,
  observe: ObserveConfig,
} as const;

export type HandoverConfigT = Static<typeof HandoverConfig>;
export type ToolsConfigT = Static<typeof ToolsConfig>;
export type DelegateConfigT = Static<typeof DelegateConfig>;
