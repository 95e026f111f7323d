/**
 * Agent Ops Room (flows/agent-ops-room.json): a facilitator decider assigns tasks and grants the
 * mic, and every grant and release is an event; the gateway (one guard on the room, `when:
 * "both"`) refuses a speaker without the mic or over the rate limit before any model call, and
 * after the turn rejects a message that is not a valid JSON publication, letting the agent retry;
 * an incremental summarizer condenses the room every 4 messages, and agents and the facilitator
 * see the summary plus every later message.
 */
import type { Flow } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import {
  cannedReplies,
  type Ev,
  expectRequestsMatch,
  indexOf,
  ofType,
  openaiFlow,
  runSeed,
  type SeedRun,
  seedSuite,
  speakers,
  withFakeOpenAI,
} from './helpers.js';

const { flow, root } = seedSuite('agent-ops-room', 'aor');
const INPUT = 'ALERT: checkout error rate 12% on production since 14:02';

const fired = (events: SeedRun['events'], action: string) =>
  ofType(events, 'observer.fired').filter((e) => e.action === action);
const reason = (e: Ev) => String((e.detail as { reason: string }).reason);
const content = (e: Ev) => (e.message as { content: string }).content;

function checkRoom(run: SeedRun): void {
  const { events, result, requests } = run;
  expect(result.status, JSON.stringify(result.error)).toBe('completed');
  expect(JSON.stringify(result.output)).toContain('Resolved: checkout errors');

  // The on-call agent was paged before anyone held the mic: the gateway refused the turn before
  // any model call (one guard checks both sides of a turn).
  const micRejections = ofType(events, 'observer.fired', 'gateway').filter((e) => reason(e).includes('mic'));
  expect(micRejections.map((e) => [e.action, e.target, (e.detail as { when: string }).when])).toEqual([
    ['block', 'oncall', 'before'],
  ]);
  expect(reason(micRejections[0]!)).toBe('"oncall" was not granted the mic');
  const firstGrant = indexOf(events, 'decision', 'facilitator');
  expect(events.indexOf(micRejections[0]!)).toBeLessThan(firstGrant);
  expect(ofType(events.slice(0, firstGrant), 'message', 'oncall')).toEqual([]);
  expect(ofType(events.slice(0, firstGrant), 'model.completed', 'oncall')).toEqual([]);
  const firstOncall = requests.findIndex((r) => r.nodeId === 'oncall');
  const firstFacilitator = requests.findIndex((r) => r.nodeId === 'facilitator');
  expect(firstFacilitator).toBeGreaterThanOrEqual(0);
  expect(firstOncall).toBeGreaterThan(firstFacilitator);

  // Every grant and release of the mic is an event: a new grant releases the previous holder,
  // and leaving the room releases the last one.
  const mic = events
    .filter((e) => e.type === 'mic.granted' || e.type === 'mic.released')
    .map((e) => `${e.type === 'mic.granted' ? '+' : '-'}${(e as Ev).holder}`);
  expect(mic).toEqual([
    '+oncall',
    '-oncall',
    '+investigator',
    '-investigator',
    '+oncall',
    '-oncall',
    '+investigator',
    '-investigator',
    '+comms',
    '-comms',
  ]);
  for (const g of ofType(events, 'mic.granted')) expect(g.by).toBe('facilitator');
  // Each grant comes right after the facilitator's decision and before the holder speaks.
  const grantsAt = ofType(events, 'mic.granted').map((g) => events.indexOf(g));
  const decisionsAt = ofType(events, 'decision', 'facilitator').map((d) => events.indexOf(d));
  for (let i = 0; i < grantsAt.length; i++) expect(grantsAt[i]).toBeGreaterThan(decisionsAt[i]!);

  // The facilitator assigned every task and granted the mic; each granted agent got through.
  const grants = ofType(events, 'decision', 'facilitator').map((d) => d.choice);
  expect(grants).toEqual([
    'to-oncall',
    'to-investigator',
    'to-oncall',
    'to-investigator',
    'to-comms',
    'done',
  ]);
  expect(speakers(events)).toEqual(['oncall', 'investigator', 'oncall', 'investigator', 'comms']);
  // Its task arrives as a briefing in the granted agent's inbox.
  const commsReq = requests.find((r) => r.nodeId === 'comms')!;
  expect(commsReq.messages.at(-1)!.content).toBe(
    'The facilitator gives you the mic. Your task: write the status update.',
  );

  // Schema, after the turn, by the same guard: the investigator's prose was rejected and its
  // retry, a JSON publication, accepted.
  const schema = ofType(events, 'observer.fired', 'gateway').filter((e) => reason(e).includes('not JSON'));
  expect(schema.map((e) => [e.action, e.target])).toEqual([['retry', 'investigator']]);
  const prose = events.indexOf(schema[0]!);
  expect(ofType(events.slice(0, prose), 'model.completed', 'investigator')).toHaveLength(1);
  const published = ofType(events, 'message').filter((e) => e.nodeId && e.nodeId !== 'start');
  for (const m of published) expect(['finding', 'action', 'status']).toContain(JSON.parse(content(m)).kind);

  // Incremental summary after 4 messages; the status writer's context is that summary plus
  // every later message verbatim, and nothing older.
  const sums = fired(events, 'summary');
  expect(sums).toHaveLength(1);
  const covers = (sums[0]!.detail as { coversSeq: number }).coversSeq;
  expect(covers).toBe(4);
  const summaryText = String((sums[0]!.detail as { text: string }).text);
  expect(commsReq.messages[1]!.content).toBe(`Summary of the conversation so far:\n${summaryText}`);
  const after = ofType(events, 'message').filter(
    (e) =>
      (e.message as { seq: number }).seq > covers &&
      events.indexOf(e) < indexOf(events, 'node.started', 'comms'),
  );
  expect(after.map((m) => [m.nodeId, JSON.parse(content(m)).body])).toEqual([
    ['investigator', 'Since the rollback the checkout error rate has been stable at 0.3% for 10 minutes.'],
  ]);
  expect(commsReq.messages.slice(2, -1).map((m) => m.content)).toEqual(after.map(content));
  const before = ofType(events, 'message').filter((e) => (e.message as { seq: number }).seq <= covers);
  for (const m of before)
    expect(
      commsReq.messages.some((x) => x.content === content(m)),
      content(m),
    ).toBe(false);
  // The facilitator, an LLM decider, reads the room the same way: after the summary its prompt
  // holds the summary, then the later messages.
  const facAfter = requests.filter(
    (r, i) => r.nodeId === 'facilitator' && i > requests.findIndex((x) => x.nodeId === 'room-summary'),
  );
  expect(facAfter.length).toBeGreaterThan(0);
  for (const r of facAfter) {
    expect(r.messages[1]!.content).toBe(`Summary of the conversation so far:\n${summaryText}`);
    for (const m of before)
      expect(r.messages.some((x) => String(x.content).includes(content(m)))).toBe(false);
  }
  // The summarizer condensed exactly the messages up to seq 4.
  const sumReq = requests.find((r) => r.nodeId === 'room-summary')!;
  expect(sumReq.messages[1]!.content).toContain('Previous summary:\n(none)');
  expect(sumReq.messages[1]!.content).toContain('[4] oncall:');
}

