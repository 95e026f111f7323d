/**
 * A server restarted while a tool call waits for a person's answer to its MCP elicitation: the
 * wait cut no checkpoint inside the agent's step, so the run resumes from the one before it and
 * replays the step whole — its model replies served once each, its tool call made again and
 * answered from the journal, never run again.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import { agent, edge, flow, MemoryToolHost, node } from '../runtime/src/engine/testing/index.js';
import { createServer } from '../runtime/src/server/index.js';
import type { ToolHost } from '../runtime/src/tools/types.js';
import { tempDir, until } from './server/helpers.js';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** `fixture.confirm`: counts its execution in `file`, then asks the person to confirm a name. */
function askingTools(file: string): (run: { flow: Flow }) => ToolHost {
  return ({ flow: f }) =>
    new MemoryToolHost(f, {
      fixture: {
        confirm: {
          description: 'Asks the user to confirm a name (not idempotent)',
          run: async (_args, { host, elicit }) => {
            appendFileSync(file, `${host.runId}\n`);
            if (!elicit) return 'nobody asked';
            const a = await elicit({
              message: 'Confirm the name to use',
              requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
            });
            return JSON.stringify(a);
          },
        },
      },
    });
}

const eliciting: Flow = flow(
  [node('start', 'start'), node('t', 'tool', { server: 'fixture' }), agent('a1'), node('end', 'end')],
  [edge('start', 'a1'), { id: 'g', kind: 'tools', source: 't', target: 'a1' }, edge('a1', 'end')],
  [
    { node: 'a1', toolCalls: [{ name: 'confirm', args: {} }] },
    { node: 'a1', text: 'done' },
  ],
  // Named for the flow's checks; the run's tools are the host's above.
  { mcpServers: { fixture: { builtin: 'state' } } },
);

describe('a tool call waiting for a person (MCP elicitation), then a restart', () => {
  it('resumes from the checkpoint before the step: each reply once, the tool call never again', async () => {
    const t = tempDir('sb-elicit-recovery-');
    cleanups.push(t.cleanup);
    const counter = join(t.dir, 'count.txt');
    const tools = askingTools(counter);
    const s1 = await createServer({ dataDir: t.dir, editorDir: false, runs: { tools } });
    const rec = await s1.runs.start({ flow: eliciting, input: 'go', source: 'api' });
    await until(
      () => s1.store.readEvents(rec.id).some((e) => e.type === 'input.requested'),
      'the elicitation',
    );
    // Long enough for a checkpoint cut at the wait to reach the disk.
    await new Promise((r) => setTimeout(r, 200));
    await s1.close();

    const s2 = await createServer({ dataDir: t.dir, editorDir: false, runs: { tools } });
    cleanups.push(() => s2.close());
    expect(s2.recovered.resumed).toEqual([rec.id]);
    const done = await s2.runs.settled(rec.id);
    expect(done, JSON.stringify(done?.error)).toMatchObject({ status: 'completed', output: 'done' });
    const events = s2.store.readEvents(rec.id);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === 'model.request' && !e.replayed)).toHaveLength(2);
    // The replayed step makes its tool call again, answered from the journal.
    const resumedAt = events.findIndex((e) => e.type === 'run.resumed');
    expect(resumedAt).toBeGreaterThan(0);
    const after = events.slice(resumedAt);
    expect(after.filter((e) => e.type === 'tool.called')).toHaveLength(1);
    expect(after.filter((e) => e.type === 'tool.result')).toHaveLength(1);
    expect(readFileSync(counter, 'utf8').trim().split('\n')).toEqual([rec.id]);
  });
});
