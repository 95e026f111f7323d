/**
 * The run panel under the canvas: input and Run, the run's status (and a SCRIPTED MODELS badge
 * when its replies come from a script), commands (pause, resume, step, cancel, inject, answer a
 * human node, breakpoints), and the live transcript. Served without a server it explains why
 * nothing can run.
 */

import {
  memo,
  useDeferredValue,
  useEffect,
  useLayoutEffect,
  useRef,
  useState,
  useSyncExternalStore,
} from 'react';
import type { RunSession, RunSnapshot } from '../run/runSession.js';
import type { RunView } from '../run/transcript.js';
import { brief, FINAL_PHASES, type RunPhase, type TranscriptEntry } from '../run/transcript.js';
import type { EditorStore } from '../store/editorStore.js';
import { ComparePanel } from './ComparePanel.js';
import { useCalmDrafts } from './calmDrafts.js';
import { useDocVersion, useEditor, useKeyed } from './context.js';
import { ElicitationForm } from './ElicitationForm.js';
import { AuthRequiredHint } from './McpConnect.js';
import { OpenedNote, RunHistory } from './RunHistory.js';
import { Scrubber } from './Scrubber.js';

const PACES: Array<[number, string]> = [
  [0, 'instant'],
  [300, '0.3 s per reply'],
  [1000, '1 s per reply'],
];

const PHASE_LABEL: Record<RunPhase, string> = {
  idle: 'no run yet',
  starting: 'starting…',
  running: 'running',
  paused: 'paused',
  waiting: 'waiting for an answer',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  interrupted: 'interrupted',
};

/** Example inputs a flow carries in `metadata.examples` (the gallery's flows all do). */
function examplesOf(store: EditorStore): string[] {
  const md = store.meta('metadata') as { examples?: unknown } | undefined;
  if (!md || !Array.isArray(md.examples)) return [];
  return md.examples
    .map((e) => (e && typeof e === 'object' ? (e as { input?: unknown }).input : undefined))
    .filter((x): x is string => typeof x === 'string');
}

const Entry = memo(function Entry({
  e,
  store,
  typing = false,
}: {
  e: TranscriptEntry;
  store: EditorStore;
  /** The newest draft: its caret blinks. */
  typing?: boolean;
}) {
  const name = e.nodeId ? store.displayName(e.nodeId) : undefined;
  return (
    <li
      className={`sb-entry sb-entry-${e.kind}${e.tone ? ` sb-tone-${e.tone}` : ''}${e.nested ? ' sb-entry-nested' : ''}${typing ? ' sb-entry-typing' : ''}`}
      data-testid="transcript-entry"
      data-kind={e.kind}
      data-type={e.type}
      data-seq={e.seq}
      data-node={e.nodeId}
    >
      <span className="sb-entry-head">
        {name ? (
          <button
            type="button"
            className="sb-entry-node"
            title={`Select ${e.nodeId} on the canvas`}
            onClick={() => store.select({ nodes: [e.nodeId!] })}
          >
            {name}
          </button>
        ) : null}
        {e.who && e.who !== name && e.who !== e.nodeId ? <span className="sb-entry-who">{e.who}</span> : null}
        <span className="sb-entry-kind">{e.kind === 'stream' ? 'typing…' : e.kind}</span>
      </span>
      {e.text ? <span className="sb-entry-text">{e.text}</span> : null}
      {e.detail ? <span className="sb-entry-detail">{e.detail}</span> : null}
    </li>
  );
});

/** Transcript entries rendered at first; earlier ones come on asking (a scrub frame stays cheap). */
export const TRANSCRIPT_WINDOW = 100;
/**
 * The window's first entry moves in steps of this many: a window that dropped its first entry at
 * each new one would move every entry up a row, and the whole transcript would be laid out and
 * painted again at each event of a live run.
 */
export const TRANSCRIPT_STEP = 50;

/** How many of `total` entries the window leaves out at the start (a multiple of the step). */
export function hiddenEntries(total: number, shownMax: number): number {
  return total > shownMax ? Math.ceil((total - shownMax) / TRANSCRIPT_STEP) * TRANSCRIPT_STEP : 0;
}

/**
 * The run's transcript. Given the view deferred (`useDeferredValue`): while the playhead moves,
 * the canvas follows at once and the transcript renders when the browser has time, a render a
 * newer move interrupts.
 */
