/**
 * Record and replay: each shipped example with an example input is run through the `openai`
 * provider against the fake OpenAI-compatible server with `switchboard run --record`; the server
 * is then stopped and `switchboard replay` re-executes the run from the cassette alone: the events
 * are identical to the recorded ones except timestamps and run ids. A changed prompt makes the
 * replay fail with a `cassette_miss` naming the node and the first difference.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { afterAll, describe, expect, it } from 'vitest';
import { readCassette } from '../../runtime/src/cassette/file.js';
import { replayCassette } from '../../runtime/src/cassette/replay-run.js';
import { cannedReplies, withFakeOpenAI } from '../seeds/helpers.js';
import { cli } from '../support/cli.js';

const FLOWS = fileURLToPath(new URL('../../flows/', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sb-replay-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Example {
  input: string;
  answers?: Record<string, string>;
}
const examples = [
  'support-triage',
  'roboco',
  'ironbox',
  'agent-ops-room',
  'common-ground',
  'research-desk',
].map((name) => {
  const flow = JSON.parse(readFileSync(join(FLOWS, `${name}.json`), 'utf8')) as Flow;
  const ex = (flow.metadata as { examples: Example[] }).examples[0]!;
  return { name, flow, ex };
});

/** Events as the test sees them, independently of the replayer's own comparison: no `ts`, run ids numbered. */
function strip(events: readonly RunEvent[]): unknown[] {
  const ids = new Map<string, string>();
  const id = (v: string) => {
    if (!ids.has(v)) ids.set(v, `r${ids.size}`);
    return ids.get(v)!;
  };
  return events.map((e) => {
    const { ts: _ts, ...o } = e as RunEvent & Record<string, unknown>;
    o.runId = id(e.runId);
    if (typeof o.parentRunId === 'string') o.parentRunId = id(o.parentRunId);
    // The replay answers in place of the recorded endpoint (see cassette/compare.ts).
    if (o.type === 'model.request') {
      Reflect.deleteProperty(o, 'provider');
      Reflect.deleteProperty(o, 'modelId');
    }
    return o;
  });
}

process.env.OPENAI_API_KEY ??= 'sk-fake';

async function record(
  name: string,
  flow: Flow,
  ex: Example,
  label = name,
): Promise<{ cassette: string; events: RunEvent[] }> {
  const cassette = join(dir, `${label}.cassette.json`);
  const answers = join(dir, `${label}.answers.json`);
  writeFileSync(answers, JSON.stringify(ex.answers ?? {}));
  let events: RunEvent[] = [];
  await withFakeOpenAI(cannedReplies(flow), async (fake) => {
    const r = await cli(
      'run',
      join(FLOWS, `${name}.json`),
      '--input',
      ex.input,
      '--answers',
      answers,
      ...Object.keys(flow.models).flatMap((m) => ['--model', `${m}=${fake.url}`]),
      '--events',
      'jsonl',
      '--record',
      cassette,
    );
    expect(r.code, r.err).toBe(0);
    events = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as RunEvent);
    expect(events.some((e) => e.type === 'model.completed' && !e.scripted)).toBe(true);
  });
  return { cassette, events };
}

describe('switchboard run --record / switchboard replay', () => {
  it.each(examples)(
    '$name: the replay with the model server stopped gives the recorded events',
    async ({ name, flow, ex }) => {
      const { cassette, events } = await record(name, flow, ex);
      // The fake server is closed now: any model request over the network would fail.
      const r = await cli('replay', cassette);
      expect(r.code, r.err + r.out).toBe(0);
      expect(r.out).toContain('replay matches the recording');

      const c = await readCassette(cassette);
      if (!c.ok) throw new Error(c.message);
      expect(c.cassette.flow.models.default!.provider).toBe('scripted'); // the flow as written, no endpoint
      const replay = await replayCassette(c.cassette);
      expect(replay.result.status).toBe('completed');
      expect(strip(replay.events)).toEqual(strip(events));
      expect(statSync(cassette).size).toBeGreaterThan(0);
    },
  );

  it('a changed prompt fails the replay with a cassette_miss naming the node and the difference', async () => {
    const { flow, ex } = examples[0]!;
    const { cassette } = await record('support-triage', flow, ex, 'support-triage-2');
    const edited = structuredClone(flow);
    const writer = edited.nodes.find((n) => n.id === 'refund-writer')!;
    (writer.config.prompt as Array<{ text: string }>)[0]!.text += ' Be very formal.';
    const file = join(dir, 'edited.json');
    writeFileSync(file, JSON.stringify(edited));

    const r = await cli('replay', cassette, '--flow', file);
    expect(r.code).toBe(1);
    expect(r.err).toContain('cassette_miss at node "refund-writer"');
    expect(r.err).toContain('first difference at messages[0].content');
    expect(r.err).toContain('Never repeat card numbers. Be very formal.');

    const j = await cli('replay', cassette, '--flow', file, '--json');
    expect(j.code).toBe(1);
    const out = JSON.parse(j.out);
    expect(out.error).toMatchObject({ code: 'cassette_miss', kind: 'model', nodeId: 'refund-writer' });
    expect(out.error.difference.path).toBe('messages[0].content');

    // The unedited flow still replays, and a broken cassette is a usage error.
    expect((await cli('replay', cassette)).code).toBe(0);
    writeFileSync(join(dir, 'bad.cassette.json'), '{"format":"switchboard-cassette","version":1}');
    const bad = await cli('replay', join(dir, 'bad.cassette.json'));
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('/flow');
  });
});
