/**
 * Deciders pick among the candidate edges the runtime offers (a decider's own outgoing edges,
 * or in an FSM team the current state's drawn transitions): ordered declarative rules with a
 * default, round robin, or an LLM arbiter answering `{ choice, reason }` through structured
 * output, re-asked when it names something that is not a candidate.
 */
import type { Static } from '@sinclair/typebox';
import type { ConditionT } from '@switchboard/schemas';
import { evaluateCondition } from '../../lib/condition.js';
import {
  type Candidate,
  type ChatMessage,
  type FlowBehavior,
  type NodeContext,
  NodeError,
  type StepOutcome,
} from '../../runtime-api.js';
import { parseJsonOutput } from '../agent/behavior.js';
import type { DeciderConfig } from './index.js';

type DeciderConfigT = Static<typeof DeciderConfig>;
const DONE = 'done';

/** Resolves rule targets (edge ids or target node ids) to candidate edges; `done` passes through. */
export function resolveTargets(
  to: string | readonly string[],
  candidates: readonly Candidate[],
): string[] | 'done' | undefined {
  const list = typeof to === 'string' ? [to] : to;
  if (list.length === 1 && list[0] === DONE) return DONE;
  const edges: string[] = [];
  for (const t of list) {
    const c = candidates.find((x) => x.edgeId === t) ?? candidates.find((x) => x.target === t);
    if (!c) return undefined; // a rule naming an illegal transition does not apply here
    if (!edges.includes(c.edgeId)) edges.push(c.edgeId);
  }
  return edges.length > 0 ? edges : undefined;
}

function outcome(ctx: NodeContext<DeciderConfigT>, choice: string[] | 'done', reason: string): StepOutcome {
  ctx.emit({
    type: 'decision',
    choice: choice === DONE ? DONE : choice.length === 1 ? choice[0]! : choice,
    reason,
  });
  if (choice === DONE) return { route: { done: true, reason } };
  const out: StepOutcome = { route: { edges: choice, reason } };
  if (ctx.node.config.grantMic) {
    const target = ctx.candidates.find((c) => c.edgeId === choice[0])?.target;
    if (target) out.grantMic = target;
  }
  return out;
}

function decideByRules(ctx: NodeContext<DeciderConfigT>): StepOutcome {
  const cfg = ctx.node.config;
  const cond = ctx.conditions();
  for (const [i, rule] of (cfg.rules ?? []).entries()) {
    if (!evaluateCondition(rule.when as ConditionT, cond)) continue;
    const r = resolveTargets(rule.to, ctx.candidates);
    if (r === undefined) continue;
    return outcome(ctx, r, rule.reason ?? `rule ${i + 1} matched`);
  }
  if (cfg.default !== undefined) {
    const r = resolveTargets(cfg.default, ctx.candidates);
    if (r !== undefined) return outcome(ctx, r, 'default');
  }
  if (ctx.candidates.length === 1) return outcome(ctx, [ctx.candidates[0]!.edgeId], 'the only transition');
  throw new NodeError(
    'no_route',
    `decider "${ctx.node.id}": no rule matched and there is no usable default`,
    1,
    false,
  );
}

function decideRoundRobin(ctx: NodeContext<DeciderConfigT>): StepOutcome {
  if (ctx.candidates.length === 0) return outcome(ctx, DONE, 'no candidates');
  const i = (ctx.memo.get('rr') as number | undefined) ?? 0;
  ctx.memo.set('rr', i + 1);
  return outcome(ctx, [ctx.candidates[i % ctx.candidates.length]!.edgeId], `round robin #${i + 1}`);
}

/**
 * The arbiter's answer format: `choice` is an `enum` of the candidate edge ids (and "done" when
 * allowed), or an array of them for multi-choice, so a provider with structured outputs cannot
 * answer outside the set. Written for strict mode (every property required, no others, only
 * keywords strict providers take): an empty or repeated list is caught by the check that follows,
 * which also re-asks providers without structured outputs.
 */
