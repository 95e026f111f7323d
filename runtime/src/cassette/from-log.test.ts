import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { runFlow } from '../engine/index.js';
import { agent, edge, flow, MemoryToolHost, node } from '../engine/testing/index.js';
import { cassetteFromLog } from './from-log.js';
import { CassetteRecorder } from './record.js';
import { replayCassette } from './replay-run.js';

// a calls a tool (raw arguments with odd spacing), then hands over to b; b answers.
const f = flow(
  [
    node('start', 'start'),
    agent('a'),
    agent('b'),
    node('calc', 'tool', { server: 'calc' }),
    node('end', 'end'),
  ],
  [edge('start', 'a'), edge('a', 'b'), edge('b', 'end'), edge('calc', 'a', 'tools')],
  [
    { node: 'a', toolCalls: [{ id: 'c1', name: 'add', arguments: '{ "x": 2,   "y": 3 }' }] },
    { node: 'a', text: 'the sum is 5' },
    { node: 'b', text: 'done: 5' },
  ],
  { mcpServers: { calc: { command: 'calc-server' } } },
);

async function recorded() {
  const rec = new CassetteRecorder();
  const host = new MemoryToolHost(f, {
    calc: { add: { run: (a) => String(Number(a.x) + Number(a.y)) } },
  });
  const events: RunEvent[] = [];
  const result = await runFlow(f, 'add them', {
    models: rec.wrapModels(),
    tools: rec.wrapTools(host),
    onEvent: (e) => events.push(e),
  }).result;
  return { rec, events, result };
}

describe('a cassette from a run log', () => {
  it('keys every request as the recorder does, with the raw tool arguments and the results', async () => {
    const { rec, events, result } = await recorded();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    const live = rec.cassette(f, 'add them', events, result);
    const { cassette, warnings } = cassetteFromLog({ flow: f, input: 'add them', events });
    expect(warnings).toEqual([]);
    expect(cassette.models.map((m) => m.key)).toEqual(live.models.map((m) => m.key));
    expect(cassette.models.map((m) => m.request)).toEqual(live.models.map((m) => m.request));
    expect(cassette.models[0]!.response!.toolCalls).toEqual([
      { id: 'c1', name: 'add', arguments: '{ "x": 2,   "y": 3 }' },
    ]);
    expect(cassette.tools.map((t) => [t.key, t.result])).toEqual(live.tools.map((t) => [t.key, t.result]));
    expect(cassette.toolSets).toEqual([
      { agent: 'a', tools: [expect.objectContaining({ name: 'add', server: 'calc', toolNodeId: 'calc' })] },
    ]);
    expect(cassette.result).toEqual({ status: 'completed', output: 'done: 5' });

    const replay = await replayCassette(cassette);
    expect(replay.miss?.message).toBeUndefined();
    expect(replay.comparison.same).toBe(true);
    expect(replay.modelCalls).toBe(3);
    expect(replay.toolCalls).toBe(1);
  });

  it('a journal entry gives the full result where the event holds a clipped one', async () => {
    const { events } = await recorded();
    const journal = [
      {
        intent: { k: 'intent' as const, n: 1, tool: 'add', args: '', cp: 0 },
        done: { k: 'done' as const, n: 1, result: { content: '5', isError: false, structured: { sum: 5 } } },
      },
    ];
    // The args hash is the journal's own; compute it as the journal host does.
    const { argsHash } = await import('../server/journaled-tools.js');
    journal[0]!.intent.args = argsHash({ x: 2, y: 3 });
    const { cassette } = cassetteFromLog({ flow: f, input: 'add them', events, journal });
    expect(cassette.tools[0]!.result).toEqual({ content: '5', isError: false, structured: { sum: 5 } });
  });
});
