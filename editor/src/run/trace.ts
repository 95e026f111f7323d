/**
 * A node's trace, from the run's events: each execution of the node (a turn) with what it was
 * sent (the resolved `model.request`), what came back, each tool call with its arguments, result
 * and time, a decider's choice and reason, observers' verdicts, retries and errors. Pure: the
 * trace panel renders it, each part copyable as JSON.
 */
import { RequestResolver, type ResolvedRequest, type RunEvent } from '@switchboard/schemas/core';

export type TracePartKind =
  | 'request'
  | 'reply'
  | 'tool'
  | 'decision'
  | 'observer'
  | 'retry'
  | 'error'
  | 'input'
  | 'log'
  | 'output'
  | 'pinned';

export interface TracePart {
  kind: TracePartKind;
  seq: number;
  /** One line saying what it is. */
  title: string;
  /** What "Copy as JSON" copies. */
  data: unknown;
}

export interface TraceTurn {
  /** Stable key: the seq that opened it. */
  key: number;
  /** The run's turn number, when the node bears turns. */
  turn?: number;
  status: 'running' | 'completed' | 'failed' | 'waiting';
  startedAt: number;
  endedAt?: number;
  parts: TracePart[];
}

type E = RunEvent & Record<string, unknown>;

function clip(s: string, n = 80): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n)}…` : one;
}

/**
 * The trace of `nodeId` in a run's events (seq order; `model.delta` may be left out).
 * `candidates`: the node's outgoing choices, shown with its decisions. `resolver`: one that has
 * seen (or will see) the same log, kept across calls so no request is resolved twice.
 */
export function nodeTrace(
  events: readonly RunEvent[],
  nodeId: string,
  candidates: string[] = [],
  resolver: RequestResolver = new RequestResolver(),
): TraceTurn[] {
  const turns: TraceTurn[] = [];
  let open: TraceTurn | undefined;
  const tools = new Map<string, TracePart>();
  const partOf = (e: E): TraceTurn => {
    if (open) return open;
    // Outside node.started … completed: an observer's own calls, or a team manager's.
    const t: TraceTurn = { key: e.seq, status: 'completed', startedAt: e.ts, endedAt: e.ts, parts: [] };
    if (typeof e.turn === 'number' && e.turn > 0) t.turn = e.turn;
    turns.push(t);
    return t;
  };
  const push = (e: E, p: Omit<TracePart, 'seq'>) => {
    const t = partOf(e);
    t.parts.push({ ...p, seq: e.seq });
    if (t !== open) t.endedAt = e.ts;
  };

  for (const raw of events) {
    const e = raw as E;
    // Every request is resolved, whoever made it: later ones refer to earlier ones' messages.
    const req = resolver.add(raw);
    const mine = e.nodeId === nodeId;
    const onMe = e.type === 'observer.fired' && e.target === nodeId && !mine;
    if (!mine && !onMe) continue;
    switch (e.type) {
      case 'node.started':
        open = { key: e.seq, status: 'running', startedAt: e.ts, parts: [] };
        turns.push(open);
        break;
      case 'node.completed':
        if (open) {
          open.status = 'completed';
          open.endedAt = e.ts;
        }
        if (e.output !== undefined) push(e, { kind: 'output', title: 'output', data: e.output });
        open = undefined;
        break;
      case 'node.failed': {
        const err = e.error as { code: string; message: string };
        push(e, { kind: 'error', title: `failed: ${err.code}: ${clip(err.message)}`, data: err });
        if (open) {
          open.status = 'failed';
          open.endedAt = e.ts;
        }
        open = undefined;
        break;
      }
      case 'turn.started':
        if (open) open.turn = e.turn as number;
        break;
      case 'node.pinned':
        push(e, {
          kind: 'pinned',
          title: `pinned: output of run ${String(e.fromRun)}, turn ${String(e.fromTurn)} (no model call)${e.stale ? ' · stale: the node changed since' : ''}`,
          data: { fromRun: e.fromRun, fromTurn: e.fromTurn, stale: e.stale === true, toolCalls: e.toolCalls },
        });
        break;
      case 'message':
        // A pinned turn calls no model: its message is the output it replays.
        if (open?.parts.some((p) => p.kind === 'pinned')) {
          const m = e.message as { content: string };
          push(e, {
            kind: 'reply',
            title: `pinned reply: ${clip(m.content) || '(no text)'}`,
            data: { text: m.content },
          });
        }
        break;
      case 'model.request': {
        const r = req as ResolvedRequest;
        const head = r.attempt > 1 || r.call > 1 ? ` (attempt ${r.attempt}, call ${r.call})` : '';
        push(e, {
          kind: 'request',
          title: `sent to ${r.model}${head}: ${r.messages.length} messages`,
          data: r,
        });
        break;
      }
      case 'model.completed': {
        const u = e.usage as { promptTokens: number; completionTokens: number } | undefined;
        const tokens = u ? ` · ${u.promptTokens} in / ${u.completionTokens} out` : '';
        push(e, {
          kind: 'reply',
          title: `reply${tokens}: ${clip(String(e.text)) || '(no text)'}`,
          data: { text: e.text, usage: e.usage, model: e.model, finishReason: e.finishReason },
        });
        break;
      }
      case 'tool.called': {
        const p: TracePart = {
          kind: 'tool',
          seq: e.seq,
          title: `tool ${String(e.tool)} …`,
          data: { callId: e.callId, tool: e.tool, args: e.args, startedAt: e.ts },
        };
        partOf(e).parts.push(p);
        tools.set(String(e.callId), p);
        break;
      }
      case 'tool.result': {
        const p = tools.get(String(e.callId));
        const d = (p?.data ?? {}) as Record<string, unknown>;
        const ms = typeof d.startedAt === 'number' ? e.ts - d.startedAt : undefined;
        const data = { ...d, result: e.result, isError: e.isError, ...(ms !== undefined ? { ms } : {}) };
        delete (data as { startedAt?: unknown }).startedAt;
        const title = `tool ${String(e.tool)}${e.isError ? ' failed' : ''}${ms !== undefined ? ` · ${ms} ms` : ''}`;
        if (p) {
          p.data = data;
          p.title = title;
        } else push(e, { kind: 'tool', title, data });
        break;
      }
      case 'tool.denied':
        push(e, { kind: 'tool', title: `tool ${String(e.tool)} denied: ${clip(String(e.reason))}`, data: e });
        break;
      case 'decision': {
        const choice = Array.isArray(e.choice) ? e.choice.join(', ') : String(e.choice);
        push(e, {
          kind: 'decision',
          title: `chose ${choice}: ${clip(String(e.reason))}`,
          data: { candidates, choice: e.choice, reason: e.reason },
        });
        break;
      }
      case 'observer.fired':
        push(e, {
          kind: 'observer',
          title: `${onMe ? `observer ${String(e.observer)}` : 'observed'} ${String(e.target ?? '')}: ${String(e.action)}`,
          data: { observer: e.observer, target: e.target, action: e.action, detail: e.detail },
        });
        break;
      case 'model.retry':
        push(e, {
          kind: 'retry',
          title: `model call retried (attempt ${String(e.attempt)}, after ${String(e.delayMs)} ms): ${clip(String(e.cause))}`,
          data: { attempt: e.attempt, delayMs: e.delayMs, cause: e.cause },
        });
        break;
      case 'log':
        push(e, { kind: e.level === 'warn' ? 'retry' : 'log', title: clip(String(e.text), 120), data: e });
        break;
      case 'input.requested':
        if (open) open.status = 'waiting';
        push(e, {
          kind: 'input',
          title: `asked: ${clip(String(e.question))}`,
          data: { question: e.question, options: e.options },
        });
        break;
      case 'input.received':
        if (open?.status === 'waiting') open.status = 'running';
        push(e, { kind: 'input', title: `answer: ${clip(String(e.answer))}`, data: { answer: e.answer } });
        break;
      default:
        break;
    }
  }
  return turns;
}
