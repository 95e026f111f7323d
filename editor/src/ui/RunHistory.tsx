/**
 * The flow's runs, newest first: status, who started it, when, how long, tokens, cost and the
 * path it took; filterable by status (or stale) and by text. Runs that
 * wait or are paused with nothing moving for a while are marked stale and can be cancelled; any
 * run opens on the canvas (its path, counters and traces, from its log). Also the line that says
 * which run the canvas shows when this editor did not start it.
 */
import { useCallback, useEffect, useState, useSyncExternalStore } from 'react';
import type { RunSummary } from '../model/api.js';
import { filterRuns, HISTORY_FILTERS, pathLabel, startedByLabel } from '../run/history.js';
import { isStale, lastChange, type RunSession } from '../run/runSession.js';
import { FINAL_PHASES } from '../run/transcript.js';
import { formatCost, formatMs, formatTokens } from './NodeCounters.js';

export function ago(iso: string, now = Date.now()): string {
  const ms = now - (Date.parse(iso) || now);
  if (ms < 60_000) return 'just now';
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min ago`;
  if (ms < 86_400_000) return `${Math.round(ms / 3_600_000)} h ago`;
  return new Date(iso).toLocaleString();
}

function duration(r: RunSummary): string {
  const start = Date.parse(r.createdAt) || 0;
  const end = r.endedAt ? Date.parse(r.endedAt) : lastChange(r);
  return formatMs(Math.max(0, end - start));
}

/**
 * The runs as a tree: each fork right under the run it was forked from (newest first among
 * siblings, as listed), with its depth; a fork whose parent is not listed stands at the top.
 */
export function forkTree(list: readonly RunSummary[]): Array<{ run: RunSummary; depth: number }> {
  const ids = new Set(list.map((r) => r.id));
  const children = new Map<string, RunSummary[]>();
  const roots: RunSummary[] = [];
  for (const r of list) {
    const p = r.parentRunId;
    if (p !== undefined && p !== r.id && ids.has(p)) {
      const l = children.get(p);
      if (l) l.push(r);
      else children.set(p, [r]);
    } else roots.push(r);
  }
  const out: Array<{ run: RunSummary; depth: number }> = [];
  const seen = new Set<string>();
  const walk = (r: RunSummary, depth: number) => {
    if (seen.has(r.id)) return;
    seen.add(r.id);
    out.push({ run: r, depth });
    for (const c of children.get(r.id) ?? []) walk(c, depth + 1);
  };
  for (const r of roots) walk(r, 0);
  // A cycle of parents (not made by the server) still lists every run once.
  for (const r of list) walk(r, 0);
  return out;
}

/** Which run the canvas shows, when this editor did not start it; or the old run it did not open. */
export function OpenedNote({ runs }: { runs: RunSession }) {
  const snap = useSyncExternalStore(runs.subscribe, runs.getSnapshot);
  if (snap.opened)
    return (
      <span className="sb-run-opened" data-testid="run-opened" data-how={snap.opened.how}>
        {snap.opened.how === 'latest' ? 'Latest run' : 'Past run'}, started {ago(snap.opened.createdAt)}
      </span>
    );
  if (snap.skipped)
    return (
      <span className="sb-run-opened" data-testid="run-skipped" title={snap.skipped.id}>
        Last run ({snap.skipped.status}, {ago(snap.skipped.updatedAt ?? snap.skipped.createdAt)}) not shown:
        see History
      </span>
    );
  return null;
}

export function RunHistory({ runs }: { runs: RunSession }) {
  const snap = useSyncExternalStore(runs.subscribe, runs.getSnapshot);
  const [open, setOpen] = useState(false);
  const [list, setList] = useState<RunSummary[] | undefined>();
  const [filter, setFilter] = useState('all');
  const [text, setText] = useState('');
  const [error, setError] = useState<string | undefined>();
  /** Runs ticked for comparison, in the order ticked (A, then B). */
  const [picked, setPicked] = useState<string[]>([]);
  const load = useCallback(() => {
    runs.history().then(
      (l) => {
        setList(l);
        setError(undefined);
      },
      (e: Error) => setError(e.message),
    );
  }, [runs]);
  // Reloaded when opened, and when the run shown changes or ends.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the phase and run id say when the list is stale
  useEffect(() => {
    if (open) load();
  }, [open, load, snap.view.runId, snap.view.phase]);
  // The server lists a run as its log on disk says; the live view may be a sync ahead. When the
  // shown run has ended but its row does not say so yet, ask again shortly (a few times at most).
  const [catchUps, setCatchUps] = useState(0);
  const behind =
    open &&
    FINAL_PHASES.has(snap.view.phase) &&
    (list ?? []).some((r) => r.id === snap.view.runId && r.status !== snap.view.phase);
  useEffect(() => {
    if (!behind || catchUps >= 20) return;
    const t = setTimeout(() => {
      setCatchUps((n) => n + 1);
      load();
    }, 250);
    return () => clearTimeout(t);
  }, [behind, catchUps, load]);
  const now = Date.now();
  const shown = filterRuns(list ?? [], filter, text, (r) => isStale(r, now));
  return (
    <span className="sb-history-wrap">
      <button
        type="button"
        data-testid="btn-history"
        aria-expanded={open}
        onClick={() => setOpen(!open)}
        title="The runs of this flow"
      >
        History
      </button>
      {open && (
        <div className="sb-history" data-testid="run-history" role="dialog" aria-label="Runs of this flow">
          <div className="sb-history-head">
            <strong>Runs of this flow</strong>
            <select
              data-testid="history-filter"
              aria-label="Show runs by status"
              value={filter}
              onChange={(e) => setFilter(e.target.value)}
            >
              {HISTORY_FILTERS.map((f) => (
                <option key={f} value={f}>
                  {f}
                </option>
              ))}
            </select>
            <input
              type="search"
              data-testid="history-search"
              className="sb-history-search"
              aria-label="Find runs by id, who started them, node or error"
              placeholder="Find…"
              value={text}
              maxLength={200}
              onChange={(e) => setText(e.target.value)}
            />
            <button
              type="button"
              data-testid="btn-compare"
              disabled={picked.length !== 2}
              title="Tick two runs to compare them"
              onClick={() => void runs.compare(picked[0]!, picked[1]!)}
            >
              Compare
            </button>
            <button type="button" onClick={load} title="Reload the list">
              ↻
            </button>
            <button type="button" onClick={() => setOpen(false)} aria-label="Close the history">
              ×
            </button>
          </div>
          {error && <div className="sb-run-problem">{error}</div>}
          {list && shown.length === 0 && (
            <div className="sb-help">
              No runs{filter === 'all' ? '' : ` ${filter}`}
              {text.trim() ? ' matching the search' : ''}.
            </div>
          )}
          <ol className="sb-history-list">
            {forkTree(shown).map(({ run: r, depth }) => {
              const stale = isStale(r, now);
              const cancellable =
                r.live === true && ['waiting', 'paused', 'running', 'pending'].includes(r.status);
              const tokens = r.counters ? r.counters.promptTokens + r.counters.completionTokens : undefined;
              const who = startedByLabel(r);
              const path = pathLabel(r);
              return (
                <li
                  key={r.id}
                  className={`sb-history-run${r.id === snap.view.runId ? ' sb-history-shown' : ''}`}
                  data-testid="history-run"
                  data-run-id={r.id}
                  data-status={r.status}
                  data-stale={stale || undefined}
                  data-parent={r.parentRunId}
                  data-depth={depth}
                  style={depth > 0 ? { paddingLeft: `${depth * 1.25}em` } : undefined}
                >
                  <input
                    type="checkbox"
                    data-testid="history-pick"
                    aria-label="Compare this run"
                    checked={picked.includes(r.id)}
                    onChange={(e) =>
                      setPicked((p) =>
                        e.target.checked
                          ? [...p.filter((x) => x !== r.id), r.id].slice(-2)
                          : p.filter((x) => x !== r.id),
                      )
                    }
                  />
                  <span className={`sb-run-status sb-phase-${r.status}`}>{r.status}</span>
                  {stale && (
                    <span className="sb-history-stale" title="Nothing has moved in this run for a while">
                      stale
                    </span>
                  )}
                  {/* A name anyone can send: shown as text, bounded, never markup or a key. */}
                  <span
                    className={`sb-history-who${who.named ? '' : ' sb-history-how'}`}
                    data-testid="history-who"
                    data-named={who.named || undefined}
                    title={who.named ? `Started by ${who.text}` : `Started over ${who.text}`}
                  >
                    {who.text}
                  </span>
                  <span title={r.createdAt}>{ago(r.createdAt, now)}</span>
                  <span>{duration(r)}</span>
                  {tokens !== undefined && <span>{formatTokens(tokens)} tokens</span>}
                  {r.cost !== undefined && (
                    <span
                      data-testid="history-cost"
                      data-cost={r.cost}
                      title="Cost of its priced model calls"
                    >
                      {formatCost(r.cost)}
                    </span>
                  )}
                  {r.attached && (
                    <span
                      className="sb-history-attached"
                      data-testid="history-attached"
                      data-state={r.attached.state}
                      title={`Run headless by \`switchboard run --attach\` on ${r.attached.host} (${r.attached.state})`}
                    >
                      headless · {r.attached.host}
                      {r.attached.state === 'connected' || r.attached.state === 'ended'
                        ? ''
                        : ` · ${r.attached.state}`}
                    </span>
                  )}
                  {r.forkedAt && (
                    <span
                      className="sb-history-fork"
                      data-testid="history-fork"
                      title={`Forked from run ${r.parentRunId} at ${r.forkedAt.nodeId}, turn ${r.forkedAt.turn}`}
                    >
                      ↳ from {r.forkedAt.nodeId}:{r.forkedAt.turn}
                    </span>
                  )}
                  <span className="sb-spacer" />
                  <button
                    type="button"
                    data-testid="history-open"
                    disabled={r.id === snap.view.runId}
                    onClick={() => void runs.open(r)}
                  >
                    Open
                  </button>
                  {cancellable && (
                    <button
                      type="button"
                      data-testid="history-cancel"
                      onClick={() => void runs.cancelRun(r.id).then(load)}
                    >
                      Cancel
                    </button>
                  )}
                  {path && (
                    <span className="sb-history-path" data-testid="history-path" title={path}>
                      {path}
                    </span>
                  )}
                </li>
              );
            })}
          </ol>
        </div>
      )}
    </span>
  );
}
