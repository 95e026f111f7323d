/** The start node: the runtime has already put the input into the transcript; control simply moves on. */
import type { FlowBehavior } from '../../runtime-api.js';

export const startBehavior: FlowBehavior = {
  type: 'flow',
  async run() {
    return {};
  },
};
