/** The end node: the run's answer is the last message (its JSON when structured), the state, or a template. */
import type { Static } from '@sinclair/typebox';
import { renderTemplate } from '../../lib/template.js';
import type { FlowBehavior } from '../../runtime-api.js';
import type { EndConfig } from './index.js';

type EndConfigT = Static<typeof EndConfig>;

export const endBehavior: FlowBehavior<EndConfigT> = {
  type: 'flow',
  async run(ctx) {
    const cfg = ctx.node.config;
    const cond = ctx.conditions();
    switch (cfg.output ?? 'last') {
      case 'state':
        return { output: cond.state };
      case 'template':
        return {
          output: renderTemplate(cfg.template ?? '{{last}}', {
            last: cond.last?.content ?? '',
            state: cond.state,
            task: ctx.run.task,
            input: ctx.run.input,
          }),
        };
      default:
        return { output: cond.last ? (cond.last.json ?? cond.last.content) : '' };
    }
  },
};
