import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_STEPS } from './limits.js';
import { agent, collectRun, edge, flow, MemoryToolHost, node } from './testing/index.js';

/** Two agents handing over forever (through a decider that always sends the work back). */
const pingPong = (extra: Parameters<typeof flow>[3] = {}) =>
  flow(
    [
      node('start', 'start'),
      agent('ping'),
      agent('pong'),
      node('d', 'decider', { strategy: 'rules', default: 'again' }),
      node('end', 'end'),
    ],
    [
      edge('start', 'ping'),
      edge('ping', 'pong'),
      edge('pong', 'd'),
      edge('d', 'ping', 'handover', undefined, 'again'),
      edge('d', 'end', 'handover', undefined, 'stop'),
    ],
    [{ fallback: true, text: 'again', usage: { promptTokens: 10, completionTokens: 5 } }],
    extra,
  );

describe('budgets', () => {
  it('endless handovers stop at the default step budget with a budget.exceeded event', async () => {
    const { result, events } = await collectRun(pingPong(), 'x');
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('budget_exceeded');
    expect(events.at(-2)).toMatchObject({
      type: 'budget.exceeded',
      budget: 'steps',
      limit: DEFAULT_MAX_STEPS,
      used: DEFAULT_MAX_STEPS + 1,
    });
    expect(events.at(-1)!.type).toBe('run.failed');
  });

  it('the flow overrides the default and the run options override the flow', async () => {
    const a = await collectRun(pingPong({ budgets: { maxSteps: 40 } }), 'x');
    expect(a.events.at(-2)).toMatchObject({ type: 'budget.exceeded', limit: 40 });
    const b = await collectRun(pingPong({ budgets: { maxSteps: 40 } }), 'x', { budgets: { maxSteps: 15 } });
    expect(b.events.at(-2)).toMatchObject({ type: 'budget.exceeded', limit: 15 });
  });

  it('a tool that always asks for itself stops at the step budget', async () => {
    const f = flow(
      [
        node('start', 'start'),
        agent('a', { toolRounds: 50 }),
        node('t', 'tool', { server: 's' }),
        node('end', 'end'),
      ],
      [edge('start', 'a'), edge('a', 'end'), edge('t', 'a', 'tools')],
      [{ toolCalls: [{ name: 'again', args: {} }], repeat: true }],
      { mcpServers: { s: { builtin: 's' } }, budgets: { maxSteps: 25 } },
    );
    const host = new MemoryToolHost(f, { s: { again: { run: () => 'call me again' } } });
    const { result, events } = await collectRun(f, 'x', { tools: host });
    expect(result.error?.code).toBe('budget_exceeded');
    expect(host.calls.length).toBe(23);
    expect(events.find((e) => e.type === 'budget.exceeded')).toMatchObject({ budget: 'steps', nodeId: 'a' });
  });

  it('token budget', async () => {
    const { result, events } = await collectRun(pingPong({ budgets: { maxTokens: 50 } }), 'x');
    expect(result.error?.code).toBe('budget_exceeded');
    expect(events.find((e) => e.type === 'budget.exceeded')).toMatchObject({
      budget: 'tokens',
      limit: 50,
      used: 60,
    });
    expect(events.filter((e) => e.type === 'model.completed')).toHaveLength(4);
  });

  it('wall-clock budget ends the run and aborts the call in flight', async () => {
    const f = flow(
      [node('start', 'start'), agent('slow'), node('end', 'end')],
      [edge('start', 'slow'), edge('slow', 'end')],
      [{ text: 'late', latencyMs: 30_000 }],
    );
    const t0 = Date.now();
    const { result, events } = await collectRun(f, 'x', { budgets: { timeoutMs: 100 } });
    expect(Date.now() - t0).toBeLessThan(15_000); // not the 30 s reply
    expect(result.error?.code).toBe('budget_exceeded');
    expect(events.slice(-2).map((e) => e.type)).toEqual(['budget.exceeded', 'run.failed']);
    expect(events.at(-2)).toMatchObject({ budget: 'time', limit: 100 });
  });
});
