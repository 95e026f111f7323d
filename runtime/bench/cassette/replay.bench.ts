/**
 * Replay speed against the original run, and cassette size per turn: a chain of N agents
 * (default 100) is run through the `openai` provider against the fake OpenAI-compatible server
 * while recording, then replayed from the cassette with the server stopped.
 *
 *   node --conditions=source --import tsx runtime/bench/cassette/replay.bench.ts [N]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { writeCassette } from '../../src/cassette/file.js';
import { CassetteRecorder } from '../../src/cassette/record.js';
import { replayCassette } from '../../src/cassette/replay-run.js';
import { runFlow } from '../../src/engine/index.js';
import { chain } from '../../src/engine/testing/index.js';
import { startFakeOpenAIServer } from '../../src/models/testing/fake-openai-server.js';

const n = Number(process.argv[2] ?? 100);
const dir = mkdtempSync(join(tmpdir(), 'sb-bench-cassette-'));
const flow = chain(n);
const fake = await startFakeOpenAIServer({ fallback: { text: 'ok, done with my part' } });
const live = structuredClone(flow);
live.models.default = {
  provider: 'openai',
  model: 'default',
  baseURL: fake.url,
  apiKey: '${env:OPENAI_API_KEY}',
};
process.env.OPENAI_API_KEY ??= 'sk-bench';

const recorder = new CassetteRecorder();
const events: RunEvent[] = [];
let t0 = performance.now();
const result = await runFlow(live, 'go', {
  models: recorder.wrapModels(),
  allowLocalModels: true,
  onEvent: (e) => events.push(e),
}).result;
const recordMs = performance.now() - t0;
await fake.close();
if (result.status !== 'completed')
  throw new Error(`the recorded run ${result.status}: ${result.error?.message}`);
const file = join(dir, 'chain.cassette.json');
const cassette = recorder.cassette(flow, 'go', events, result);
await writeCassette(file, cassette);
const bytes = statSync(file).size;

const replays: number[] = [];
let same = true;
for (let i = 0; i < 5; i++) {
  t0 = performance.now();
  const r = await replayCassette(cassette);
  replays.push(performance.now() - t0);
  same &&= r.comparison.same && !r.miss;
}
replays.sort((a, b) => a - b);
const median = replays[2]!;
console.log(
  JSON.stringify(
    {
      turns: n,
      recordedRunMs: Math.round(recordMs),
      replayMsMedianOf5: Math.round(median),
      speedup: Number((recordMs / median).toFixed(1)),
      replayMatches: same,
      cassetteBytes: bytes,
      bytesPerTurn: Math.round(bytes / n),
      modelCalls: cassette.models.length,
      events: events.length,
    },
    null,
    2,
  ),
);
rmSync(dir, { recursive: true, force: true });
