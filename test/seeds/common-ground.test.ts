/**
 * Common Ground research team (flows/common-ground.json): the Partner plans work modules in state
 * (a reflection observer reminds it after a turn without a tool call), a handover protocol gives
 * the Principal a startup briefing with only the work modules, the Principal dispatches the
 * associates in parallel through delegate edges, and each returns a JSON Schema deliverable.
 */
import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import {
  cannedReplies,
  type Ev,
  expectRequestsMatch,
  handovers,
  indexOf,
  ofType,
  openaiFlow,
  runSeed,
  type SeedRun,
  seedSuite,
  speakers,
  withFakeOpenAI,
} from './helpers.js';

const { flow, root } = seedSuite('common-ground');
const INPUT = 'Should we bring our heat pump to the EU market?';

interface Deliverable {
  module_id: string;
  findings: string[];
  confidence: number;
  open_questions: string[];
}

/** What both runs (scripted and openai) must show. */
function checkHierarchy(run: SeedRun): void {
  const { events, result, requests } = run;
  expect(result.status, JSON.stringify(result.error)).toBe('completed');
  expect(String(result.output)).toMatch(/^# EU heat-pump entry: recommendation/);

  // Partner's first turn called no tool: the reflection observer reminded it, the plan check sent it back.
  const remind = ofType(events, 'observer.fired', 'no-tool-reminder');
  expect(remind).toHaveLength(1);
  expect(remind[0]).toMatchObject({ action: 'remind', target: 'partner' });
  const partnerTurns = requests.filter((r) => r.nodeId === 'partner');
  expect(partnerTurns[1]!.messages.at(-1)!.content).toMatch(/^Reflection: your last turn called no tool/);
  expect(ofType(events, 'decision', 'plan-check').map((d) => d.choice)).toEqual(['replan', 'done']);

  // The handover protocol: the Principal starts from a briefing and the work modules only.
  expect(handovers(events).slice(0, 4)).toEqual(['client-request', 'check-plan', 'replan', 'check-plan']);
  expect(handovers(events)).toContain('launch-principal');
  const principalFirst = requests.find((r) => r.nodeId === 'principal')!;
  const briefing = principalFirst.messages.at(-1)!.content;
  expect(briefing).toMatch(/^AGENT_STARTUP_BRIEFING from the Partner\. The client asked: Should we/);
  expect(briefing).toContain('State:\n{"work_modules":[{"id":"wm-market"');
  // None of the Partner's conversation is passed on: system prompt + briefing only.
  expect(principalFirst.messages.map((m) => m.role)).toEqual(['system', 'user']);

  // Two delegations asked for in one reply; each associate ran as a nested run and delivered JSON.
  const dispatch = ofType(events, 'tool.called', 'principal').filter((c) =>
    String(c.tool).startsWith('dispatch_'),
  );
  expect(dispatch.map((c) => c.edgeId)).toEqual(['dispatch-market', 'dispatch-tech']);
  for (const [assoc, module] of [
    ['market', 'wm-market'],
    ['tech', 'wm-tech'],
  ] as const) {
    const done = ofType(events, 'message', assoc)[0]!;
    expect(done.parentRunId).toBe(events[0]!.runId);
    const d = JSON.parse((done.message as { content: string }).content) as Deliverable;
    expect(d.module_id).toBe(module);
    expect(d.findings.length).toBeGreaterThan(0);
    expect(d.confidence).toBeGreaterThan(0);
    // The deliverable came back to the Principal as the result of its delegate call.
    const res = ofType(events, 'tool.result', 'principal').find((r) => r.edgeId === `dispatch-${assoc}`)!;
    expect(JSON.parse(String(res.result))).toEqual(d);
  }
  // The associates were asked for structured output against the deliverable schema.
  expect(
    requests.filter((r) => r.nodeId === 'market' || r.nodeId === 'tech').every((r) => r.jsonSchema),
  ).toBe(true);

  // Work modules in state, completed by the Principal.
  const sets = ofType(events, 'tool.called').filter((c) => c.tool === 'team-state__state_set');
  expect(sets.map((c) => c.nodeId)).toEqual(['partner', 'principal']);
  const final = (sets[1]!.args as { value: Array<{ status: string }> }).value;
  expect(final.map((m) => m.status)).toEqual(['completed', 'completed']);

  // A turn record with token usage for every thought-action cycle.
  // (The rule decider's turns call no model and carry no model name.)
  const turns = ofType(events, 'turn.completed').filter((t) => t.model !== undefined);
  expect(turns.map((t) => t.nodeId).sort()).toEqual(['market', 'partner', 'partner', 'principal', 'tech']);
  const total = (t: Ev) => {
    const u = t.usage as { promptTokens: number; completionTokens: number };
    return u.promptTokens + u.completionTokens;
  };
  for (const t of turns) expect(total(t)).toBeGreaterThan(0);
  expect(speakers(events)).toEqual(['partner', 'partner', 'principal']);
}

/** Both associates were at work at the same time. */
function overlapped(events: readonly RunEvent[]): boolean {
  const startTech = indexOf(events, 'node.started', 'tech');
  const startMarket = indexOf(events, 'node.started', 'market');
  const endMarket = indexOf(events, 'node.completed', 'market');
  const endTech = indexOf(events, 'node.completed', 'tech');
  return Math.max(startTech, startMarket) < Math.min(endMarket, endTech);
}

describe('Common Ground research team', () => {
  it('scripted: reflection, handover briefing, parallel associates with JSON deliverables', async () => {
    const run = await runSeed(flow, INPUT, { dataDir: root.sub('scripted') });
    checkHierarchy(run);
    const { events } = run;
    expect(events.every((e) => e.scripted === true)).toBe(true);
    // Each associate takes 250 ms: run one after the other they could not overlap.
    expect(overlapped(events)).toBe(true);
    const started = events[indexOf(events, 'node.started', 'tech')]!.ts;
    const finished = events[indexOf(events, 'node.completed', 'market')]!.ts;
    expect(started).toBeLessThan(finished);
  });

  it('runs against an OpenAI-compatible server through the openai provider', async () => {
    // Slow streaming keeps both associates' requests open at once, as real model calls would be.
    await withFakeOpenAI({ ...cannedReplies(flow), chunkDelayMs: 5 }, async (fake) => {
      const run = await runSeed(openaiFlow(flow, fake.url), INPUT, {
        dataDir: root.sub('openai'),
        allowLocalModels: true,
      });
      expectRequestsMatch([run.events], fake);
      checkHierarchy(run);
      expect(run.events.some((e) => e.scripted)).toBe(false);
      expect(overlapped(run.events)).toBe(true);
      // The associates' requests carried the deliverable schema as an OpenAI response format.
      const assoc = fake.requests.filter((r) =>
        JSON.stringify(r.body?.messages ?? []).includes('Common Ground market associate'),
      );
      expect(assoc.length).toBeGreaterThan(0);
      expect(JSON.stringify(assoc[0]!.body?.response_format)).toContain('open_questions');
    });
  });
});