const Transcript = memo(function Transcript({ view, store }: { view: RunView; store: EditorStore }) {
  const box = useRef<HTMLOListElement>(null);
  const pinned = useRef(true);
  const [shownMax, setShownMax] = useState(TRANSCRIPT_WINDOW);
  const { entries: all, dropped } = view;
  const hidden = hiddenEntries(all.length, shownMax);
  const entries = hidden > 0 ? all.slice(hidden) : all;
  let typing = -1;
  for (let i = entries.length - 1; i >= 0 && typing < 0; i--) if (entries[i]!.kind === 'stream') typing = i;
  // Follow the end of the transcript unless the reader scrolled up: at the next frame, once for
  // however many commits came before it (scrolling makes the browser lay the page out at once).
  const scrollFrame = useRef(0);
  useLayoutEffect(() => {
    if (!pinned.current || !entries.length || scrollFrame.current) return;
    scrollFrame.current = requestAnimationFrame(() => {
      scrollFrame.current = 0;
      const el = box.current;
      if (el && pinned.current) el.scrollTop = el.scrollHeight;
    });
  }, [entries]);
  useEffect(() => () => cancelAnimationFrame(scrollFrame.current), []);
  return (
    <ol
      className="sb-transcript"
      ref={box}
      data-testid="transcript"
      aria-label="Run transcript"
      aria-live="polite"
      onScroll={(ev) => {
        const el = ev.currentTarget;
        pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
      }}
    >
      {dropped > 0 && <li className="sb-help">{dropped} earlier entries not shown</li>}
      {hidden > 0 && (
        <li className="sb-help">
          <button
            type="button"
            data-testid="transcript-more"
            onClick={() => setShownMax((n) => n + 1000)}
            title="Show earlier entries of the transcript"
          >
            {hidden} earlier entries…
          </button>
        </li>
      )}
      {entries.length === 0 && (
        <li className="sb-help sb-transcript-empty">
          {view.phase === 'idle' ? 'Run the flow to see its transcript here.' : 'Waiting for events…'}
        </li>
      )}
      {entries.map((e, i) => (
        <Entry key={e.seq} e={e} store={store} typing={i === typing} />
      ))}
    </ol>
  );
});

function AnswerForm({ runs, snap }: { runs: RunSession; snap: RunSnapshot }) {
  const { store } = useEditor();
  const w = snap.view.waiting!;
  const [text, setText] = useState('');
  const answer = (a: string) => void runs.command({ type: 'answer', nodeId: w.nodeId, answer: a });
  if (w.form)
    return (
      <ElicitationForm
        waiting={{ ...w, form: w.form }}
        who={store.displayName(w.nodeId)}
        busy={snap.busy}
        answer={answer}
      />
    );
  return (
    <form
      className="sb-answer"
      data-testid="answer-form"
      data-node={w.nodeId}
      onSubmit={(ev) => {
        ev.preventDefault();
        if (text.trim()) answer(text);
      }}
    >
      <strong>{store.displayName(w.nodeId)} asks:</strong>
      <p className="sb-answer-question" data-testid="answer-question">
        {w.question}
      </p>
      {w.options?.length ? (
        <div className="sb-answer-options">
          {w.options.map((opt) => (
            <button
              key={opt}
              type="button"
              data-testid={`answer-option-${opt}`}
              disabled={snap.busy}
              onClick={() => answer(opt)}
            >
              {opt}
            </button>
          ))}
        </div>
      ) : null}
      <label htmlFor="sb-answer-text">Your answer</label>
      <div className="sb-row">
        <input
          id="sb-answer-text"
          data-testid="answer-text"
          value={text}
          onChange={(ev) => setText(ev.target.value)}
        />
        <button type="submit" data-testid="btn-answer" disabled={snap.busy || !text.trim()}>
          Answer
        </button>
      </div>
    </form>
  );
}

function InjectForm({ runs, snap }: { runs: RunSession; snap: RunSnapshot }) {
  const { store } = useEditor();
  const sel = useSyncExternalStore(store.subscribe, store.getSelection);
  const [text, setText] = useState('');
  const target = sel.nodes.length === 1 ? sel.nodes[0] : undefined;
  return (
    <form
      className="sb-inject"
      onSubmit={(ev) => {
        ev.preventDefault();
        if (!text.trim()) return;
        void runs
          .command(target ? { type: 'inject', text, nodeId: target } : { type: 'inject', text })
          .then((ok) => ok && setText(''));
      }}
    >
      <label htmlFor="sb-inject-text">
        Redirect: a message into the run{target ? `, to ${store.displayName(target)}` : ''}
      </label>
      <div className="sb-row">
        <input
          id="sb-inject-text"
          data-testid="inject-text"
          value={text}
          onChange={(ev) => setText(ev.target.value)}
        />
        <button type="submit" data-testid="btn-inject" disabled={snap.busy || !text.trim()}>
          Inject
        </button>
      </div>
    </form>
  );
}

