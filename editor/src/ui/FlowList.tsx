/**
 * The flows on the server, in Open…: id, name, last change and who made it, with search, sort
 * and delete. Flows that share a name are told apart by their ids (always shown) and a note.
 */
import { useMemo, useState } from 'react';
import type { FlowSummary } from '../model/api.js';
import { useEditor } from './context.js';

export type FlowSort = 'recent' | 'name' | 'id';

/** The flows whose id, name, description or author contain every word of `query`, sorted. */
export function filterFlows(list: FlowSummary[], query: string, sort: FlowSort): FlowSummary[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const hit = (f: FlowSummary) => {
    const text = [f.id, f.name, f.description, f.updatedBy].join('\n').toLowerCase();
    return words.every((w) => text.includes(w));
  };
  const byId = (a: FlowSummary, b: FlowSummary) => a.id.localeCompare(b.id);
  const cmp: Record<FlowSort, (a: FlowSummary, b: FlowSummary) => number> = {
    recent: (a, b) => (b.updatedAt ?? '').localeCompare(a.updatedAt ?? '') || byId(a, b),
    name: (a, b) => (a.name ?? a.id).localeCompare(b.name ?? b.id) || byId(a, b),
    id: byId,
  };
  return list.filter(hit).sort(cmp[sort]);
}

function when(iso: string | undefined): string {
  if (!iso) return '';
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? '' : t.toLocaleString();
}

export function FlowList(props: {
  flows: FlowSummary[];
  open(f: FlowSummary): void;
  remove(f: FlowSummary): Promise<void>;
}) {
  const { collab } = useEditor();
  const [query, setQuery] = useState('');
  const [sort, setSort] = useState<FlowSort>('recent');
  const [confirming, setConfirming] = useState<string | undefined>();
  const shown = useMemo(() => filterFlows(props.flows, query, sort), [props.flows, query, sort]);
  const sameName = useMemo(() => {
    const n = new Map<string, number>();
    for (const f of props.flows) n.set(f.name ?? f.id, (n.get(f.name ?? f.id) ?? 0) + 1);
    return n;
  }, [props.flows]);
  return (
    <>
      <div className="sb-flow-tools">
        <input
          type="search"
          placeholder="Search by name, id or author"
          aria-label="Search flows"
          data-testid="flow-search"
          value={query}
          onChange={(e) => setQuery(e.target.value)}
        />
        <select
          aria-label="Sort flows"
          data-testid="flow-sort"
          value={sort}
          onChange={(e) => setSort(e.target.value as FlowSort)}
        >
          <option value="recent">Last changed</option>
          <option value="name">Name</option>
          <option value="id">Id</option>
        </select>
      </div>
      {shown.length === 0 && <p className="sb-help">No flow matches.</p>}
      <ul className="sb-gallery sb-flow-list" data-testid="server-flows">
        {shown.map((f) => {
          const twins = (sameName.get(f.name ?? f.id) ?? 1) - 1;
          return (
            <li key={f.id} data-testid={`flow-row-${f.id}`} data-flow-id={f.id}>
              <button type="button" data-testid={`server-flow-${f.id}`} onClick={() => props.open(f)}>
                <strong>{f.name ?? f.id}</strong>
                <code className="sb-flow-id">{f.id}</code>
                <span className="sb-help">{f.description ?? ''}</span>
                <span className="sb-gallery-meta" data-testid="flow-changed">
                  {when(f.updatedAt)}
                  {f.updatedBy ? ` · by ${f.updatedBy}` : ''}
                  {f.nodes !== undefined ? ` · ${f.nodes} nodes` : ''}
                  {twins ? ` · ${twins} other flow${twins === 1 ? '' : 's'} named so` : ''}
                  {collab?.room === f.id ? ' · open here' : ''}
                </span>
              </button>
              {confirming === f.id ? (
                <span className="sb-confirm">
                  Delete {f.id} for everyone?{' '}
                  <button
                    type="button"
                    className="sb-danger sb-row-action"
                    data-testid={`confirm-delete-${f.id}`}
                    onClick={() => {
                      setConfirming(undefined);
                      void props.remove(f);
                    }}
                  >
                    Delete
                  </button>
                  <button type="button" className="sb-row-action" onClick={() => setConfirming(undefined)}>
                    Keep
                  </button>
                </span>
              ) : (
                <button
                  type="button"
                  className="sb-row-action"
                  data-testid={`delete-flow-${f.id}`}
                  aria-label={`Delete ${f.id}`}
                  title={`Delete ${f.id}`}
                  onClick={() => setConfirming(f.id)}
                >
                  Delete
                </button>
              )}
            </li>
          );
        })}
      </ul>
    </>
  );
}
