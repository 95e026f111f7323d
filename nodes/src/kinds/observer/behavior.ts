/**
 * Observers run before or after the turns of the agent or team they observe:
 * - `summarizer`: every N new messages, condenses the previous summary and every message after
 *   it into a new summary that records the last seq it covers (nothing is ever dropped: a message
 *   is either covered or after `coversSeq`, see lib/memory.ts);
 * - `guard`: deterministic checks (JSON Schema, allow/deny patterns, max length, rate per minute,
 *   mic grant). `after` (default) checks the message a turn produced before it is committed, and
 *   a violation retries, blocks or escalates; `before` checks the turn before the model is called
 *   (no tokens are spent on a turn that would be refused) against what the agent is about to
 *   read, and a violation blocks or escalates (there is no message yet to retry); `both` is one
 *   gateway for both sides of a turn: the speaker (mic, rate) before the model is called, the
 *   message (length, patterns, schema) after it;
 * - `reflection`: when its rule holds after a turn, a reminder goes into the agent's inbox.
 */
import type { Static } from '@sinclair/typebox';
import { type ConditionT, checkAgainstSchema } from '@switchboard/schemas/core';
import { evaluateCondition } from '../../lib/condition.js';
import { messagesToSummarize } from '../../lib/memory.js';
import { boundedTest } from '../../lib/regex.js';
import { renderTemplate } from '../../lib/template.js';
import type { ObserverBehavior, ObserverContext, ObserverOutcome } from '../../runtime-api.js';
import { parseJsonOutput } from '../agent/behavior.js';
import type { ObserverConfig } from './index.js';

type ObserverConfigT = Static<typeof ObserverConfig>;

const DEFAULT_SUMMARY_PROMPT =
  'Condense the previous summary and the new messages into one updated summary. Keep decisions, open questions and facts; drop chatter.';

async function summarize(ctx: ObserverContext<ObserverConfigT>): Promise<ObserverOutcome> {
  const cfg = ctx.node.config;
  const previous = ctx.run.summary();
  const fresh = messagesToSummarize(ctx.run.transcript, previous);
  if (fresh.length < (cfg.every ?? 6)) return { action: 'none' };
  const body = fresh.map((m) => `[${m.seq}] ${m.author}: ${m.content}`).join('\n');
  const reply = await ctx.model(cfg.model).complete({
    messages: [
      { role: 'system', content: cfg.prompt ?? DEFAULT_SUMMARY_PROMPT },
      { role: 'user', content: `Previous summary:\n${previous?.text ?? '(none)'}\n\nNew messages:\n${body}` },
    ],
  });
  return {
    action: 'summary',
    summary: { text: reply.text, coversSeq: fresh[fresh.length - 1]!.seq },
    usage: reply.usage,
  };
}

/**
 * The first rule a turn breaks, or undefined. A `both` guard checks the speaker (mic, rate)
 * before the turn and the message after it; `before` and `after` guards check everything they can.
 */
export function guardViolation(ctx: ObserverContext<ObserverConfigT>): string | undefined {
  const cfg = ctx.node.config;
  const msg = ctx.pending;
  const both = cfg.when === 'both';
  if (!both || ctx.phase === 'before') {
    if (cfg.micGrant && ctx.run.mic !== ctx.subject)
      return ctx.run.mic
        ? `"${ctx.subject}" does not hold the mic ("${ctx.run.mic}" does)`
        : `"${ctx.subject}" was not granted the mic`;
    if (cfg.ratePerMinute !== undefined && ctx.recentBySubject + 1 > cfg.ratePerMinute)
      return `"${ctx.subject}" exceeded ${cfg.ratePerMinute} messages per minute`;
  }
  if (!msg || (both && ctx.phase === 'before')) return undefined;
  if (cfg.maxLength !== undefined && msg.content.length > cfg.maxLength)
    return `the message is ${msg.content.length} characters long; the limit is ${cfg.maxLength}`;
  if (cfg.deny)
    for (const p of cfg.deny)
      if (boundedTest(p, msg.content, true)) return `the message matches the denied pattern "${p}"`;
  if (cfg.allow && cfg.allow.length > 0 && !cfg.allow.some((p) => boundedTest(p, msg.content, true)))
    return 'the message matches none of the allowed patterns';
  if (cfg.schema) {
    const value =
      msg.json !== undefined ? { ok: true as const, value: msg.json } : parseJsonOutput(msg.content);
    if (!value.ok) return 'the message is not JSON';
    const check = checkAgainstSchema(cfg.schema, value.value);
    if (!check.valid) return `the message does not match the schema: ${check.errors.slice(0, 3).join('; ')}`;
  }
  return undefined;
}

export const observerBehavior: ObserverBehavior<ObserverConfigT> = {
  type: 'observer',
  runsAt(config, phase) {
    const when = config.when ?? 'after';
    return when === phase || (when === 'both' && config.type === 'guard');
  },
  async observe(ctx) {
    const cfg = ctx.node.config;
    switch (cfg.type) {
      case 'summarizer':
        return summarize(ctx);
      case 'guard': {
        const reason = guardViolation(ctx);
        if (!reason) return { action: 'none' };
        const v: ObserverOutcome = {
          action: 'violation',
          reason,
          onViolation: cfg.onViolation ?? 'retry',
          maxRetries: cfg.maxRetries ?? 2,
        };
        if (cfg.escalateTo !== undefined) v.escalateTo = cfg.escalateTo;
        return v;
      }
      case 'reflection': {
        if (
          !cfg.rule ||
          !evaluateCondition(
            cfg.rule as ConditionT,
            ctx.conditions({ turn: { toolCalls: ctx.toolCalls, node: ctx.subject } }),
          )
        )
          return { action: 'none' };
        const cond = ctx.conditions();
        return {
          action: 'remind',
          text: renderTemplate(cfg.message ?? 'Reminder: check your work against the task.', {
            task: ctx.run.task,
            last: cond.last?.content ?? '',
            state: cond.state,
          }),
        };
      }
    }
  },
};
