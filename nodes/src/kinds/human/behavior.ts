/**
 * A person in the loop: asks a question (templated) and waits for the answer through the
 * runtime, which takes it from an answers file, a command, or fails clearly when none can come.
 * In `approve` mode the answer routes along the outgoing edge whose `branch` matches.
 */
import type { Static } from '@sinclair/typebox';
import { renderTemplate } from '../../lib/template.js';
import { type FlowBehavior, NodeError, type StepOutcome } from '../../runtime-api.js';
import type { HumanConfig } from './index.js';

type HumanConfigT = Static<typeof HumanConfig>;

const APPROVE = /^\s*(y|yes|approve|approved|ok|okay|accept|accepted|lgtm|go)\b/i;

/** Reads an approval answer: approve or reject. */
export function verdictOf(answer: string): 'approve' | 'reject' {
  return APPROVE.test(answer.slice(0, 200)) ? 'approve' : 'reject';
}

export const humanBehavior: FlowBehavior<HumanConfigT> = {
  type: 'flow',
  async run(ctx) {
    const cfg = ctx.node.config;
    const cond = ctx.conditions();
    const question = renderTemplate(cfg.question, {
      task: ctx.run.task,
      last: cond.last?.content ?? '',
      state: cond.state,
      input: ctx.run.input,
    });
    const answer = await ctx.ask(question, cfg.options);
    const out: StepOutcome = { message: { content: answer } };
    if (cfg.mode === 'approve') {
      const verdict = verdictOf(answer);
      const edges = ctx.candidates.filter((c) => c.branch === verdict).map((c) => c.edgeId);
      if (edges.length === 0 && ctx.candidates.some((c) => c.branch !== undefined))
        throw new NodeError(
          'no_route',
          `human gate "${ctx.node.id}": no outgoing edge has branch "${verdict}"`,
          1,
          false,
        );
      if (edges.length > 0) out.route = { edges, reason: verdict };
      out.state = { [ctx.node.id]: { verdict, answer } };
    }
    return out;
  },
};
