/**
 * What the run panel shows of one run, folded from its events: status, whether its models are
 * scripted, the question a human node waits on, the output or error, and a transcript of
 * messages, streamed text, tool calls, decisions, observer firings and handovers.
 *
 * Pure and framework-free. `apply` takes one batch (one WebSocket frame) and returns a new
 * view when anything changed, so React re-renders once per frame, not once per event.
 */
import type { RunEvent } from '@switchboard/schemas';

export type RunPhase =
  | 'idle'
  | 'starting'
  | 'running'
  | 'paused'
  | 'waiting'
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'interrupted';

export const FINAL_PHASES: ReadonlySet<RunPhase> = new Set([
  'completed',
  'failed',
  'cancelled',
  'interrupted',
]);

export type EntryKind =
  | 'message'
  | 'stream'
  | 'tool'
  | 'decision'
  | 'observer'
  | 'handover'
  | 'input'
  | 'status'
  | 'error'
  | 'log';

export interface TranscriptEntry {
  /** Seq of the event that created the entry (unique within a run). */
  seq: number;
  kind: EntryKind;
  /** The event type that created it. */
  type: string;
  nodeId?: string;
  /** Who or what: an author, a tool name, an observer. */
  who?: string;
  text: string;
  /** A second line: a tool's result, a decision's reason. */
  detail?: string;
  tone?: 'ok' | 'error' | 'muted';
  /** Tool calls: the call id, to attach the result. */
  callId?: string;
  /** Set on entries of a delegated (nested) run. */
  nested?: boolean;
}

export interface WaitingInput {
  nodeId: string;
  question: string;
  options?: string[];
  seq: number;
}

export interface RunView {
  runId?: string;
  phase: RunPhase;
  scripted: boolean;
  entries: readonly TranscriptEntry[];
  /** Entries dropped from the front to keep the list bounded. */
  dropped: number;
  waiting?: WaitingInput;
  output?: unknown;
  error?: { code: string; message: string };
  pauseReason?: string;
  lastSeq: number;
  /** Events folded (streamed deltas included). */
  events: number;
  turns: number;
  tokens: number;
  activeNode?: string;
  activeEdge?: string;
}

export const EMPTY_VIEW: RunView = Object.freeze({
  phase: 'idle' as const,
  scripted: false,
  entries: [],
  dropped: 0,
  lastSeq: 0,
  events: 0,
  turns: 0,
  tokens: 0,
});

