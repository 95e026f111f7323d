/**
 * An agent that can hand over along several edges and calls no handover tool never ends the run
 * silently: it is asked again naming the candidates, then takes its named default edge, or the
 * run fails with no_handover; every time a `handover.missing` event says so.
 */
import { validate } from '@switchboard/nodes';
import { describe, expect, it } from 'vitest';
import { agent, collectRun, edge, flow, node, recordingModels } from './testing/index.js';

const speakers = (events: { type: string; nodeId?: string }[]) =>
  events.filter((e) => e.type === 'message' && e.nodeId).map((e) => e.nodeId);
const missing = (events: { type: string }[]) => events.filter((e) => e.type === 'handover.missing');

function triageFlow(triage: Record<string, unknown>, script: unknown[]) {
  return flow(
    [node('start', 'start'), agent('triage', triage), agent('billing'), agent('tech'), node('end', 'end')],
    [
      edge('start', 'triage'),
      edge('triage', 'billing'),
      edge('triage', 'tech'),
      edge('billing', 'end'),
      edge('tech', 'end'),
    ],
    script,
  );
}

describe('an agent that chooses no handover', () => {
  it('is asked again, naming the candidates, and its handover then counts (its first answer stays its message)', async () => {
    const { factory, requests } = recordingModels();
    const f = triageFlow({}, [
      { node: 'triage', text: 'the printer is on fire' },
      { node: 'triage', text: '', toolCalls: [{ name: 'handover_to_tech', args: {} }] },
      { node: 'tech', text: 'fixed' },
    ]);
    const { result, events } = await collectRun(f, 'help', { models: factory });
    expect(result.status).toBe('completed');
    expect(result.output).toBe('fixed');
    expect(missing(events)).toEqual([
      expect.objectContaining({
        nodeId: 'triage',
        action: 'reask',
        attempt: 1,
        candidates: ['triage-billing', 'triage-tech'],
      }),
    ]);
    const reask = requests[1]!;
    expect(reask.nodeId).toBe('triage');
    expect(reask.tools).toEqual(['handover_to_billing', 'handover_to_tech']);
    const last = String(reask.messages.at(-1)!.content);
    expect(last).toContain('handover_to_billing');
    expect(last).toContain('handover_to_tech');
    expect(speakers(events)).toEqual(['triage', 'tech']);
    const said = events.find((e) => e.type === 'message' && e.nodeId === 'triage') as unknown as {
      message: { content: string };
    };
    expect(said.message.content).toBe('the printer is on fire');
  });

  it('takes the named default edge, with an event, after the re-asks (none here)', async () => {
    const f = triageFlow({ noHandover: { reask: 0, default: 'triage-billing' } }, [
      { node: 'triage', text: 'no idea' },
      { node: 'billing', text: 'refunded' },
    ]);
    const { result, events } = await collectRun(f, 'help');
    expect(result.output).toBe('refunded');
    expect(missing(events)).toEqual([
      expect.objectContaining({ nodeId: 'triage', action: 'default', edgeId: 'triage-billing' }),
    ]);
    expect(speakers(events)).toEqual(['triage', 'billing']);
  });

  it('fails the run with no_handover when no default is named: one event per time it happened', async () => {
    const f = triageFlow({}, [
      { node: 'triage', text: 'no idea' },
      { node: 'triage', text: 'still no idea' },
    ]);
    const { result, events } = await collectRun(f, 'help');
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('no_handover');
    expect(result.error?.message).toContain('"triage-billing", "triage-tech"');
    expect(missing(events).map((e) => (e as unknown as { action: string }).action)).toEqual([
      'reask',
      'fail',
    ]);
    expect(events.some((e) => e.type === 'run.completed')).toBe(false);
    expect(events.some((e) => e.type === 'message' && e.nodeId === 'tech')).toBe(false);
  });

  it('ends its scope when the flow says "done", said by an event', async () => {
    const f = triageFlow({ noHandover: { reask: 0, default: 'done' } }, [
      { node: 'triage', text: 'all done' },
    ]);
    const { result, events } = await collectRun(f, 'help');
    expect(result.status).toBe('completed');
    expect(missing(events)).toEqual([expect.objectContaining({ action: 'done', nodeId: 'triage' })]);
  });

  it('validation warns (path and node id) about two handover edges without a default, not with one', () => {
    const f = triageFlow({}, []);
    const r = validate(f);
    expect(r.ok).toBe(true);
    expect(r.warnings).toEqual([
      expect.objectContaining({ code: 'no-default-handover', path: '/nodes/1/config', nodeId: 'triage' }),
    ]);
    expect(validate(triageFlow({ noHandover: { default: 'tech' } }, [])).warnings).toEqual([]);
    const bad = validate(triageFlow({ noHandover: { default: 'nowhere' } }, []));
    expect(bad.errors).toEqual([
      expect.objectContaining({
        code: 'bad-route',
        path: '/nodes/1/config/noHandover/default',
        nodeId: 'triage',
      }),
    ]);
  });
});
