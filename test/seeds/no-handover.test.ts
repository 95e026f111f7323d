/**
 * Support triage (flows/support-triage.json) with its rules decider replaced by an LLM agent that
 * hands over through the generated handover tools, run through the `openai` provider against the
 * fake OpenAI-compatible server, whose triage model never calls a handover tool. The run never
 * completes silently: it is asked again naming the candidates, then fails with no_handover, or
 * takes the flow's named default edge. The tools the server received name only legal targets.
 */
import type { Flow } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import {
  cannedReplies,
  ofType,
  openaiFlow,
  runSeed,
  seedSuite,
  speakers,
  withFakeOpenAI,
} from './helpers.js';

const { flow, root } = seedSuite('support-triage', 'nohandover');
const INPUT = 'Something odd happened with my account.';
const TRIAGE_PROMPT = 'You are the triage agent of a support desk. Send the customer to the right desk.';

/** The seed with an agent (same id, same edges) where the rules decider was. */
function agentTriage(noHandover?: Record<string, unknown>): Flow {
  const f = structuredClone(flow) as Flow;
  const i = f.nodes.findIndex((n) => n.id === 'triage');
  const config: Record<string, unknown> = {
    role: 'Sends each customer message to the right desk.',
    model: 'default',
    prompt: [{ text: TRIAGE_PROMPT }, { text: 'Message: {{task}}' }],
  };
  if (noHandover) config.noHandover = noHandover;
  f.nodes[i] = { ...f.nodes[i]!, kind: 'agent', config };
  return f;
}

const replies = (f: Flow) =>
  cannedReplies(f, [
    { when: { system: TRIAGE_PROMPT }, reply: { text: 'This looks like an account question.' } },
  ]);

describe('an agent that never calls a handover tool, against an OpenAI-compatible server', () => {
  it('is asked again naming the candidates, then the run fails with no_handover: never completed', async () => {
    const f = agentTriage();
    await withFakeOpenAI(replies(f), async (fake) => {
      const run = await runSeed(openaiFlow(f, fake.url), INPUT, {
        dataDir: root.sub('fail'),
        allowLocalModels: true,
      });
      expect(run.result.status).toBe('failed');
      expect(run.result.error?.code).toBe('no_handover');
      expect(run.result.error?.message).toContain('"to-billing", "to-tech", "to-general"');
      expect(ofType(run.events, 'run.completed')).toEqual([]);
      const missing = ofType(run.events, 'handover.missing', 'triage');
      expect(missing.map((e) => e.action)).toEqual(['reask', 'fail']);
      expect(missing[0]!.candidates).toEqual(['to-billing', 'to-tech', 'to-general']);
      expect(speakers(run.events)).toEqual(['triage']);

      const sent = fake.requests.filter((r) => JSON.stringify(r.body?.messages?.[0]).includes(TRIAGE_PROMPT));
      expect(sent).toHaveLength(2);
      // The re-ask names every handover tool.
      const reask = String(sent[1]!.body!.messages!.at(-1)!.content);
      for (const t of ['handover_to_billing', 'handover_to_tech', 'handover_to_generalist'])
        expect(reask).toContain(t);
      // Each handover tool's arguments can name only its own target.
      const tools = sent[0]!.body!.tools!.map((t) => [
        t.function.name,
        (t.function.parameters as { properties: { to: { enum: string[] } } }).properties.to.enum,
      ]);
      expect(tools).toEqual([
        ['handover_to_billing', ['billing']],
        ['handover_to_tech', ['tech']],
        ['handover_to_generalist', ['generalist']],
      ]);
    });
  });

  it('takes the default edge the flow names, with an event', async () => {
    const f = agentTriage({ reask: 0, default: 'to-general' });
    await withFakeOpenAI(replies(f), async (fake) => {
      const run = await runSeed(openaiFlow(f, fake.url), INPUT, {
        dataDir: root.sub('default'),
        allowLocalModels: true,
      });
      expect(run.result.status, JSON.stringify(run.result.error)).toBe('completed');
      expect(ofType(run.events, 'handover.missing', 'triage')).toEqual([
        expect.objectContaining({ action: 'default', edgeId: 'to-general' }),
      ]);
      expect(speakers(run.events)).toEqual(['triage', 'generalist']);
    });
  });
});
