/**
 * A pause that lands inside a step (a model call in flight), then the run's host stops (a worker
 * handing the run back, a server restarting): another host continues from the last checkpoint
 * handed over, as run-manager.ts and redis/run-executor.ts do — replayed turn, tool calls
 * answered from the journal, paused again. The checkpoint must not hold the model provider's
 * state from after the step's replies while its position still names the step's node: the
 * replayed step would then get the next reply (a tool call skipped, or `model_script_exhausted`).
 */
import type { Flow, RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { runFlow } from '../engine/index.js';
import {
  agent,
  assertSeqContiguous,
  collectRun,
  edge,
  flow,
  MemoryToolHost,
  node,
} from '../engine/testing/index.js';
import type { RunCheckpoint } from '../engine/types.js';
import type { JournalCall, JournalDone, JournalIntent } from '../store/tool-journal.js';
import { type CallJournal, endsStepTurn, journaledTools, journalState, teamIds } from './journaled-tools.js';

/** The kill battery's flow (test/crash/fixture.ts): tool calls by the planner, alice and the closer. */
function battery(latencyMs: number): Flow {
  const f = flow(
    [
      node('start', 'start'),
      agent('planner'),
      node('room', 'team', { mode: 'groupChat', termination: { maxTurns: 4 } }),
      agent('alice', {}, { parent: 'room' }),
      agent('bob', {}, { parent: 'room' }),
      agent('closer'),
      node('t', 'tool', { server: 'fixture' }),
      node('end', 'end'),
    ],
    [
      edge('start', 'planner'),
      edge('planner', 'room'),
      edge('room', 'closer'),
      edge('closer', 'end'),
      edge('t', 'planner', 'tools'),
      edge('t', 'alice', 'tools'),
      edge('t', 'closer', 'tools'),
    ],
    [],
    { mcpServers: { fixture: { builtin: 'state' } } },
  );
  return {
    ...f,
    models: {
      default: {
        provider: 'scripted',
        latencyMs,
        script: [
          { node: 'planner', toolCalls: [{ name: 'count', args: { k: 'planner' } }] },
          { node: 'planner', text: 'plan' },
          { node: 'alice', toolCalls: [{ name: 'count', args: { k: 'alice' } }] },
          { node: 'alice', text: 'a1' },
          { node: 'bob', text: 'b1' },
          { node: 'alice', text: 'a2' },
          { node: 'bob', text: 'b2' },
          { node: 'closer', toolCalls: [{ name: 'count', args: { k: 'closer' } }] },
          { node: 'closer', text: 'closed' },
        ],
      },
    },
  };
}

class MemoryJournal implements CallJournal {
  readonly calls: JournalCall[] = [];
  async intent(tool: string, args: string, cp: number): Promise<JournalIntent> {
    const intent: JournalIntent = { k: 'intent', n: this.calls.length + 1, tool, args, cp };
    this.calls.push({ intent });
    return intent;
  }
  async done(n: number, result: JournalDone['result']): Promise<void> {
    this.calls[n - 1]!.done = { k: 'done', n, result };
  }
}

const MODEL_CALLS = 9;

/** One host of the run: events, checkpoints (kept as JSON, as hosts write them), the journal. */
function host(
  f: Flow,
  journal: MemoryJournal,
  executed: string[],
  resume?: { cp: RunCheckpoint; lastSeq: number },
  watch?: (e: RunEvent) => void,
) {
  const tools = new MemoryToolHost(f, {
    fixture: {
      count: {
        run: async (args) => {
          executed.push(String(args.k));
          await new Promise((r) => setTimeout(r, 5));
          return 'counted';
        },
      },
    },
  });
  const js = journalState(journal, resume?.cp.seq);
  let called = false;
  let turned = false;
  const teams = teamIds(f);
  js.onCall = () => {
    called = true;
  };
  const events: RunEvent[] = [];
  let checkpoint: string | undefined;
  const abort = new AbortController();
  const handle = runFlow(f, 'go', {
    runId: 'r1',
    tools: journaledTools(tools, js),
    signal: abort.signal,
    onEvent: (e) => {
      events.push(e);
      if (endsStepTurn(e, 'r1', teams)) turned = true;
      watch?.(e);
    },
    // As redis/run-executor.ts does: the replay list lasts until the replayed step is over,
    // and no checkpoint is kept before then.
    checkpoint: (c) => {
      if (called || turned) js.replay = [];
      called = false;
      turned = false;
      if (js.replay.length > 0) return undefined;
      checkpoint = JSON.stringify(c);
      js.checkpointSeq = c.seq;
      return undefined;
    },
    ...(resume ? { resume: { ...resume.cp, seq: resume.lastSeq } } : {}),
  });
  return { handle, events, abort, checkpoint: () => checkpoint };
}

const messages = (evs: readonly RunEvent[]) =>
  evs
    .filter((e) => e.type === 'message')
    .map((e) => {
      const m = (e as { message: { author: string; content: string } }).message;
      return `${m.author}: ${m.content}`;
    });

describe('a pause inside a step, then the host stops', () => {
  for (let k = 1; k <= MODEL_CALLS; k++)
    it(`paused during model call ${k}: the next host replays the step with the same replies, each tool once`, async () => {
      const plain = await collectRun(battery(0), 'go', {
        tools: new MemoryToolHost(battery(0), { fixture: { count: { run: () => 'counted' } } }),
      });
      expect(plain.result, JSON.stringify(plain.result.error)).toMatchObject({
        status: 'completed',
        output: 'closed',
      });

      const f = battery(40);
      const journal = new MemoryJournal();
      const executed: string[] = [];
      let requests = 0;
      let onPaused!: () => void;
      const paused = new Promise<void>((r) => {
        onPaused = r;
      });
      const first = host(f, journal, executed, undefined, (e) => {
        // The pause lands while the k-th model call is in flight (40 ms of latency).
        if (e.type === 'model.request' && ++requests === k)
          setTimeout(() => first.handle.send({ type: 'pause' }), 10);
        if (e.type === 'run.paused') onPaused();
      });
      await paused;
      // Stopped without writing anything more (a worker handing the run back, a server killed).
      const cp = JSON.parse(first.checkpoint()!) as RunCheckpoint;
      const lastSeq = first.events.at(-1)!.seq;
      first.abort.abort();
      await first.handle.result;

      const second = host(f, journal, executed, { cp, lastSeq });
      // Paused when its host stopped: the next one pauses it again, then it is resumed.
      second.handle.send({ type: 'pause' });
      const resumed = setInterval(() => {
        if (second.events.some((e) => e.type === 'run.paused')) {
          clearInterval(resumed);
          second.handle.send({ type: 'resume' });
        }
      }, 5);
      const r = await second.handle.result;
      clearInterval(resumed);
      expect(r, JSON.stringify(r.error)).toMatchObject({ status: 'completed', output: 'closed' });
      assertSeqContiguous(second.events, lastSeq);
      // The transcript as far as the checkpoint, then the second host's: the undisturbed one.
      const kept = first.events.filter((e) => e.seq <= cp.seq);
      expect([...messages(kept), ...messages(second.events)]).toEqual(messages(plain.events));
      expect(executed.sort()).toEqual(['alice', 'closer', 'planner']);
    });
});
