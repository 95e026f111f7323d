/**
 * Wraps a ToolHost so every call goes through the run's tool journal. A resumed run replays
 * the turn that was cut short; its tool calls are matched, in order, against the calls made
 * since the checkpoint it resumed from: a call that finished gets its recorded result back
 * without running again, a call that was in flight is answered `maybe-executed` — the model
 * (or script) sees that and decides — instead of being repeated blindly.
 */
import { createHash } from 'node:crypto';
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

export interface JournalState {
  journal: ToolJournal;
  /** Seq of the checkpoint the run continues from (0 before the first). */
  checkpointSeq: number;
  /** Calls made since that checkpoint in an earlier process, not yet replayed. */
  replay: JournalCall[];
}

export function journalState(journal: ToolJournal, resumedFromSeq: number | undefined): JournalState {
  const replay =
    resumedFromSeq === undefined ? [] : journal.calls.filter((c) => c.intent.cp === resumedFromSeq);
  return { journal, checkpointSeq: resumedFromSeq ?? 0, replay };
}

export function journaledTools(inner: ToolHost, st: JournalState): ToolHost {
  const wrap = (h: ToolHandle, ctx: ToolHostContext): ToolHandle => ({
    ...h,
    call: async (args, options) => {
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
      const intent = await st.journal.intent(h.name, key, st.checkpointSeq);
      let result: ToolResult;
      try {
        result = await h.call(args, options);
      } catch (e) {
        // A failure is an outcome too: a replay reports it instead of trying again.
        await st.journal.done(intent.n, { content: String((e as Error)?.message ?? e), isError: true });
        throw e;
      }
      await st.journal.done(intent.n, result);
      return result;
    },
  });
  return {
    toolsFor: async (agentNodeId, ctx) => (await inner.toolsFor(agentNodeId, ctx)).map((h) => wrap(h, ctx)),
    release: (runId) => inner.release(runId),
  };
}
