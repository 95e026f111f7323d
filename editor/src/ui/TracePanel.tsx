/**
 * The selected node's trace in the followed run (during or after it): every turn with the
 * messages sent, the reply, tool calls, decisions, observers, retries and errors; each part
 * copyable as JSON. Shown above the node's form while a run has something for the node.
 */
import { PINNABLE_KINDS, type ResolvedRequest, type RunEvent } from '@switchboard/schemas/core';
import { memo, useDeferredValue, useMemo, useState, useSyncExternalStore } from 'react';
import type { RunSession } from '../run/runSession.js';
import { nodeTrace, type TracePart, type TraceTurn } from '../run/trace.js';
import { useEditor, useKeyed } from './context.js';

function copy(data: unknown, toast: (t: string) => void): void {
  const text = JSON.stringify(data, null, 2);
  const done = () => toast('Copied as JSON');
  if (navigator.clipboard?.writeText)
    navigator.clipboard.writeText(text).then(done, () => toast('Copy failed'));
}

function CopyButton({ data, testid }: { data: unknown; testid: string }) {
  const { toast } = useEditor();
  return (
    <button
      type="button"
      className="sb-trace-copy"
      data-testid={testid}
      title="Copy as JSON"
      aria-label="Copy as JSON"
      onClick={() => copy(data, toast)}
    >
      JSON
    </button>
  );
}

/** Messages of one request shown at first: the system prompt and the last ones (a long chat sends hundreds). */
export const TRACE_MESSAGES = 40;
/** Turns shown at first: the last ones (a node of a long run has hundreds). */
export const TRACE_TURNS = 10;

function Messages({ request }: { request: ResolvedRequest }) {
  const [all, setAll] = useState(false);
  const list = request.messages;
  const lead = list[0]?.role === 'system' ? 1 : 0;
  const hidden = all ? 0 : Math.max(0, list.length - lead - TRACE_MESSAGES);
  const shown =
    hidden > 0
      ? [
          ...list.slice(0, lead).map((m, i) => [m, i] as const),
          ...list.slice(lead + hidden).map((m, i) => [m, lead + hidden + i] as const),
        ]
      : list.map((m, i) => [m, i] as const);
  return (
    <ol className="sb-trace-messages">
      {shown.map(([m, i]) => (
        <li
          key={i}
          className={`sb-trace-msg sb-trace-${m.role}`}
          data-testid="trace-message"
          data-role={m.role}
        >
          <span className="sb-trace-role">
            {m.role}
            {m.name ? ` · ${m.name}` : ''}
            {m.toolCallId ? ` · ${m.toolCallId}` : ''}
          </span>
          <pre>{m.missing ? '(not in the log)' : m.content}</pre>
          {m.toolCalls?.map((c) => (
            <pre key={c.id} className="sb-trace-call">
              {`${c.name}(${c.arguments})`}
            </pre>
          ))}
          {i === lead - 1 && hidden > 0 && (
            <button type="button" data-testid="trace-more-messages" onClick={() => setAll(true)}>
              {hidden} earlier messages…
            </button>
          )}
        </li>
      ))}
      {lead === 0 && hidden > 0 && (
        <li>
          <button type="button" data-testid="trace-more-messages" onClick={() => setAll(true)}>
            {hidden} earlier messages…
          </button>
        </li>
      )}
    </ol>
  );
}

function Part({ part }: { part: TracePart }) {
  const [open, setOpen] = useState(part.kind === 'request' || part.kind === 'reply' || part.kind === 'error');
  const d = part.data as Record<string, unknown>;
  return (
    <li className={`sb-trace-part sb-trace-${part.kind}`} data-testid="trace-part" data-kind={part.kind}>
      <div className="sb-trace-part-head">
        <button type="button" className="sb-trace-toggle" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? '▾' : '▸'} {part.title}
        </button>
        <CopyButton data={part.data} testid={`trace-copy-${part.seq}`} />
      </div>
      {open &&
        (part.kind === 'request' ? (
          <Messages request={part.data as ResolvedRequest} />
        ) : part.kind === 'reply' ? (
          <pre className="sb-trace-text">{String(d.text ?? '')}</pre>
        ) : (
          <pre className="sb-trace-text">{JSON.stringify(part.data, null, 2)}</pre>
        ))}
    </li>
  );
}

