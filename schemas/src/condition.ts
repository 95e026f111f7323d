/**
 * Declarative conditions: operators over paths, never code. Used by rule deciders, reflection
 * observers, prompt segments and guards. Paths read a small, documented context:
 * `last.content`, `last.author`, `last.json.<path>`, `state.<path>`, `counters.turns`,
 * `counters.failures.<nodeId>`, `turn.toolCalls`, `input`.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';

export const COMPARE_OPS = [
  'eq',
  'ne',
  'gt',
  'gte',
  'lt',
  'lte',
  'contains',
  'notContains',
  'regex',
  'exists',
  'empty',
] as const;

export const Comparison = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 200 }),
    op: Type.Union(COMPARE_OPS.map((o) => Type.Literal(o))),
    value: Type.Optional(Type.Unknown()),
    ignoreCase: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const Condition: TSchema = Type.Recursive(
  (Self) =>
    Type.Union([
      Comparison,
      Type.Object({ all: Type.Array(Self) }, { additionalProperties: false }),
      Type.Object({ any: Type.Array(Self) }, { additionalProperties: false }),
      Type.Object({ not: Self }, { additionalProperties: false }),
      Type.Object({ always: Type.Literal(true) }, { additionalProperties: false }),
    ]),
  { $id: 'Condition' },
);

export type ComparisonT = Static<typeof Comparison>;
export type ConditionT =
  | ComparisonT
  | { all: ConditionT[] }
  | { any: ConditionT[] }
  | { not: ConditionT }
  | { always: true };
