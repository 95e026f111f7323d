/** Two runs compared: per node, where each ran, and the difference in output, tokens and time. */
import { useSyncExternalStore } from 'react';
import type { CompareNode } from '../run/compare.js';
import type { RunSession } from '../run/runSession.js';
import { formatMs, formatTokens } from './NodeCounters.js';

function tokens(n: CompareNode['a']): string {
  return n ? formatTokens(n.promptTokens + n.completionTokens) : '—';
}

function delta(a: number | undefined, b: number | undefined, fmt: (n: number) => string): string {
  if (a === undefined || b === undefined) return '';
  const d = b - a;
  return d === 0 ? '=' : `${d > 0 ? '+' : '−'}${fmt(Math.abs(d))}`;
}

export function ComparePanel({ runs }: { runs: RunSession }) {
  const snap = useSyncExternalStore(runs.subscribe, runs.getSnapshot);
  const c = snap.comparison;
  if (!c) return null;
  return (
    <section className="sb-compare" data-testid="compare-panel" data-a={c.a} data-b={c.b}>
      <header className="sb-history-head">
        <strong>
          Compare <span title={c.a}>A</span> · <span title={c.b}>B</span>
        </strong>
        <span className="sb-help">on the canvas: A only, B only, both</span>
        <button type="button" data-testid="btn-compare-close" onClick={() => runs.endCompare()}>
          Close
        </button>
      </header>
      <table className="sb-compare-table">
        <thead>
          <tr>
            <th>node</th>
            <th>ran in</th>
            <th>tokens A / B</th>
            <th>time A / B</th>
            <th>output</th>
          </tr>
        </thead>
        <tbody>
          {c.nodes.map((n) => {
            const same = n.outputA === n.outputB;
            return (
              <tr
                key={n.nodeId}
                data-testid="compare-row"
                data-node={n.nodeId}
                data-side={n.side}
                data-same-output={same}
              >
                <td>{n.nodeId}</td>
                <td>{n.side === 'both' ? 'A and B' : n.side.toUpperCase()}</td>
                <td>
                  {tokens(n.a)} / {tokens(n.b)}{' '}
                  {delta(
                    n.a && n.a.promptTokens + n.a.completionTokens,
                    n.b && n.b.promptTokens + n.b.completionTokens,
                    formatTokens,
                  )}
                </td>
                <td>
                  {n.a ? formatMs(n.a.elapsedMs) : '—'} / {n.b ? formatMs(n.b.elapsedMs) : '—'}
                </td>
                <td className="sb-compare-output">
                  {same ? (
                    (n.outputA ?? '')
                  ) : (
                    <>
                      <div>A: {n.outputA ?? '—'}</div>
                      <div>B: {n.outputB ?? '—'}</div>
                    </>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
