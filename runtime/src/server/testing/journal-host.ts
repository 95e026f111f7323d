/**
 * A run's host in memory for the engine-level resume tests (pause-midstep, parallel-checkpoint):
 * its events, the last checkpoint it kept (as JSON, as hosts write them) and its tool journal,
 * with the replay rule of redis/run-executor.ts (every checkpoint written; the replay list lasts
 * until the replayed step is over). A second host given the first one's checkpoint and journal
 * continues the run as the next worker or the restarted server does.
 */
import type { Flow, RunEvent } from '@switchboard/schemas';
import { runFlow } from '../../engine/index.js';
import { MemoryToolHost } from '../../engine/testing/index.js';
import type { RunCheckpoint } from '../../engine/types.js';
import type { JournalCall, JournalDone, JournalIntent } from '../../store/tool-journal.js';
import { type CallJournal, endsStepTurn, journaledTools, journalState, teamIds } from '../journaled-tools.js';

export class MemoryJournal implements CallJournal {
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

/** One host of the run: events, checkpoints (kept as JSON, as hosts write them), the journal. */
export function journalHost(
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

export const messages = (evs: readonly RunEvent[]) =>
  evs
    .filter((e) => e.type === 'message')
    .map((e) => {
      const m = (e as { message: { author: string; content: string } }).message;
      return `${m.author}: ${m.content}`;
    });