/** "Re-run from here": a fork of the shown run at this turn of the node, live from its first model call. */
function RerunButton({ runs, nodeId, turn }: { runs: RunSession; nodeId: string; turn: number }) {
  const snap = useSyncExternalStore(runs.subscribe, runs.getSnapshot);
  return (
    <button
      type="button"
      className="sb-trace-rerun"
      data-testid="trace-rerun"
      data-turn={turn}
      disabled={snap.busy}
      title="Start a new run with this run's recorded state up to here, and live models and tools from this turn on"
      onClick={() => void runs.fork(nodeId, turn)}
    >
      Re-run from here
    </button>
  );
}

/**
 * "Pin this output": later runs of the flow use what this turn produced (its reply, its handover
 * or choice) instead of calling the node's model; "Unpin" when this very turn is the pin.
 */
function PinButton({
  runs,
  nodeId,
  turn,
  runId,
}: {
  runs: RunSession;
  nodeId: string;
  turn: number;
  runId: string;
}) {
  const snap = useSyncExternalStore(runs.subscribe, runs.getSnapshot);
  const pin = useKeyed(runs.pins.byNode, nodeId);
  const here = pin !== undefined && pin.fromRun === runId && pin.fromTurn === turn;
  return here ? (
    <button
      type="button"
      className="sb-trace-pin sb-trace-pinned"
      data-testid="trace-unpin"
      disabled={snap.busy}
      title="Runs use this output instead of calling the node's model. Click to unpin."
      onClick={() => void runs.unpin(nodeId)}
    >
      Unpin
    </button>
  ) : (
    <button
      type="button"
      className="sb-trace-pin"
      data-testid="trace-pin"
      data-turn={turn}
      disabled={snap.busy}
      title="Later runs of this flow use this turn's output (reply and handover) instead of calling the node's model"
      onClick={() => void runs.pinOutput(nodeId, turn)}
    >
      Pin this output
    </button>
  );
}

interface TurnProps {
  turn: TraceTurn;
  index: number;
  rerun?: { runs: RunSession; nodeId: string; turn: number };
  pin?: { runs: RunSession; nodeId: string; turn: number; runId: string };
}

/**
 * A trace built again (the log grew, the playhead moved) has new objects for turns that did not
 * change: a turn re-renders only when what it shows did (its parts only ever grow).
 */
function sameTurn(a: TurnProps, b: TurnProps): boolean {
  const x = a.turn;
  const y = b.turn;
  return (
    a.index === b.index &&
    a.rerun?.turn === b.rerun?.turn &&
    a.rerun?.nodeId === b.rerun?.nodeId &&
    a.pin?.turn === b.pin?.turn &&
    a.pin?.runId === b.pin?.runId &&
    x.key === y.key &&
    x.turn === y.turn &&
    x.status === y.status &&
    x.startedAt === y.startedAt &&
    x.endedAt === y.endedAt &&
    x.parts.length === y.parts.length &&
    x.parts.at(-1)?.seq === y.parts.at(-1)?.seq
  );
}

const Turn = memo(function Turn({ turn, index, rerun, pin }: TurnProps) {
  const ms = turn.endedAt !== undefined ? turn.endedAt - turn.startedAt : undefined;
  return (
    <section className="sb-trace-turn" data-testid="trace-turn" data-status={turn.status}>
      <header className="sb-trace-turn-head">
        <strong>{turn.turn !== undefined ? `Turn ${turn.turn}` : `Call ${index + 1}`}</strong>
        <span className={`sb-trace-meta sb-trace-status sb-trace-status-${turn.status}`}>{turn.status}</span>
        {ms !== undefined && <span className="sb-trace-meta">{ms} ms</span>}
        <CopyButton data={turn} testid={`trace-copy-turn-${turn.key}`} />
        {rerun && <RerunButton {...rerun} />}
        {pin && <PinButton {...pin} />}
      </header>
      <ul className="sb-trace-parts">
        {turn.parts.map((p) => (
          <Part key={p.seq} part={p} />
        ))}
      </ul>
    </section>
  );
}, sameTurn);

