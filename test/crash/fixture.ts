/**
 * The battery's flow and its non-idempotent tool. The flow: a planner that calls the tool, a
 * group chat (a loop of turns between alice and bob, alice calling the tool), a closer that
 * calls it again. Replies take a few ms, the tool takes longer, so kills land everywhere —
 * including while a tool call is in flight.
 */
import { appendFileSync } from 'node:fs';
import type { Flow } from '@switchboard/schemas';
import { MemoryToolHost } from '../../runtime/src/engine/testing/index.js';
import { batteryFlow } from '../../runtime/src/engine/testing/kill-flows.js';
import type { ToolHost } from '../../runtime/src/tools/types.js';

export { batteryFlow, FINAL_OUTPUT, parallelSlowFlow } from '../../runtime/src/engine/testing/kill-flows.js';

/** `count` appends one line per execution to `file`: `<runId> <k>`. Not idempotent, on purpose. */
export function countingTools(file: string, delayMs = 25): (run: { flow: Flow }) => ToolHost {
  return ({ flow: f }) =>
    new MemoryToolHost(f, {
      fixture: {
        count: {
          description: 'Counts one execution (not idempotent)',
          inputSchema: { type: 'object', properties: { k: { type: 'string' } } },
          run: async (args, { host }) => {
            await new Promise((r) => setTimeout(r, delayMs / 2));
            appendFileSync(file, `${host.runId} ${String(args.k)}\n`);
            await new Promise((r) => setTimeout(r, delayMs / 2));
            return 'counted';
          },
        },
      },
    });
}

/**
 * The battery's flow with its k-th reply (1-based; the flow asks for them in script order) taking
 * `ms`: a window, wide even on a loaded machine, in which that model call is in flight.
 */
export function slowReply(latencyMs: number, k: number, ms: number): Flow {
  const f = batteryFlow(latencyMs);
  const model = f.models.default as { script: Array<Record<string, unknown>> };
  model.script = model.script.map((e, i) => (i === k - 1 ? { ...e, latencyMs: ms } : e));
  return f;
}