describe('Agent Ops Room', () => {
  it('scripted: mic grant and release events, one gateway before (mic) and after (schema) a turn, summary as context for agents and facilitator', async () => {
    const run = await runSeed(flow, INPUT, { dataDir: root.sub('scripted') });
    checkRoom(run);
    expect(run.events.every((e) => e.scripted === true)).toBe(true);
  });

  it('the gateway rate-limits each agent: over the limit a turn is refused before the model is called', async () => {
    const strict = structuredClone(flow) as Flow;
    strict.nodes.find((n) => n.id === 'gateway')!.config.ratePerMinute = 1;
    const run = await runSeed(strict, INPUT, { dataDir: root.sub('rate') });
    expect(run.result.status).toBe('completed');
    const rate = ofType(run.events, 'observer.fired', 'gateway').filter((e) =>
      reason(e).includes('messages per minute'),
    );
    // oncall's second turn (the rollback) and investigator's second finding: refused before the
    // model is called.
    expect(rate.map((e) => [e.action, e.target, (e.detail as { when: string }).when])).toEqual([
      ['block', 'oncall', 'before'],
      ['block', 'investigator', 'before'],
    ]);
    expect(reason(rate[0]!)).toBe('"oncall" exceeded 1 messages per minute');
    expect(speakers(run.events)).toEqual(['oncall', 'investigator', 'comms']);
  });

  it('runs against an OpenAI-compatible server through the openai provider', async () => {
    await withFakeOpenAI(cannedReplies(flow), async (fake) => {
      const run = await runSeed(openaiFlow(flow, fake.url), INPUT, {
        dataDir: root.sub('openai'),
        allowLocalModels: true,
      });
      expectRequestsMatch([run.events], fake);
      checkRoom(run);
      expect(run.events.some((e) => e.scripted)).toBe(false);
      // The facilitator's answer format allows only its candidate edges (and "done").
      const asked = fake.requests.filter((r) =>
        JSON.stringify(r.body?.messages?.[0]).includes('You are the Agent Ops Room facilitator'),
      );
      expect(asked.length).toBeGreaterThan(0);
      for (const r of asked)
        expect(
          (r.body!.response_format as { json_schema: { schema: { properties: { choice: unknown } } } })
            .json_schema.schema.properties.choice,
        ).toEqual({ type: 'string', enum: ['to-oncall', 'to-investigator', 'to-comms', 'done'] });
      for (const r of asked)
        expect((r.body!.response_format as { json_schema: { strict?: boolean } }).json_schema.strict).toBe(
          true,
        );
    });
  });
});
