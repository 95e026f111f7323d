/**
 * Wraps a ToolHost so every call goes through the run's tool journal. A resumed run replays
 * the turn that was cut short; its tool calls are matched, in order, against the calls made
 * since the checkpoint it resumed from: a call that finished gets its recorded result back
 * without running again, a call that was in flight is answered `maybe-executed` — the model
 * (or script) sees that and decides — instead of being repeated blindly.
 *
 * An intent names the last checkpoint written before it (`checkpointSeq`) and is written only
 * once that checkpoint is durable (`durable`): checkpoints reach the disk in the background,
 * and a journal entry naming one that a crash could still lose would not be replayed after a
 * resume from the one before it — the call would run twice. The host writes a checkpoint
 * after every turn that called a tool (`onCall` tells it), so the calls one checkpoint names
 * all belong to one turn (with parallel branches, to the turns open together: the engine cuts
 * a checkpoint only when no branch is inside a turn, so all of them replay); turns without I/O between that checkpoint and this turn are not
 * written and are replayed first, which is why the replay list lasts until the replayed turn
 * that calls tools is over (the host clears it then), not just until the next checkpoint.
 */
import { createHash } from 'node:crypto';
import type { Flow, RunEvent } from '@switchboard/schemas';
import type { JournalCall, ToolJournal } from '../store/tool-journal.js';
import type { ToolHandle, ToolHost, ToolHostContext, ToolResult } from '../tools/types.js';

/** JSON with sorted keys, so equal arguments hash equally. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

export function argsHash(args: unknown): string {
  return createHash('sha256').update(canonical(args)).digest('base64url').slice(0, 22);
}

export const MAYBE_EXECUTED = 'maybe-executed';

export function maybeExecutedResult(tool: string, n: number): ToolResult {
  return {
    isError: true,
    content:
      `${MAYBE_EXECUTED}: the server stopped while this call to ${tool} was in flight, so it may or ` +
      'may not have taken effect. It was not repeated. Check its effect before calling it again.',
    structured: { status: MAYBE_EXECUTED, tool, call: n },
  };
}

/** What the wrapper needs of a journal: the file one (store/tool-journal.ts) or a Redis one. */
export type CallJournal = Pick<ToolJournal, 'calls' | 'intent' | 'done'>;

export interface JournalState {
  journal: CallJournal;
  /** Seq of the checkpoint the run continues from (0 before the first). */
  checkpointSeq: number;
  /** Calls made since that checkpoint in an earlier process, not yet replayed. */
  replay: JournalCall[];
  /** Resolves once the checkpoint `checkpointSeq` names (and everything before it) is durable. */
  durable?: () => Promise<void>;
  /** Told of every call, replayed or not. */
  onCall?: () => void;
  /**
   * Told when the journal cannot be written: the call is not made (an intent that is not on
   * disk could not stop a repeat after a crash), and the run stops where its log stops.
   */
  onStoreError?: (e: unknown) => void;
}

/** The team nodes of a flow: their turns (an LLM choosing the next speaker) are not steps. */
export function teamIds(flow: Flow): ReadonlySet<string> {
  return new Set(flow.nodes.filter((n) => n.kind === 'team').map((n) => n.id));
}

/**
 * Whether an event ends the turn of a step of the run itself (not of a nested run, not a team
 * choosing its next speaker). A resumed run replays first the step it was cut in; once one of
 * its steps' turns is over, that replay is over, whether or not it made the same calls.
 */
export function endsStepTurn(ev: RunEvent, runId: string, teams: ReadonlySet<string>): boolean {
  return ev.type === 'turn.completed' && ev.runId === runId && !teams.has(ev.nodeId ?? '');
}

export function journalState(journal: CallJournal, resumedFromSeq: number | undefined): JournalState {
  const replay =
    resumedFromSeq === undefined ? [] : journal.calls.filter((c) => c.intent.cp === resumedFromSeq);
  return { journal, checkpointSeq: resumedFromSeq ?? 0, replay };
}

export function journaledTools(inner: ToolHost, st: JournalState): ToolHost {
  const wrap = (h: ToolHandle, ctx: ToolHostContext): ToolHandle => ({
    ...h,
    call: async (args, options) => {
      st.onCall?.();
      const key = argsHash(args);
      const i = st.replay.findIndex((c) => c.intent.tool === h.name && c.intent.args === key);
      if (i !== -1) {
        const [c] = st.replay.splice(i, 1);
        if (c!.done) return c!.done.result;
        ctx.emit?.({
          type: 'log',
          level: 'warn',
          text: `${MAYBE_EXECUTED}: tool ${h.name} (call ${c!.intent.n}) was in flight when the previous process stopped; not repeated`,
        });
        return maybeExecutedResult(h.name, c!.intent.n);
      }
      const cp = st.checkpointSeq;
      await st.durable?.();
      const journal = async <T>(write: () => Promise<T>): Promise<T> => {
        try {
          return await write();
        } catch (e) {
          st.onStoreError?.(e);
          throw e;
        }
      };
      const intent = await journal(() => st.journal.intent(h.name, key, cp));
      let result: ToolResult;
      try {
        result = await h.call(args, options);
      } catch (e) {
        // A failure is an outcome too: a replay reports it instead of trying again.
        const outcome = { content: String((e as Error)?.message ?? e), isError: true };
        await journal(() => st.journal.done(intent.n, outcome));
        throw e;
      }
      await journal(() => st.journal.done(intent.n, result));
      return result;
    },
  });
  return {
    toolsFor: async (agentNodeId, ctx) => (await inner.toolsFor(agentNodeId, ctx)).map((h) => wrap(h, ctx)),
    release: (runId) => inner.release(runId),
  };
}
