/**
 * The seed flows without a test file of their own, through the `openai` provider against the fake
 * OpenAI-compatible server: every model call is in the log as a `model.request` whose messages are
 * what the server received. (The other seeds check the same in their own files.)
 */
import { describe, expect, it } from 'vitest';
import {
  cannedReplies,
  expectRequestsMatch,
  openaiFlow,
  runSeed,
  seedSuite,
  withFakeOpenAI,
} from './helpers.js';

const triage = seedSuite('support-triage', 'requests-triage');
const desk = seedSuite('research-desk', 'requests-desk');

describe('model.request events equal what the model endpoint received', () => {
  it('support-triage: every route (billing with approval, tech chat, generalist)', async () => {
    const { flow, root } = triage;
    await withFakeOpenAI(cannedReplies(flow), async (fake) => {
      const logs = [];
      for (const input of [
        'I was charged twice for invoice INV-1042, please refund',
        'The app crashes on start since yesterday',
        'Do you have an office in Lyon?',
      ]) {
        const run = await runSeed(openaiFlow(flow, fake.url), input, {
          dataDir: root.sub('openai'),
          answers: { approval: 'yes' },
          allowLocalModels: true,
        });
        expect(run.result.status, JSON.stringify(run.result.error)).toBe('completed');
        logs.push(run.events);
      }
      expectRequestsMatch(logs, fake);
    });
  });

  it('research-desk', async () => {
    const { flow, root } = desk;
    await withFakeOpenAI(cannedReplies(flow), async (fake) => {
      const run = await runSeed(
        openaiFlow(flow, fake.url),
        'What limits the range of heat pumps in winter?',
        {
          dataDir: root.sub('openai'),
          answers: { publish: 'Looks good.' },
          allowLocalModels: true,
        },
      );
      expect(run.result.status, JSON.stringify(run.result.error)).toBe('completed');
      expectRequestsMatch([run.events], fake);
    });
  });
});
