/**
 * Team policies the runtime consults: whether a team activation must stop (max turns, max
 * tokens, a phrase, a timeout), and in group chats who speaks next (round robin over the
 * members, or an LLM manager that reads their roles). Decider-driven selection and FSM
 * transitions run the decider node itself, so they live in the runtime's control loop.
 */
import type { Static } from '@sinclair/typebox';
import { type ChatMessage, NodeError, type TeamBehavior } from '../../runtime-api.js';
import { parseJsonOutput } from '../agent/behavior.js';
import type { TeamConfig } from './index.js';

type TeamConfigT = Static<typeof TeamConfig>;

const MANAGER_SCHEMA = {
  type: 'object',
  properties: { speaker: { type: 'string' }, reason: { type: 'string' } },
  required: ['speaker', 'reason'],
};

export const teamBehavior: TeamBehavior<TeamConfigT> = {
  type: 'team',
  terminated(config, stats, last, now) {
    const t = config.termination;
    if (!t) return undefined;
    if (t.maxTurns !== undefined && stats.turns >= t.maxTurns) return `maxTurns ${t.maxTurns} reached`;
    if (t.maxTokens !== undefined && stats.tokens >= t.maxTokens) return `maxTokens ${t.maxTokens} reached`;
    if (t.phrase !== undefined && last && stats.turns > 0 && last.content.includes(t.phrase))
      return `phrase "${t.phrase}" said by ${last.author}`;
    if (t.timeoutMs !== undefined && now - stats.startedAt >= t.timeoutMs) return `timeout ${t.timeoutMs} ms`;
    return undefined;
  },
  async nextSpeaker(ctx) {
    const cfg = ctx.node.config;
    const speakers = ctx.members.filter((m) => m.kind !== 'decider');
    if (speakers.length === 0) return { done: true, reason: 'no members can speak' };
    if ((cfg.speaker?.strategy ?? 'roundRobin') === 'roundRobin') {
      const start = cfg.entry
        ? Math.max(
            0,
            speakers.findIndex((m) => m.id === cfg.entry),
          )
        : 0;
      const m = speakers[(start + ctx.stats.spoken) % speakers.length]!;
      return { speaker: m.id, reason: `round robin #${ctx.stats.spoken + 1}` };
    }
    // An LLM manager reads the members' roles and the conversation and names the next speaker.
    const model = ctx.model(cfg.speaker?.model);
    const roster = speakers.map((m) => `- ${m.id}: ${m.label}${m.role ? ` — ${m.role}` : ''}`).join('\n');
    const messages: ChatMessage[] = [
      {
        role: 'system',
        content: `${cfg.speaker?.prompt ?? 'You manage a group chat and pick who speaks next.'}\n\nMembers:\n${roster}\n\nAnswer with JSON {"speaker": "<member id>" or "done", "reason": "why"}.`,
      },
    ];
    for (const m of ctx.run.view('summary').slice(-20))
      messages.push({ role: 'user', content: `[${m.author}] ${m.content}` });
    if (messages.length === 1) messages.push({ role: 'user', content: ctx.run.task });
    for (let attempt = 0; attempt < 3; attempt++) {
      const reply = await model.complete({
        messages,
        jsonSchema: { name: 'next_speaker', schema: MANAGER_SCHEMA },
      });
      const parsed = parseJsonOutput(reply.text);
      const v = parsed.ok ? (parsed.value as { speaker?: unknown; reason?: unknown }) : undefined;
      const reason = typeof v?.reason === 'string' ? v.reason : '';
      if (v?.speaker === 'done') return { done: true, reason };
      const m = speakers.find((s) => s.id === v?.speaker);
      if (m) return { speaker: m.id, reason };
      ctx.emit({ type: 'log', level: 'warn', text: `manager of ${ctx.node.id}: invalid speaker` });
      messages.push({ role: 'assistant', content: reply.text.slice(0, 2000) });
      messages.push({
        role: 'user',
        content: `Invalid speaker. Choose one of: ${speakers.map((s) => s.id).join(', ')}, or done.`,
      });
    }
    throw new NodeError(
      'invalid_choice',
      `the manager of team "${ctx.node.id}" named no valid speaker after 3 attempts`,
      3,
    );
  },
};