function BreakpointToggle({ runs }: { runs: RunSession }) {
  const { store } = useEditor();
  const sel = useSyncExternalStore(store.subscribe, store.getSelection);
  const id = sel.nodes.length === 1 ? sel.nodes[0]! : '';
  const on = useKeyed(store.runState.breakpoints, id);
  if (!id)
    return (
      <span className="sb-help" data-testid="breakpoint-hint">
        Breakpoint: select a node
      </span>
    );
  return (
    <button
      type="button"
      data-testid="btn-breakpoint"
      aria-pressed={on}
      title="Pause the run before this node starts"
      onClick={() => runs.toggleBreakpoint(id)}
    >
      {on ? '● Breakpoint on' : '○ Breakpoint'} · {store.displayName(id)}
    </button>
  );
}

function Output({ snap }: { snap: RunSnapshot }) {
  const v = snap.view;
  if (v.phase === 'completed')
    return (
      <div className="sb-run-output" data-testid="run-output">
        <strong>Answer</strong>
        <pre>{typeof v.output === 'string' ? v.output : brief(v.output, 20_000)}</pre>
      </div>
    );
  if (v.error)
    return (
      <div className="sb-run-output sb-tone-error" data-testid="run-error" role="alert">
        <strong>{v.error.code}</strong> {v.error.message}
        {v.error.code === 'auth_required' && <AuthRequiredHint message={v.error.message} />}
      </div>
    );
  return null;
}

/** A headless run streamed here: where it runs, and whether its process is there to take commands. */
function AttachedBadge({ link }: { link: NonNullable<RunSnapshot['attached']> }) {
  const text =
    link.state === 'connected' || link.state === 'ended'
      ? `headless, attached from ${link.host}`
      : link.state === 'detached'
        ? `headless on ${link.host}, detached: commands wait for it to reconnect`
        : `headless on ${link.host}, abandoned`;
  return (
    <span
      className={`sb-attached sb-attached-${link.state}`}
      data-testid="run-attached"
      data-state={link.state}
      title={`This run runs in a \`switchboard run --attach\` process on ${link.host}; its events stream here (${link.state} since ${link.since})`}
    >
      {text}
    </span>
  );
}

function OfflinePanel() {
  return (
    <section className="sb-run sb-run-offline" data-testid="run-panel" data-phase="offline" aria-label="Run">
      <div className="sb-run-bar">
        <button type="button" data-testid="btn-run" disabled title="Needs the Switchboard server">
          ▶ Run
        </button>
        <span className="sb-help" data-testid="run-offline">
          Running needs the Switchboard server: start it with <code>pnpm start</code> (or{' '}
          <code>switchboard serve</code>) and open <code>http://127.0.0.1:5170</code>. This page is a static
          build, so it edits, imports and exports only.
        </span>
      </div>
    </section>
  );
}

export function RunPanel() {
  const { runs } = useEditor();
  if (!runs) return <OfflinePanel />;
  return <LivePanel runs={runs} />;
}

