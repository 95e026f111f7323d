import { describe, expect, it } from 'vitest';
import { runFlow } from './index.js';
import { edge, flow, node } from './testing/index.js';
import type { RunCheckpoint } from './types.js';

const asking = () =>
  flow(
    [node('start', 'start'), node('q', 'human', { mode: 'ask', question: 'Which?' }), node('end', 'end')],
    [edge('start', 'q'), edge('q', 'end')],
    [],
  );

describe('a host ends a run by name (the fail command)', () => {
  it('a waiting human node: the run fails with the code and message given, nothing follows', async () => {
    const types: string[] = [];
    const h = runFlow(asking(), 'x', {
      onEvent: (e) => {
        types.push(e.type);
        if (e.type === 'input.requested')
          setTimeout(
            () => h.send({ type: 'fail', code: 'human_declined', message: 'the person declined' }),
            5,
          );
      },
    });
    const r = await h.result;
    expect(r).toMatchObject({
      status: 'failed',
      error: { code: 'human_declined', message: 'the person declined' },
    });
    expect(types.at(-1)).toBe('run.failed');
    expect(types).not.toContain('input.received');
  });

  it('an answer that arrives while the waiting checkpoint is written is taken, not lost', async () => {
    let asked = false;
    let held = false;
    const h = runFlow(asking(), 'x', {
      // The checkpoint of the waiting node takes a while; the answer comes in meanwhile.
      checkpoint: (_cp: RunCheckpoint) => {
        if (!asked || held) return undefined;
        held = true;
        return new Promise<void>((resolve) =>
          setTimeout(() => {
            h.send({ type: 'answer', nodeId: 'q', answer: 'this one' });
            resolve();
          }, 5),
        );
      },
      onEvent: (e) => {
        if (e.type === 'input.requested') asked = true;
      },
    });
    const r = await Promise.race([
      h.result,
      new Promise((resolve) => setTimeout(() => resolve('stuck'), 2000)),
    ]);
    expect(r).toMatchObject({ status: 'completed', output: 'this one' });
  });
});
