/** The shipped examples stream: their scripted text replies come as pieces (model.delta), offline. */
import { readdirSync } from 'node:fs';
import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { FLOWS_DIR, loadFlow, runSeed, seedSuite } from './helpers.js';

const names = readdirSync(FLOWS_DIR)
  .filter((f) => f.endsWith('.json') && !f.endsWith('.tests.json'))
  .map((f) => f.slice(0, -5));

describe('scripted replies of the examples stream', () => {
  it.each(names)('%s: every text reply has pieces that make up its text', (name) => {
    const flow = loadFlow(name);
    let texts = 0;
    for (const m of Object.values(flow.models)) {
      for (const raw of (m as { script?: unknown[] }).script ?? []) {
        const e = raw as { text?: string; deltas?: string[] };
        if (typeof raw === 'string') throw new Error(`${name}: a plain string entry cannot stream`);
        if (typeof e.text !== 'string' || e.text === '') continue;
        texts++;
        expect(e.deltas, `${name}: ${e.text.slice(0, 40)}`).toBeDefined();
        // A reply of more than a few words comes in several pieces.
        if (e.text.split(/\s+/).length > 3) expect(e.deltas!.length).toBeGreaterThan(1);
        expect(e.deltas!.join('')).toBe(e.text);
      }
    }
    expect(texts).toBeGreaterThan(0);
  });

  const { flow, root } = seedSuite('support-triage', 'streaming');
  it('support-triage at a pace: the refund reply arrives on its node piece by piece, before it is complete', async () => {
    const paced = structuredClone(flow);
    for (const m of Object.values(paced.models)) (m as { latencyMs?: number }).latencyMs = 60;
    const run = await runSeed(paced, 'I was charged twice for invoice INV-1042', {
      dataDir: root.sub('paced'),
      answers: { approval: 'yes' },
    });
    expect(run.result.status).toBe('completed');
    const of = (type: string) => run.events.filter((e) => e.type === type && e.nodeId === 'refund-writer');
    const deltas = of('model.delta') as Array<RunEvent & { text: string }>;
    const done = of('model.completed')[0] as RunEvent & { text: string };
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.map((d) => d.text).join('')).toBe(done.text);
    // Spread over the reply's time, not all in the instant it completes.
    expect(deltas[0]!.ts).toBeLessThan(done.ts);
  });
});
