/**
 * Parallel branches and checkpoints: one branch's turn ends while another branch's model call
 * is in flight, then the run's host stops (a server killed, a worker handing the run back).
 * The next host resumes from the last checkpoint handed over, as run-manager.ts and
 * redis/run-executor.ts do. A checkpoint cut there would hold the model provider's state from
 * after the open turn's replies while its position still names that turn's node: the resumed
 * branch would replay its turn against a script moved past it (`model_script_exhausted`), and
 * its tool calls, journaled under an older checkpoint, would run again.
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
import { type CallJournal, journaledTools, journalState } from './journaled-tools.js';

/** Two branches, each calling a tool; p1's last reply is slow, so p2's turn ends inside it. */
function parallel(slowMs: number): Flow {
  return flow(
    [
      node('start', 'start'),
      agent('p1'),
      agent('p2'),
      agent('joiner'),
      node('t', 'tool', { server: 'fixture' }),
      node('end', 'end'),
    ],
    [
      edge('start', 'p1'),
      edge('start', 'p2'),
      edge('p1', 'joiner'),
      edge('p2', 'joiner'),
      edge('joiner', 'end'),
      edge('t', 'p1', 'tools'),
      edge('t', 'p2', 'tools'),
    ],
    [
      { node: 'p1', toolCalls: [{ name: 'count', args: { k: 'p1' } }] },
      { node: 'p1', text: 'one', latencyMs: slowMs },
      { node: 'p2', toolCalls: [{ name: 'count', args: { k: 'p2' } }], latencyMs: 10 },
      { node: 'p2', text: 'two' },
      { node: 'joiner', text: 'joined' },
    ],
    { mcpServers: { fixture: { builtin: 'state' } } },
  );
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

/** One host of the run: events, the last checkpoint (kept as JSON, as hosts write them), the journal. */
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
      watch?.(e);
    },
    // As the hosts do: the replay list lasts until the replayed turn that calls tools is over.
    checkpoint: (c) => {
      if (called) js.replay = [];
      called = false;
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
    })
    .sort();

describe('a checkpoint while a parallel branch is inside its turn', () => {
  it("the next host replays the open turn once, with the script's same replies and each tool call once", async () => {
    const plain = await collectRun(parallel(0), 'go', {
      tools: new MemoryToolHost(parallel(0), { fixture: { count: { run: () => 'counted' } } }),
    });
    expect(plain.result, JSON.stringify(plain.result.error)).toMatchObject({
      status: 'completed',
      output: 'joined',
    });
    const plainRequests = plain.events.filter((e) => e.type === 'model.request').length;

    // p1's reply takes 400 ms: p2's turn (10 ms, a tool call, a reply) ends well inside it.
    const f = parallel(400);
    const journal = new MemoryJournal();
    const executed: string[] = [];
    let onCut!: () => void;
    const cut = new Promise<void>((r) => {
      onCut = r;
    });
    const first = host(f, journal, executed, undefined, (e) => {
      if (e.type === 'turn.completed' && e.nodeId === 'p2') setTimeout(onCut, 30);
    });
    await cut;
    // p1's model call is still in flight: the host stops without writing anything more.
    expect(first.events.some((e) => e.type === 'turn.completed' && e.nodeId === 'p1')).toBe(false);
    const cp = JSON.parse(first.checkpoint()!) as RunCheckpoint;
    const lastSeq = first.events.at(-1)!.seq;
    first.abort.abort();
    await first.handle.result;

    const second = host(f, journal, executed, { cp, lastSeq });
    const r = await second.handle.result;
    expect(r, JSON.stringify(r.error)).toMatchObject({ status: 'completed', output: 'joined' });
    assertSeqContiguous(second.events, lastSeq);
    // The transcript as far as the checkpoint, then the second host's: the undisturbed one.
    const kept = first.events.filter((e) => e.seq <= cp.seq);
    expect([...messages(kept), ...messages(second.events)].sort()).toEqual(messages(plain.events));
    // Each scripted reply asked for once over the run's life as its log keeps it.
    const requests = [...kept, ...second.events].filter((e) => e.type === 'model.request').length;
    expect(requests).toBe(plainRequests);
    expect(executed.sort()).toEqual(['p1', 'p2']);
  });
});