function LivePanel({ runs }: { runs: RunSession }) {
  const { store } = useEditor();
  useDocVersion(store);
  const snap = useSyncExternalStore(runs.subscribe, runs.getSnapshot);
  // Collapsed to its bar until there is a run to show; a run started here or elsewhere opens it.
  const [open, setOpen] = useState(false);
  const shownRun = snap.view.runId;
  useEffect(() => {
    if (shownRun) setOpen(true);
  }, [shownRun]);
  const [pace, setPace] = useState(300);
  const examples = examplesOf(store);
  const flowId = String(store.meta('id') ?? '');
  const [input, setInput] = useState(examples[0] ?? '');
  // A newly opened flow brings its first example input.
  const lastFlow = useRef(flowId);
  useEffect(() => {
    if (lastFlow.current === flowId) return;
    lastFlow.current = flowId;
    setInput(examples[0] ?? '');
  }, [flowId, examples]);

  const v = snap.view;
  // Drafts that only grow are drawn a few times a second (calmDrafts.ts); the faces show every piece.
  const transcriptView = useDeferredValue(useCalmDrafts(v));
  const phase: RunPhase = snap.busy && v.phase === 'idle' ? 'starting' : v.phase;
  // At a past point of the timeline the view is history: commands wait until it is live again.
  const live = !!v.runId && phase !== 'idle' && !FINAL_PHASES.has(phase) && snap.scrub === undefined;
  const cmd = (type: 'pause' | 'resume' | 'step' | 'cancel') => () => void runs.command({ type });
  return (
    <section
      className={`sb-run${open ? '' : ' sb-run-closed'}`}
      data-testid="run-panel"
      data-phase={phase}
      data-flow={snap.flowId ?? ''}
      data-run-id={v.runId ?? ''}
      data-last-seq={v.lastSeq}
      data-events={v.events}
      data-connection={snap.connection}
      aria-label="Run"
    >
      <form
        className="sb-run-bar"
        onSubmit={(ev) => {
          ev.preventDefault();
          setOpen(true);
          void runs.run(input, pace);
        }}
      >
        <button type="submit" data-testid="btn-run" disabled={snap.busy} title="Run this flow on the server">
          ▶ Run
        </button>
        <input
          className="sb-run-input"
          data-testid="run-input"
          aria-label="Run input"
          placeholder="Input for the start node"
          value={input}
          onChange={(ev) => setInput(ev.target.value)}
        />
        {examples.length > 1 && (
          <select
            data-testid="run-example"
            aria-label="Example inputs"
            value=""
            onChange={(ev) => ev.target.value && setInput(ev.target.value)}
          >
            <option value="">Examples…</option>
            {examples.map((x) => (
              <option key={x} value={x}>
                {x}
              </option>
            ))}
          </select>
        )}
        <select
          data-testid="run-pace"
          aria-label="Pace of scripted replies"
          title="Scripted replies arrive at once; a pace makes the run easy to follow"
          value={pace}
          onChange={(ev) => setPace(Number(ev.target.value))}
        >
          {PACES.map(([ms, label]) => (
            <option key={ms} value={ms}>
              {label}
            </option>
          ))}
        </select>
        <span className={`sb-run-status sb-phase-${phase}`} data-testid="run-status" data-phase={phase}>
          {PHASE_LABEL[phase]}
          {v.pauseReason && phase === 'paused' ? ` (${v.pauseReason})` : ''}
        </span>
        {v.scripted && (
          <span
            className="sb-scripted"
            data-testid="run-scripted"
            title="The replies of this run come from a script in the flow, not from a model"
          >
            SCRIPTED MODELS
          </span>
        )}
        {snap.attached && <AttachedBadge link={snap.attached} />}
        <span className="sb-sep" />
        <button
          type="button"
          data-testid="btn-pause"
          disabled={!live || phase === 'paused'}
          onClick={cmd('pause')}
          title="Pause"
          aria-label="Pause"
        >
          ⏸
        </button>
        <button
          type="button"
          data-testid="btn-resume"
          disabled={!live || phase !== 'paused'}
          onClick={cmd('resume')}
          title="Resume"
          aria-label="Resume"
        >
          ⏵
        </button>
        <button
          type="button"
          data-testid="btn-step"
          disabled={!live}
          onClick={cmd('step')}
          title="Step: one turn, then pause"
          aria-label="Step: one turn, then pause"
        >
          ⏭
        </button>
        <button
          type="button"
          data-testid="btn-cancel"
          disabled={!live}
          onClick={cmd('cancel')}
          title="Cancel the run"
          aria-label="Cancel the run"
        >
          ⏹
        </button>
        <span className="sb-sep" />
        <BreakpointToggle runs={runs} />
        <RunHistory runs={runs} />
        <OpenedNote runs={runs} />
        <span className="sb-spacer" />
        {v.runId && (
          <span className="sb-help" title={v.runId}>
            {v.turns} turns · {v.tokens} tokens
          </span>
        )}
        <span
          className={`sb-conn sb-conn-${snap.connection}`}
          data-testid="run-connection"
          title={`Live events: ${snap.connection}`}
        >
          {snap.connection === 'open'
            ? 'live'
            : snap.connection === 'connecting'
              ? 'connecting…'
              : 'reconnecting…'}
        </span>
        <button
          type="button"
          data-testid="btn-run-toggle"
          aria-expanded={open}
          onClick={() => setOpen(!open)}
          title={open ? 'Hide the transcript' : 'Show the transcript'}
        >
          {open ? '▾' : '▴'}
        </button>
      </form>
      <Scrubber runs={runs} />
      <ComparePanel runs={runs} />
      {snap.problem && (
        <div className="sb-run-problem" role="alert" data-testid="run-problem">
          {snap.problem}
        </div>
      )}
      {open && (
        <div className="sb-run-body">
          <Transcript view={transcriptView} store={store} />
          <div className="sb-run-side">
            {v.waiting && phase === 'waiting' && <AnswerForm key={v.waiting.seq} runs={runs} snap={snap} />}
            <Output snap={snap} />
            {live && <InjectForm runs={runs} snap={snap} />}
          </div>
        </div>
      )}
    </section>
  );
}
