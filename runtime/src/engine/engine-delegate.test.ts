import { describe, expect, it } from 'vitest';
import { agent, collectRun, edge, flow, node, recordingModels } from './testing/index.js';

describe('agent-as-tool (delegate edges)', () => {
  const f = () =>
    flow(
      [
        node('start', 'start'),
        agent('principal'),
        agent('associate', { role: 'does research' }),
        node('squad', 'team', { mode: 'handover' }),
        agent('s1', {}, { parent: 'squad' }),
        agent('s2', {}, { parent: 'squad' }),
        node('end', 'end'),
      ],
      [
        edge('start', 'principal'),
        edge('principal', 'end'),
        edge('principal', 'associate', 'delegate', { description: 'Research helper' }),
        edge('principal', 'squad', 'delegate', { toolName: 'squad' }),
        edge('s1', 's2'),
      ],
      [
        {
          node: 'principal',
          toolCalls: [
            { id: 'call-r', name: 'ask_associate', args: { task: 'find facts' } },
            { id: 'call-s', name: 'squad', args: { task: 'write it' } },
          ],
        },
        { node: 'associate', text: 'facts: 42' },
        { node: 's1', text: 'draft' },
        { node: 's2', text: 'polished' },
        { node: 'principal', text: 'final: 42, polished' },
      ],
    );

  it('the target agent or team runs as a nested run; its answer is the tool result; events name parent run and call', async () => {
    const { factory, requests } = recordingModels();
    const { result, events } = await collectRun(f(), 'go', { models: factory });
    expect(result).toMatchObject({ status: 'completed', output: 'final: 42, polished' });
    expect(requests[0]!.tools).toEqual(['ask_associate', 'squad']);
    const results = events.filter(
      (e) => e.type === 'tool.result' && e.nodeId === 'principal',
    ) as unknown as Array<{ callId: string; result: string; edgeId: string }>;
    expect(results.map((r) => [r.callId, r.result, r.edgeId])).toEqual([
      ['call-r', 'facts: 42', 'principal-associate'],
      ['call-s', 'polished', 'principal-squad'],
    ]);
    const nested = events.filter((e) => e.parentRunId !== undefined);
    expect(new Set(nested.map((e) => e.parentCallId))).toEqual(new Set(['call-r', 'call-s']));
    const top = events[0]!.runId;
    expect(nested.every((e) => e.parentRunId === top && e.runId !== top)).toBe(true);
    expect(nested.filter((e) => e.type === 'run.started')).toHaveLength(2);
    expect(nested.filter((e) => e.type === 'run.completed')).toHaveLength(2);
    // The squad ran s1 then s2 inside its nested run, but did not follow any edge of the team itself.
    expect(nested.filter((e) => e.type === 'node.started').map((e) => e.nodeId)).toEqual([
      'associate',
      'squad',
      's1',
      's2',
    ]);
    // The nested agent saw the task as its input, not the parent's transcript.
    const assoc = requests.find((r) => r.nodeId === 'associate')!;
    expect(assoc.messages.slice(1).map((m) => m.content)).toEqual(['find facts']);
  });

  it('delegations asked for in one reply run concurrently; results return in call order', async () => {
    const f = flow(
      [node('start', 'start'), agent('lead'), agent('slow'), agent('fast'), node('end', 'end')],
      [
        edge('start', 'lead'),
        edge('lead', 'end'),
        edge('lead', 'slow', 'delegate'),
        edge('lead', 'fast', 'delegate'),
      ],
      [
        {
          node: 'lead',
          toolCalls: [
            { id: 'c1', name: 'ask_slow', args: { task: 'a' } },
            { id: 'c2', name: 'ask_fast', args: { task: 'b' } },
          ],
        },
        { node: 'slow', text: 'slow answer', latencyMs: 300 },
        { node: 'fast', text: 'fast answer', latencyMs: 10 },
        { node: 'lead', text: 'both done' },
      ],
    );
    const { factory, requests } = recordingModels();
    const { result, events } = await collectRun(f, 'go', { models: factory });
    expect(result).toMatchObject({ status: 'completed', output: 'both done' });
    const at = (type: string, nodeId: string) =>
      events.findIndex((e) => e.type === type && e.nodeId === nodeId);
    // fast started before slow finished, and finished first.
    expect(at('node.started', 'fast')).toBeLessThan(at('node.completed', 'slow'));
    expect(at('node.completed', 'fast')).toBeLessThan(at('node.completed', 'slow'));
    // The lead reads the results in the order it asked for them.
    const last = requests.filter((r) => r.nodeId === 'lead')[1]!;
    expect(last.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
      'slow answer',
      'fast answer',
    ]);
  });
});
