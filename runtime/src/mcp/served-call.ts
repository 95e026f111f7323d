/**
 * One call of a served flow's tool: starts the run, turns its events into progress
 * notifications (each naming its node) and log messages (at or above the client's level), asks
 * its human nodes through elicitation when the client can answer a form, and returns the final
 * answer. Declined or cancelled forms end the run by name (`human_declined`,
 * `human_cancelled`); a client that cannot answer gets `human_input_required`. The caller's
 * cancellation cancels the run. Shared by `switchboard mcp FLOW` and `/mcp` of `switchboard serve`.
 */
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type CallToolResult,
  type ElicitRequestFormParams,
  ElicitResultSchema,
  type LoggingLevel,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { Flow, RunEvent } from '@switchboard/schemas';
import type { RunCommand, RunResult } from '../engine/types.js';
import { answerOf, elicitationForm, type HumanAsk, humanAskOf } from './served-human.js';
import { atOrAbove, logLineOf } from './served-log.js';

/** A run started for a call: the engine's handle, or a run of the server's run manager. */
export interface ServedRun {
  runId: string;
  send(cmd: RunCommand): void;
  result: Promise<RunResult>;
}

export interface ServedRunHooks {
  /** Aborted when the caller cancels the call (or its connection closes). */
  signal: AbortSignal;
  /** Every event of the run, in seq order. */
  onEvent(e: RunEvent): void;
}

export type StartServedRun = (flow: Flow, input: unknown, hooks: ServedRunHooks) => Promise<ServedRun>;

/** What one MCP session knows about its client. */
export interface CallSession {
  canElicit(): boolean;
  logLevel(): LoggingLevel;
}

export type CallExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const FINAL_EVENTS: ReadonlySet<string> = new Set([
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.interrupted',
]);
/** How long a settled result waits for the run's final event before it goes out anyway. */
const END_WAIT_MS = 2_000;

/** One short line per run event worth showing as progress, naming the node it happened on. */
export function progressLine(e: RunEvent): string | undefined {
  const on = e.nodeId ? ` ${e.nodeId}` : '';
  switch (e.type) {
    case 'run.started':
    case 'node.started':
    case 'node.completed':
    case 'turn.started':
    case 'handover':
    case 'decision':
      return `${e.type}${on}`;
    case 'tool.called':
      return `tool.called${on}: ${e.tool}`;
    case 'node.failed':
      return `node.failed${on}: ${e.error.message}`;
    default:
      return undefined;
  }
}

/** A person may take long; the node's own timeout, when it has one, ends the wait first. */
const ELICIT_TIMEOUT_MS = 24 * 60 * 60 * 1000;

