import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_STEPS } from './limits.js';
import { agent, collectRun, edge, flow, MemoryToolHost, node } from './testing/index.js';
import type { RunCheckpoint } from './types.js';

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

/** start → outer team [ planner → inner team [ w1 → w2 → w3 ] ] → after → end; every reply 10 + 5 tokens. */
const nested = (
  budgets: NonNullable<Parameters<typeof flow>[3]>['budgets'],
  cost?: { input: number; output: number },
) => {
  const f = flow(
    [
      node('start', 'start'),
      node('outer', 'team', { mode: 'handover' }),
      agent('planner', {}, { parent: 'outer' }),
      node('inner', 'team', { mode: 'handover' }, { parent: 'outer' }),
      agent('w1', {}, { parent: 'inner' }),
      agent('w2', {}, { parent: 'inner' }),
      agent('w3', {}, { parent: 'inner' }),
      agent('after'),
      node('end', 'end'),
    ],
    [
      edge('start', 'outer'),
      edge('planner', 'inner'),
      edge('w1', 'w2'),
      edge('w2', 'w3'),
      edge('outer', 'after'),
      edge('after', 'end'),
    ],
    [{ fallback: true, text: 'ok', usage: { promptTokens: 10, completionTokens: 5 } }],
    budgets ? { budgets } : {},
  );
  if (cost) f.models.default!.pricing = cost;
  return f;
};

describe('node, team and cost budgets', () => {
  it('a team token budget stops the run at the member that spends it, after a warning', async () => {
    const { result, events } = await collectRun(
      nested({ warnAt: 0.5, nodes: [{ node: 'inner', maxTokens: 40 }] }),
      'x',
    );
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('budget_exceeded');
    expect(result.error?.message).toBe('the tokens budget of team "inner" 40 was exceeded (45)');
    const warning = events.findIndex((e) => e.type === 'budget.warning');
    const stop = events.findIndex((e) => e.type === 'budget.exceeded');
    expect(events[warning]).toMatchObject({
      budget: 'tokens',
      scope: 'team',
      nodeId: 'inner',
      limit: 40,
      used: 30,
      fraction: 0.5,
    });
    expect(events[stop]).toMatchObject({
      budget: 'tokens',
      scope: 'team',
      nodeId: 'inner',
      limit: 40,
      used: 45,
    });
    expect(warning).toBeGreaterThan(0);
    expect(warning).toBeLessThan(stop);
    // The warning came at w2's reply (30 of 40 ≥ 0.5, counting only calls inside the team), the stop at w3's.
    expect(events[warning - 1]).toMatchObject({ type: 'model.completed', nodeId: 'w2' });
    expect(events[stop - 1]).toMatchObject({ type: 'model.completed', nodeId: 'w3' });
    expect(events.at(-1)!.type).toBe('run.failed');
    expect(events.some((e) => e.type === 'node.started' && e.nodeId === 'after')).toBe(false);
  });

  it('a node budget counts that node only; the outer team counts its nested team too', async () => {
    const a = await collectRun(nested({ nodes: [{ node: 'w2', maxTokens: 14 }] }), 'x');
    expect(a.events.find((e) => e.type === 'budget.exceeded')).toMatchObject({
      scope: 'node',
      nodeId: 'w2',
      used: 15,
    });
    const warn = a.events.find((e) => e.type === 'budget.warning');
    expect(warn).toMatchObject({ scope: 'node', nodeId: 'w2', fraction: 0.8 });
    const b = await collectRun(nested({ nodes: [{ node: 'outer', maxTokens: 55 }] }), 'x');
    // planner + w1 + w2 + w3 = 60 > 55: the outer team's budget includes the inner team's calls.
    expect(b.events.find((e) => e.type === 'budget.exceeded')).toMatchObject({
      scope: 'team',
      nodeId: 'outer',
      used: 60,
    });
    const c = await collectRun(nested({ nodes: [{ node: 'outer', maxTokens: 60 }] }), 'x');
    expect(c.result.status).toBe('completed');
  });

  it('cost budgets price calls by the model cost, per run and per team', async () => {
    // 10 prompt tokens at $1/M + 5 completion tokens at $2/M = $0.00002 a call.
    const price = { input: 1, output: 2 };
    const run = await collectRun(nested({ maxCost: 0.00007 }, price), 'x');
    expect(run.result.error?.message).toBe('the cost budget of 0.00007 was exceeded (0.00008)');
    expect(run.events.filter((e) => e.type === 'model.completed')).toHaveLength(4);
    expect(run.events.find((e) => e.type === 'budget.warning')).toMatchObject({
      budget: 'cost',
      used: 0.00006,
    });
    const team = await collectRun(nested({ nodes: [{ node: 'inner', maxCost: 0.00005 }] }, price), 'x');
    expect(team.events.find((e) => e.type === 'budget.exceeded')).toMatchObject({
      budget: 'cost',
      scope: 'team',
      nodeId: 'inner',
      used: 0.00006,
    });
    // Without a price, calls cost nothing and the budget never runs out.
    expect((await collectRun(nested({ maxCost: 0.00001 }), 'x')).result.status).toBe('completed');
  });

  it('the run token budget warns before it stops', async () => {
    const { events } = await collectRun(pingPong({ budgets: { maxTokens: 50, warnAt: 0.9 } }), 'x');
    const i = events.findIndex((e) => e.type === 'budget.warning');
    expect(events[i]).toMatchObject({ budget: 'tokens', limit: 50, used: 45, fraction: 0.9 });
    expect(i).toBeLessThan(events.findIndex((e) => e.type === 'budget.exceeded'));
  });

  it('team and cost spending is checkpointed: a resumed run stops where the uninterrupted one does, warning once', async () => {
    const f = () => nested({ warnAt: 0.5, nodes: [{ node: 'inner', maxTokens: 40 }] });
    const full = await collectRun(f(), 'x');
    const saved: RunCheckpoint[] = [];
    await collectRun(f(), 'x', {
      checkpoint: (cp) => {
        saved.push(JSON.parse(JSON.stringify(cp)) as RunCheckpoint);
        return undefined;
      },
    });
    // Resume after w2's turn (the warning was before it): the stop still comes at w3, with no second warning.
    const at = full.events.find((e) => e.type === 'turn.completed' && e.nodeId === 'w2')!.seq;
    const cp = saved.find((c) => c.seq >= at)!;
    const resumed = await collectRun(f(), 'x', { resume: cp }, cp.seq);
    expect(resumed.result.error?.message).toBe('the tokens budget of team "inner" 40 was exceeded (45)');
    expect(resumed.events.filter((e) => e.type === 'budget.warning')).toHaveLength(0);
    expect(resumed.events.filter((e) => e.type === 'model.completed').map((e) => e.nodeId)).toEqual(['w3']);
  });
});
