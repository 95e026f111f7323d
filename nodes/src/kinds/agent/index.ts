import { Type } from '@sinclair/typebox';
import { Condition } from '@switchboard/schemas/core';
import { defineKind } from '../../kind.js';
import { DELEGATE_OUT, FLOW_IN, FLOW_OUT, OBSERVE_IN, TOOLS_IN } from '../ports.js';
import { agentBehavior } from './behavior.js';

/** One piece of the system prompt; included only when its condition holds. */
export const PromptSegment = Type.Object(
  {
    text: Type.String({
      description: 'Template text: {{task}}, {{summary}}, {{inbox}}, {{last}}, {{state.key}}.',
    }),
    when: Type.Optional(Condition),
  },
  { additionalProperties: false },
);

export const AgentOutput = Type.Union([
  Type.Object({ type: Type.Literal('text') }, { additionalProperties: false }),
  Type.Object(
    {
      type: Type.Literal('json'),
      schema: Type.Record(Type.String(), Type.Unknown(), {
        description: 'JSON Schema the answer must satisfy.',
      }),
      maxRepairs: Type.Optional(
        Type.Integer({ minimum: 0, maximum: 10, description: 'Re-prompts with the error. Default 2.' }),
      ),
    },
    { additionalProperties: false },
  ),
]);

export const AcpBackend = Type.Object(
  {
    type: Type.Literal('acp'),
    command: Type.String({ minLength: 1 }),
    args: Type.Optional(Type.Array(Type.String())),
    env: Type.Optional(Type.Record(Type.String(), Type.String())),
    cwd: Type.Optional(Type.String()),
  },
  {
    additionalProperties: false,
    description: 'An external agent process speaking the Agent Client Protocol over stdio.',
  },
);

/**
 * What happens when an agent that can hand over along several edges ends its turn without
 * calling a handover tool: it is asked again (naming the candidates) up to `reask` times, then
 * control takes `default`; without a default the run fails with `no_handover`.
 */
export const NoHandover = Type.Object(
  {
    reask: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 5,
        description: 'Times the agent is asked again, naming the candidates. Default 1.',
      }),
    ),
    default: Type.Optional(
      Type.String({
        description:
          'Outgoing handover edge (or its target) taken when the agent still chose none, or "done" to end its scope. Without it the run fails with no_handover.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const AgentConfig = Type.Object(
  {
    name: Type.Optional(
      Type.String({ description: 'Shown in transcripts; defaults to the node label or id.' }),
    ),
    role: Type.String({ description: 'One line: what this agent is for. Managers and arbiters read it.' }),
    model: Type.String({ description: "An entry of the flow's models.", default: 'default' }),
    prompt: Type.Array(PromptSegment, { description: 'System prompt segments, joined with blank lines.' }),
    memory: Type.Optional(
      Type.Union([Type.Literal('transcript'), Type.Literal('thread'), Type.Literal('summary')], {
        description:
          'transcript: every message; thread: only its own turns and what was handed to it; summary: the latest summary plus every later message.',
        default: 'transcript',
      }),
    ),
    output: Type.Optional(AgentOutput),
    toolRounds: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 50, description: 'Tool-call rounds per turn. Default 4.' }),
    ),
    maxToolCalls: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1000,
        description:
          'Tool calls run per turn; each call beyond it is refused with a tool.refused event. Default 32.',
      }),
    ),
    retries: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 10,
        description:
          'Whole-turn retries after a failure of the turn (invalid output or tool calls after their repairs, a tool error). A failed model call is retried only within its model budget (models.NAME.maxRetries), never on top of it. Default 1.',
      }),
    ),
    backend: Type.Optional(AcpBackend),
    noHandover: Type.Optional(NoHandover),
  },
  { additionalProperties: false },
);

export const agentKind = defineKind({
  kind: 'agent',
  role: 'agent',
  configSchema: AgentConfig,
  modelRefs: ['model'],
  routeRefs: ['noHandover.default'],
  defaults: () => ({
    role: 'Assistant',
    model: 'default',
    prompt: [{ text: 'You are a helpful assistant. Task: {{task}}' }],
  }),
  ports: [FLOW_IN, FLOW_OUT, TOOLS_IN, OBSERVE_IN, DELEGATE_OUT],
  behavior: agentBehavior,
  display: {
    label: 'Agent',
    color: '#2563eb',
    icon: '◆',
    description: 'An LLM actor with a role, a prompt, memory and tools.',
    category: 'actors',
  },
  summary: (c) => `${c.role} · ${c.model}`,
});