/** Text for a value of unknown shape, shortened for one line of the transcript. */
export function brief(v: unknown, max = 400): string {
  let s: string;
  if (typeof v === 'string') s = v;
  else {
    try {
      s = JSON.stringify(v) ?? String(v);
    } catch {
      s = String(v);
    }
  }
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

export interface FoldOptions {
  /** Most entries kept; older ones are dropped (counted in `dropped`). Default 2,000. */
  maxEntries?: number;
}

/**
 * Folds a batch of events of run `runId` into `view`. Events of nested runs (delegations) carry
 * their own `runId`; they add transcript entries but never change the top run's status.
 */
export function fold(
  view: RunView,
  runId: string,
  events: readonly RunEvent[],
  o: FoldOptions = {},
): RunView {
  if (events.length === 0) return view;
  const max = o.maxEntries ?? 2000;
  const v: RunView & { entries: TranscriptEntry[] } = { ...view, runId, entries: [...view.entries] };
  const entries = v.entries;
  /** Index of the streaming entry of a node, if one is open. */
  const streamAt = (nodeId: string | undefined) => {
    for (let i = entries.length - 1; i >= Math.max(0, entries.length - 50); i--) {
      const e = entries[i]!;
      if (e.kind === 'stream' && e.nodeId === nodeId) return i;
    }
    return -1;
  };
  const closeStream = (nodeId: string | undefined) => {
    const i = streamAt(nodeId);
    if (i !== -1) entries.splice(i, 1);
  };
  const push = (e: TranscriptEntry) => entries.push(e);

  for (const ev of events) {
    v.events++;
    if (ev.seq > v.lastSeq) v.lastSeq = ev.seq;
    if (ev.scripted) v.scripted = true;
    const top = ev.runId === runId;
    const nested = !top || undefined;
    const base = { seq: ev.seq, type: ev.type, nodeId: ev.nodeId, nested };
    switch (ev.type) {
      case 'run.started':
        if (top) {
          v.phase = 'running';
          v.pauseReason = undefined;
        } else push({ ...base, kind: 'status', text: 'delegated run started', tone: 'muted' });
        break;
      case 'run.paused':
        if (top) {
          v.phase = 'paused';
          v.pauseReason = ev.reason;
          push({ ...base, kind: 'status', text: `paused${ev.reason ? `: ${ev.reason}` : ''}` });
        }
        break;
      case 'run.resumed':
        if (top) {
          v.phase = 'running';
          v.pauseReason = undefined;
          push({
            ...base,
            kind: 'status',
            text: ev.fromCheckpoint ? 'resumed from its checkpoint' : 'resumed',
            tone: 'muted',
          });
        }
        break;
      case 'run.completed':
        if (top) {
          v.phase = 'completed';
          v.output = ev.output;
          v.waiting = undefined;
          v.activeNode = undefined;
          push({ ...base, kind: 'status', text: 'completed', detail: brief(ev.output, 2000), tone: 'ok' });
        } else push({ ...base, kind: 'status', text: 'delegated run completed', tone: 'muted' });
        break;
      case 'run.failed':
        if (top) {
          v.phase = 'failed';
          v.error = { code: ev.error.code, message: ev.error.message };
          v.waiting = undefined;
        }
        push({
          ...base,
          kind: 'error',
          text: `${top ? 'run' : 'delegated run'} failed: ${ev.error.message}`,
        });
        break;
      case 'run.cancelled':
        if (top) {
          v.phase = 'cancelled';
          v.waiting = undefined;
          push({ ...base, kind: 'status', text: `cancelled${ev.reason ? `: ${ev.reason}` : ''}` });
        }
        break;
      case 'run.interrupted':
        if (top) {
          v.phase = 'interrupted';
          v.waiting = undefined;
          push({ ...base, kind: 'error', text: `interrupted${ev.reason ? `: ${ev.reason}` : ''}` });
        }
        break;
      case 'node.started':
        v.activeNode = ev.nodeId;
        break;
      case 'node.failed':
        closeStream(ev.nodeId);
        push({ ...base, kind: 'error', text: ev.error.message, who: ev.error.code });
        break;
      case 'turn.completed':
        // A turn a resumed run replays is in the log already: counted once.
        if (ev.replayed) break;
        v.turns++;
        v.tokens += ev.usage.promptTokens + ev.usage.completionTokens;
        break;
      case 'model.delta': {
        const i = streamAt(ev.nodeId);
        if (i === -1) push({ ...base, kind: 'stream', text: ev.text });
        else entries[i] = { ...entries[i]!, text: entries[i]!.text + ev.text };
        break;
      }
      case 'model.completed':
        // The reply becomes a message (or a decision, a tool call); the streamed draft goes.
        closeStream(ev.nodeId);
        break;
      case 'model.retry':
        push({
          ...base,
          kind: 'log',
          text: `model call retried (attempt ${ev.attempt}): ${ev.cause}`,
          tone: 'muted',
        });
        break;
      case 'message':
        closeStream(ev.nodeId);
        push({
          ...base,
          kind: 'message',
          who: `${ev.message.author ?? ev.message.role}${ev.replayed ? ' (replayed)' : ''}`,
          text: ev.message.content,
        });
        break;
      case 'tool.called':
        push({ ...base, kind: 'tool', who: ev.tool, text: brief(ev.args, 300), callId: ev.callId });
        break;
      case 'tool.result': {
        let i = entries.length - 1;
        while (i >= 0 && !(entries[i]!.kind === 'tool' && entries[i]!.callId === ev.callId)) i--;
        const detail = `${ev.isError ? 'error: ' : '→ '}${brief(ev.result, 600)}`;
        if (i >= 0) entries[i] = { ...entries[i]!, detail, tone: ev.isError ? 'error' : undefined };
        else push({ ...base, kind: 'tool', who: ev.tool, text: '', detail, callId: ev.callId });
        break;
      }
      case 'tool.denied':
        push({ ...base, kind: 'tool', who: ev.tool, text: `denied: ${ev.reason}`, tone: 'error' });
        break;
      case 'tool.refused':
        push({
          ...base,
          kind: 'tool',
          who: ev.tool,
          text: `refused (${ev.error}): ${ev.reason}`,
          tone: 'error',
        });
        break;
      case 'tool.disabled':
        push({ ...base, kind: 'tool', who: ev.tool, text: `disabled: ${ev.reason}`, tone: 'error' });
        break;
      case 'handover':
        v.activeEdge = ev.edgeId;
        push({ ...base, kind: 'handover', text: `${ev.from} → ${ev.to}`, tone: 'muted' });
        break;
      case 'handover.missing':
        push({
          ...base,
          kind: 'handover',
          text: `${ev.nodeId} handed over to none of ${ev.candidates.join(', ')}: ${
            ev.action === 'reask'
              ? `asked again (${ev.attempt ?? 1})`
              : ev.action === 'default'
                ? `default ${ev.edgeId ?? ''}`
                : ev.action
          }`,
          tone: ev.action === 'fail' ? 'error' : 'muted',
        });
        break;
      case 'mic.granted':
        push({
          ...base,
          kind: 'log',
          who: 'mic',
          text: `${ev.holder} holds the mic (granted by ${ev.by})`,
          tone: 'muted',
        });
        break;
      case 'mic.released':
        push({
          ...base,
          kind: 'log',
          who: 'mic',
          text: `${ev.holder} released the mic: ${ev.reason}`,
          tone: 'muted',
        });
        break;
      case 'decision':
        push({
          ...base,
          kind: 'decision',
          text: Array.isArray(ev.choice) ? ev.choice.join(', ') : ev.choice,
          detail: ev.reason,
        });
        break;
      case 'observer.fired':
        push({
          ...base,
          kind: 'observer',
          who: ev.observer,
          text: `${ev.action}${ev.target ? ` on ${ev.target}` : ''}`,
          detail: ev.detail === undefined ? undefined : brief(ev.detail, 600),
        });
        break;
      case 'input.requested':
        if (top) {
          v.phase = 'waiting';
          v.waiting = { nodeId: ev.nodeId ?? '', question: ev.question, options: ev.options, seq: ev.seq };
        }
        push({ ...base, kind: 'input', text: ev.question, detail: ev.options?.join(' / ') });
        break;
      case 'input.received':
        if (top) {
          v.waiting = undefined;
          if (v.phase === 'waiting') v.phase = 'running';
        }
        push({ ...base, kind: 'input', who: 'answer', text: ev.answer, tone: 'ok' });
        break;
      case 'budget.exceeded':
        push({ ...base, kind: 'error', text: `${ev.budget} budget exceeded: ${ev.used} of ${ev.limit}` });
        break;
      case 'log':
        push({ ...base, kind: 'log', who: ev.level, text: ev.text, tone: 'muted' });
        break;
      default:
        break;
    }
  }
  if (entries.length > max) {
    const cut = entries.length - max;
    entries.splice(0, cut);
    v.dropped += cut;
  }
  return v;
}
