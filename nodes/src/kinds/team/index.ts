import { type Static, Type } from '@sinclair/typebox';
import { defineKind } from '../../kind.js';
import { FLOW_IN, FLOW_OUT, OBSERVE_IN } from '../ports.js';
import { teamBehavior } from './behavior.js';

export const Termination = Type.Object(
  {
    maxTurns: Type.Optional(Type.Integer({ minimum: 1 })),
    maxTokens: Type.Optional(Type.Integer({ minimum: 1 })),
    phrase: Type.Optional(
      Type.String({ minLength: 1, description: 'The team stops when a message contains it.' }),
    ),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1 })),
    decider: Type.Optional(
      Type.String({ description: 'A decider member whose "done" verdict ends the team.' }),
    ),
  },
  { additionalProperties: false },
);

export const SpeakerSelection = Type.Object(
  {
    strategy: Type.Union([Type.Literal('roundRobin'), Type.Literal('llm'), Type.Literal('decider')], {
      default: 'roundRobin',
    }),
    model: Type.Optional(Type.String({ description: 'The manager model for strategy "llm".' })),
    decider: Type.Optional(Type.String({ description: 'The decider member for strategy "decider".' })),
    prompt: Type.Optional(Type.String({ description: 'Extra instructions for the LLM manager.' })),
  },
  { additionalProperties: false },
);

export const TeamConfig = Type.Object(
  {
    mode: Type.Union([Type.Literal('handover'), Type.Literal('groupChat'), Type.Literal('fsm')], {
      description:
        'handover: control follows edges; groupChat: shared transcript, next speaker chosen; fsm: members are states, a decider is the transition function.',
      default: 'handover',
    }),
    entry: Type.Optional(Type.String({ description: 'The member that runs first.' })),
    speaker: Type.Optional(SpeakerSelection),
    decider: Type.Optional(
      Type.String({ description: 'fsm: the decider member that picks each transition.' }),
    ),
    maxFailures: Type.Optional(
      Type.Integer({ minimum: 1, description: 'fsm: failures of one member before escalation. Default 3.' }),
    ),
    termination: Type.Optional(Termination),
  },
  { additionalProperties: false },
);

type TeamConfigT = Static<typeof TeamConfig>;

function terminates(config: Record<string, unknown>): boolean {
  const c = config as TeamConfigT;
  const t = c.termination;
  if (t && Object.values(t).some((v) => v !== undefined)) return true;
  // A decider that picks every FSM transition, or a manager/decider that picks every speaker,
  // can end the team itself ("done"), so a cycle inside such a team is not endless.
  if (c.mode === 'fsm' && c.decider !== undefined) return true;
  if (c.mode === 'groupChat' && (c.speaker?.strategy === 'llm' || c.speaker?.strategy === 'decider'))
    return true;
  return false;
}

export const teamKind = defineKind({
  kind: 'team',
  role: 'team',
  configSchema: TeamConfig,
  modelRefs: ['speaker.model'],
  nodeRefs: ['entry', 'decider', 'speaker.decider', 'termination.decider'],
  stopsCycles: terminates,
  defaults: () => ({ mode: 'handover' as const, termination: { maxTurns: 20 } }),
  ports: [FLOW_IN, FLOW_OUT, OBSERVE_IN],
  behavior: teamBehavior,
  display: {
    label: 'Team',
    color: '#475569',
    icon: '▣',
    description: 'A group of agents, deciders and sub-teams run by handover, group chat or a state machine.',
    category: 'actors',
    group: true,
    size: { width: 520, height: 320 },
  },
  summary: (c) => {
    const t = c.termination ?? {};
    const parts = Object.entries(t).map(([k, v]) => `${k} ${v}`);
    return `${c.mode}${parts.length ? ` · ${parts.join(', ')}` : ''}`;
  },
});
