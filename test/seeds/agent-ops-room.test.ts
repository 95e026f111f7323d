/**
 * Agent Ops Room (flows/agent-ops-room.json): a facilitator decider assigns tasks and grants the
 * mic; the gateway (a guard on the room) rejects a message without the mic, a message that is not
 * a valid JSON publication and a message over the rate limit, letting the agent retry; an
 * incremental summarizer condenses the room every 4 messages and agents see the summary plus
 * every later message.
 */
import type { Flow } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import {
  cannedReplies,
  type Ev,
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

  // The on-call agent spoke before anyone held the mic: rejected, retried, rejected, dropped.
  const micRejections = ofType(events, 'observer.fired', 'gateway').filter((e) => reason(e).includes('mic'));
  expect(micRejections.map((e) => [e.action, e.target])).toEqual([
    ['retry', 'oncall'],
    ['block', 'oncall'],
  ]);
  expect(reason(micRejections[0]!)).toBe('"oncall" was not granted the mic');
  const oncallRetry = requests.filter((r) => r.nodeId === 'oncall')[1]!;
  expect(oncallRetry.messages.at(-1)!.content).toContain(
    'Your last message was rejected: "oncall" was not granted the mic. Try again.',
  );
  const firstGrant = indexOf(events, 'decision', 'facilitator');
  expect(events.indexOf(micRejections[1]!)).toBeLessThan(firstGrant);
  expect(ofType(events.slice(0, firstGrant), 'message', 'oncall')).toEqual([]);

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

  // Schema: the investigator's prose was rejected and its retry, a JSON publication, accepted.
  const schema = ofType(events, 'observer.fired', 'gateway').filter((e) => reason(e).includes('not JSON'));
  expect(schema.map((e) => [e.action, e.target])).toEqual([['retry', 'investigator']]);
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
  // The summarizer condensed exactly the messages up to seq 4.
  const sumReq = requests.find((r) => r.nodeId === 'room-summary')!;
  expect(sumReq.messages[1]!.content).toContain('Previous summary:\n(none)');
  expect(sumReq.messages[1]!.content).toContain('[4] oncall:');
}

describe('Agent Ops Room', () => {
  it('scripted: mic grants, gateway reject-and-retry (mic, schema), incremental summary as context', async () => {
    const run = await runSeed(flow, INPUT, { dataDir: root.sub('scripted') });
    checkRoom(run);
    expect(run.events.every((e) => e.scripted === true)).toBe(true);
  });

  it('the gateway rate-limits each agent: over the limit a message is rejected, retried, then dropped', async () => {
    const strict = structuredClone(flow) as Flow;
    strict.nodes.find((n) => n.id === 'gateway')!.config.ratePerMinute = 1;
    const run = await runSeed(strict, INPUT, { dataDir: root.sub('rate') });
    expect(run.result.status).toBe('completed');
    const rate = ofType(run.events, 'observer.fired', 'gateway').filter((e) =>
      reason(e).includes('messages per minute'),
    );
    // oncall's second publication (the rollback) and investigator's second finding.
    expect(rate.map((e) => [e.action, e.target])).toEqual([
      ['retry', 'oncall'],
      ['block', 'oncall'],
      ['retry', 'investigator'],
      ['block', 'investigator'],
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
    });
  });
});