export async function callServedFlow(p: {
  flow: Flow;
  input: unknown;
  progressToken: string | number | undefined;
  extra: CallExtra;
  session: CallSession;
  start: StartServedRun;
}): Promise<{ result: CallToolResult; run: RunResult }> {
  const { flow, extra, session } = p;
  let step = 0;
  // Human nodes that asked and have not been answered yet (an answer supplied up front is
  // taken in the same synchronous step, so it is known by the next microtask).
  const waiting = new Set<string>();
  const callDone = new AbortController();
  let run: ServedRun | undefined;
  const early: RunEvent[] = [];
  const failRun = (code: string, message: string) => run?.send({ type: 'fail', code, message });

  // Kept until the result goes out: a client drops progress that arrives after the response.
  const sending = new Set<Promise<void>>();
  const notify = (method: 'notifications/progress' | 'notifications/message', params: object) => {
    const p = extra
      .sendNotification({ method, params } as ServerNotification)
      .catch(() => {})
      .finally(() => sending.delete(p));
    sending.add(p);
  };

  const ask = async (h: HumanAsk): Promise<void> => {
    const what = `human node "${h.nodeId}" (${JSON.stringify(h.question.slice(0, 200))})`;
    if (!session.canElicit()) {
      failRun(
        'human_input_required',
        `${what} needs an answer and the MCP client did not declare the elicitation capability, so nobody can be asked`,
      );
      return;
    }
    const form = elicitationForm(h);
    let res: { action: string; content?: unknown };
    try {
      res = await extra.sendRequest(
        { method: 'elicitation/create', params: { mode: 'form', ...form } as ElicitRequestFormParams },
        ElicitResultSchema,
        { signal: callDone.signal, timeout: ELICIT_TIMEOUT_MS },
      );
    } catch (e) {
      if (callDone.signal.aborted) return;
      failRun('human_input_failed', `asking ${what} through MCP elicitation failed: ${(e as Error).message}`);
      return;
    }
    if (!waiting.has(h.nodeId)) return;
    // A tool's question: its answer, whatever it is, goes back to the tool, not the run.
    if (h.form && res.action !== 'accept') {
      run?.send({
        type: 'answer',
        nodeId: h.nodeId,
        answer: res.action === 'decline' ? 'decline' : 'cancel',
      });
      return;
    }
    if (res.action === 'decline')
      return failRun('human_declined', `the MCP client declined to answer ${what}`);
    if (res.action !== 'accept')
      return failRun('human_cancelled', `the MCP client cancelled the question of ${what}`);
    const a = answerOf(h, res.content);
    if ('problem' in a)
      return failRun('human_answer_invalid', `the answer to ${what} does not fit its form: ${a.problem}`);
    run?.send({ type: 'answer', nodeId: h.nodeId, answer: a.answer });
  };

  // The run's result can settle before its last events reach `onEvent` (they are delivered in
  // batches): the result waits for the run's own final event, so no progress trails it.
  let seenEnd: () => void = () => {};
  const ended = new Promise<void>((res) => {
    seenEnd = res;
  });
  const handle = (e: RunEvent) => {
    if (!e.parentRunId && FINAL_EVENTS.has(e.type)) seenEnd();
    if (p.progressToken !== undefined && !e.parentRunId) {
      const line = progressLine(e);
      if (line) {
        step++;
        notify('notifications/progress', { progressToken: p.progressToken, progress: step, message: line });
      }
    }
    const log = logLineOf(e);
    if (log && atOrAbove(log.level, session.logLevel()))
      notify('notifications/message', { level: log.level, logger: `switchboard/${flow.id}`, data: log.data });
    if (e.type === 'input.requested') {
      const h = humanAskOf(flow, e);
      if (!h) return;
      waiting.add(h.nodeId);
      queueMicrotask(() => {
        if (waiting.has(h.nodeId)) void ask(h);
      });
    } else if (e.type === 'input.received' && e.nodeId !== undefined) waiting.delete(e.nodeId);
  };

  run = await p.start(flow, p.input, {
    signal: extra.signal,
    onEvent: (e) => {
      if (run) handle(e);
      else early.push(e);
    },
  });
  for (const e of early.splice(0)) handle(e);
  try {
    const r = await run.result;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([ended, new Promise<void>((res) => (timer = setTimeout(res, END_WAIT_MS)))]);
    clearTimeout(timer);
    await Promise.all([...sending]);
    return { result: toolResultOf(r), run: r };
  } finally {
    callDone.abort();
  }
}

function toolResultOf(result: RunResult): CallToolResult {
  if (result.status === 'completed') {
    const out = result.output;
    return {
      content: [{ type: 'text', text: typeof out === 'string' ? out : JSON.stringify(out, null, 2) }],
      ...(out && typeof out === 'object' && !Array.isArray(out)
        ? { structuredContent: out as Record<string, unknown> }
        : {}),
    };
  }
  return {
    content: [
      {
        type: 'text',
        text: `run ${result.status}${result.error ? `: ${result.error.code}: ${result.error.message}` : ''}`,
      },
    ],
    isError: true,
  };
}
