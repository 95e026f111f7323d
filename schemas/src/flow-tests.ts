/**
 * Flow tests (`*.tests.json`): cases that run a flow on an input with given model replies and
 * human answers, and assert on what happened. The TypeBox definition is the single source of
 * truth; `flow-tests.schema.json` is generated from it. Only the shape is checked here; checks
 * that need the flow (node and edge ids, regexes, cassette files) are the runner's.
 */
import { type Static, Type } from '@sinclair/typebox';
import { Id, RefName } from './flow.js';

export const FLOW_TESTS_SCHEMA_ID = 'https://switchboard.dev/schemas/flow-tests.schema.json';

const matcherProps = {
  equals: Type.Optional(
    Type.Unknown({ description: 'Exactly this value (text, or JSON compared structurally).' }),
  ),
  contains: Type.Optional(Type.String({ description: 'The text contains this.' })),
  matches: Type.Optional(
    Type.String({ minLength: 1, description: 'A regular expression the text matches.' }),
  ),
  flags: Type.Optional(Type.String({ pattern: '^[imsu]*$', description: 'Flags of `matches`.' })),
  schema: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: 'A JSON Schema the (JSON) value satisfies.' }),
  ),
};

export const OutputMatcher = Type.Object(matcherProps, { additionalProperties: false, minProperties: 1 });

export const NodeOutputAssertion = Type.Object(
  {
    node: Id,
    /** Which output of the node when it ran more than once: 1-based, negative from the end (default -1, the last). */
    turn: Type.Optional(Type.Integer()),
    ...matcherProps,
  },
  { additionalProperties: false },
);

export const EdgesAssertion = Type.Object(
  {
    order: Type.Optional(Type.Array(Id, { description: 'Exactly these handovers, in this order.' })),
    includes: Type.Optional(Type.Array(Id, { description: 'Each of these edges is taken, in any order.' })),
    set: Type.Optional(Type.Array(Id, { description: 'The set of edges taken is exactly this.' })),
    excludes: Type.Optional(Type.Array(Id, { description: 'None of these edges is taken.' })),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const EventAssertion = Type.Object(
  {
    type: Type.String({ minLength: 1 }),
    /** Default true: such an event is present; false: no such event. */
    present: Type.Optional(Type.Boolean()),
    node: Type.Optional(Id),
    /** Fields the event has, compared structurally (an object field matches a subset). */
    fields: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    /** Exactly this many such events. */
    count: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);

export const CaseExpectations = Type.Object(
  {
    status: Type.Optional(
      Type.Union([Type.Literal('completed'), Type.Literal('failed'), Type.Literal('cancelled')]),
    ),
    /** The error code of a failed run. */
    error: Type.Optional(Type.String({ minLength: 1 })),
    edges: Type.Optional(EdgesAssertion),
    output: Type.Optional(OutputMatcher),
    nodes: Type.Optional(Type.Array(NodeOutputAssertion)),
    maxTurns: Type.Optional(Type.Integer({ minimum: 0 })),
    maxTokens: Type.Optional(Type.Integer({ minimum: 0 })),
    events: Type.Optional(Type.Array(EventAssertion)),
  },
  { additionalProperties: false },
);

export const FlowTestCase = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    input: Type.Unknown(),
    answers: Type.Optional(
      Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())]), {
        description: 'Answers for human nodes, by node id.',
      }),
    ),
    /** Scripted replies (scripted-model entries, each may name its `node`) for every model of the flow. */
    replies: Type.Optional(Type.Array(Type.Unknown())),
    /** Scripted replies per model name of the flow; models not named keep their definition. */
    models: Type.Optional(Type.Record(RefName, Type.Array(Type.Unknown()))),
    /** A cassette file (relative to the tests file): model replies and tool results come from it. */
    cassette: Type.Optional(Type.String({ minLength: 1 })),
    expect: CaseExpectations,
  },
  { additionalProperties: false },
);

export const FlowTestsDocument = Type.Object(
  {
    $schema: Type.Optional(Type.String()),
    version: Type.Literal(1),
    /** The flow file, relative to the tests file. */
    flow: Type.String({ minLength: 1 }),
    cases: Type.Array(FlowTestCase, { minItems: 1 }),
  },
  { additionalProperties: false, $id: FLOW_TESTS_SCHEMA_ID, title: 'Switchboard flow tests' },
);

export type FlowTests = Static<typeof FlowTestsDocument>;
export type FlowTestCaseT = Static<typeof FlowTestCase>;
export type CaseExpectationsT = Static<typeof CaseExpectations>;
export type OutputMatcherT = Static<typeof OutputMatcher>;
export type NodeOutputAssertionT = Static<typeof NodeOutputAssertion>;
export type EventAssertionT = Static<typeof EventAssertion>;