function Streaming({ nodeId }: { nodeId: string }) {
  const { store } = useEditor();
  const c = useKeyed(store.runState.counters, nodeId);
  if (!c?.streaming) return null;
  return (
    <pre className="sb-trace-streaming" data-testid="trace-streaming">
      {c.streaming}
    </pre>
  );
}

/** How many events have a seq up to `seq` (events in seq order). */
function countUpTo(events: readonly RunEvent[], seq: number): number {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (events[mid]!.seq <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The seq of the last event at or before the playhead that a node's trace shows (its own events,
 * observers firing on it); undefined when live. Walks back from the playhead to the first such.
 */
export function traceSeqAt(
  events: readonly RunEvent[],
  nodeId: string,
  scrub: number | undefined,
): number | undefined {
  if (scrub === undefined) return undefined;
  for (let i = countUpTo(events, scrub) - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.nodeId === nodeId || (e.type === 'observer.fired' && e.target === nodeId)) return e.seq;
  }
  return 0;
}

export function TracePanel({ runs, nodeId }: { runs: RunSession; nodeId: string }) {
  const { store } = useEditor();
  const snap = useSyncExternalStore(runs.subscribe, runs.getSnapshot);
  const doc = store.toFlow();
  const candidates = doc.edges
    .filter((e) => e.source === nodeId && e.kind === 'handover')
    .map((e) => e.target);
  const pinnable = PINNABLE_KINDS.has(doc.nodes.find((n) => n.id === nodeId)?.kind ?? '');
  const key = candidates.join('\n');
  // At the playhead: the trace as of that event. It changes only where an event of this node
  // lies, so a scrub across other nodes' events does not build it again.
  // Deferred: while the playhead moves the canvas follows at once, the trace when there is time.
  const upTo = useDeferredValue(traceSeqAt(runs.events(), nodeId, snap.scrub));
  // biome-ignore lint/correctness/useExhaustiveDependencies: the log grows in place; its size and the node's last event say when
  const turns = useMemo(() => {
    const all = runs.events();
    const events = upTo === undefined ? all : all.slice(0, countUpTo(all, upTo));
    return nodeTrace(events, nodeId, key ? key.split('\n') : [], runs.requests());
  }, [runs, nodeId, snap.logSize, key, upTo]);
  const [turnsShown, setTurnsShown] = useState(TRACE_TURNS);
  if (turns.length === 0) return null;
  const firstShown = Math.max(0, turns.length - turnsShown);
  // A fork counts the node's turns that called a model (what `--at NODE:TURN` counts).
  let modelTurns = 0;
  const forkTurn = turns.map((t) => (t.parts.some((p) => p.kind === 'request') ? ++modelTurns : undefined));
  // A pin counts the node's turns (what `--pin NODE=RUN:TURN` counts); only a completed one is pinned.
  let nodeTurns = 0;
  const pinTurn = turns.map((t) => {
    if (t.turn === undefined) return undefined;
    nodeTurns++;
    return pinnable && t.status === 'completed' ? nodeTurns : undefined;
  });
  const runId = snap.view.runId;
  return (
    <section
      className="sb-trace"
      data-testid="trace-panel"
      data-node={nodeId}
      aria-label={`Trace of ${nodeId}`}
    >
      <header className="sb-trace-head">
        <h2>Trace</h2>
        <span className="sb-trace-run">run {snap.view.runId}</span>
        <CopyButton data={turns} testid="trace-copy-all" />
      </header>
      {firstShown > 0 && (
        <button
          type="button"
          className="sb-trace-more"
          data-testid="trace-more-turns"
          onClick={() => setTurnsShown((n) => n + 100)}
        >
          {firstShown} earlier turns…
        </button>
      )}
      {turns.slice(firstShown).map((t, j) => {
        const i = firstShown + j;
        return (
          <Turn
            key={t.key}
            turn={t}
            index={i}
            {...(forkTurn[i] !== undefined ? { rerun: { runs, nodeId, turn: forkTurn[i] } } : {})}
            {...(pinTurn[i] !== undefined && runId ? { pin: { runs, nodeId, turn: pinTurn[i], runId } } : {})}
          />
        );
      })}
      <Streaming nodeId={nodeId} />
    </section>
  );
}