export function arbiterSchema(
  candidates: readonly Candidate[],
  o: { allowMultiple?: boolean | undefined; allowDone?: boolean | undefined },
): Record<string, unknown> {
  const ids = candidates.map((c) => c.edgeId);
  const one = { type: 'string', enum: o.allowDone ? [...ids, DONE] : ids };
  const choice = o.allowMultiple
    ? {
        anyOf: [one, { type: 'array', items: { type: 'string', enum: ids } }],
      }
    : one;
  return {
    type: 'object',
    properties: { choice, reason: { type: 'string' } },
    required: ['choice', 'reason'],
    additionalProperties: false,
  };
}

async function decideByLlm(ctx: NodeContext<DeciderConfigT>): Promise<StepOutcome> {
  const cfg = ctx.node.config;
  const model = ctx.model(cfg.model);
  const lines = ctx.candidates.map(
    (c) =>
      `- "${c.edgeId}": to ${c.label}${c.role ? ` (${c.role})` : ''}${c.description ? ` — ${c.description}` : ''}`,
  );
  const system = [
    cfg.prompt ?? 'You route the conversation to the right next step.',
    `Candidates:\n${lines.join('\n')}`,
    cfg.allowDone ? 'Answer "done" when the work is finished.' : '',
    `Answer with JSON {"choice": ${cfg.allowMultiple ? 'one id or a list of ids' : 'one id'}, "reason": "why"}.`,
  ]
    .filter(Boolean)
    .join('\n\n');
  const messages: ChatMessage[] = [{ role: 'system', content: system }];
  // The room as summary memory gives it: the latest summary, then every message after it (the
  // last 20), so what the summary covers is not lost to the arbiter.
  const summary = ctx.run.summary();
  if (summary)
    messages.push({ role: 'user', content: `Summary of the conversation so far:\n${summary.text}` });
  const view = ctx.run.view('summary');
  for (const m of view.slice(-20)) messages.push({ role: 'user', content: `[${m.author}] ${m.content}` });
  if (messages.length === 1) messages.push({ role: 'user', content: ctx.run.task });
  const maxRetries = cfg.maxRetries ?? 2;
  const schema = arbiterSchema(ctx.candidates, cfg);
  for (let attempt = 0; ; attempt++) {
    const reply = await model.complete({ messages, jsonSchema: { name: 'decision', schema, strict: true } });
    const parsed = parseJsonOutput(reply.text);
    let problem: string;
    if (parsed.ok && parsed.value && typeof parsed.value === 'object') {
      const v = parsed.value as { choice?: unknown; reason?: unknown };
      const reason = typeof v.reason === 'string' ? v.reason : '';
      const raw = Array.isArray(v.choice) ? v.choice : [v.choice];
      const ids = raw.filter((x): x is string => typeof x === 'string');
      if (ids.length === 1 && ids[0] === DONE && cfg.allowDone) return outcome(ctx, DONE, reason);
      const r = ids.length === raw.length && ids.length > 0 ? resolveTargets(ids, ctx.candidates) : undefined;
      if (r !== undefined && r !== DONE && (r.length === 1 || cfg.allowMultiple))
        return outcome(ctx, r, reason);
      problem = `"${String(raw.join(', ')).slice(0, 100)}" is not ${cfg.allowMultiple ? 'a list of candidates' : 'one of the candidates'}: ${ctx.candidates.map((c) => c.edgeId).join(', ')}${cfg.allowDone ? ', done' : ''}`;
    } else problem = 'the answer is not a JSON object with "choice" and "reason"';
    ctx.emit({ type: 'log', level: 'warn', text: `decider ${ctx.node.id}: invalid choice (${problem})` });
    if (attempt >= maxRetries)
      throw new NodeError(
        'invalid_choice',
        `decider "${ctx.node.id}" made no valid choice after ${attempt + 1} attempts: ${problem}`,
        attempt + 1,
      );
    messages.push({ role: 'assistant', content: reply.text.slice(0, 2000) });
    messages.push({ role: 'user', content: `Invalid choice: ${problem}. Choose again.` });
  }
}

export const deciderBehavior: FlowBehavior<DeciderConfigT> = {
  type: 'flow',
  async run(ctx) {
    switch (ctx.node.config.strategy) {
      case 'llm':
        return decideByLlm(ctx);
      case 'roundRobin':
        return decideRoundRobin(ctx);
      default:
        return decideByRules(ctx);
    }
  },
};
