/**
 * Every registered kind, grouped by category, each with its one-line description, and a search
 * box that narrows them. Drag one onto the canvas, or click it (or focus it and press Enter): it
 * is added in view (inside the selected team when one is selected). Enter in the search box adds
 * the first match.
 */
import type { NodeKindDefinition } from '@switchboard/nodes';
import { useReactFlow } from '@xyflow/react';
import { useId, useRef, useState } from 'react';
import { KIND_MIME } from './Canvas.js';
import { useEditor } from './context.js';

const CATEGORIES: Array<[NodeKindDefinition['display']['category'], string]> = [
  ['flow', 'Flow'],
  ['actors', 'Actors'],
  ['control', 'Control'],
  ['tools', 'Tools'],
  ['canvas', 'Canvas'],
];

/** Whether a kind matches every word of a search (label, kind, category or description). */
export function kindMatches(k: NodeKindDefinition, query: string): boolean {
  const hay = `${k.display.label} ${k.kind} ${k.display.category} ${k.display.description}`.toLowerCase();
  return query
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((w) => hay.includes(w));
}

export function Palette() {
  const { store, toast } = useEditor();
  const rf = useReactFlow();
  const nth = useRef(0);
  const [query, setQuery] = useState('');
  const searchId = useId();
  const kinds = store.registry.list().filter((k) => kindMatches(k, query));
  const known = new Set(CATEGORIES.map(([c]) => c));
  const groups = [
    ...CATEGORIES.map(([c, title]) => [title, kinds.filter((k) => k.display.category === c)] as const),
    ['Other', kinds.filter((k) => !known.has(k.display.category))] as const,
  ].filter(([, list]) => list.length > 0);

  const addByKeyboard = (kind: string) => {
    const step = (nth.current++ % 8) * 24;
    const sel = store.selection.nodes;
    const team = sel.length === 1 && store.kindOf(sel[0]!)?.display.group ? sel[0]! : undefined;
    let at: { x: number; y: number };
    if (team) {
      const a = store.absolutePosition(team);
      at = { x: a.x + 32 + step, y: a.y + 56 + step };
    } else {
      const box = document.querySelector('.sb-canvas')?.getBoundingClientRect();
      const centre = box ? { x: box.left + box.width / 2, y: box.top + box.height / 2 } : { x: 400, y: 300 };
      const p = rf.screenToFlowPosition(centre);
      at = { x: p.x - 90 + step, y: p.y - 30 + step };
    }
    try {
      const id = store.addNode(kind, at);
      toast(`Added ${id}`, 'info');
    } catch (e) {
      toast((e as Error).message, 'error');
    }
  };

  return (
    <nav className="sb-palette" aria-label="Node palette" data-testid="palette">
      <label htmlFor={searchId} className="sb-sr-only">
        Search node kinds
      </label>
      <input
        id={searchId}
        type="search"
        className="sb-palette-search"
        data-testid="palette-search"
        placeholder="Search kinds…"
        value={query}
        onChange={(e) => setQuery(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && kinds[0]) {
            e.preventDefault();
            addByKeyboard(kinds[0].kind);
          } else if (e.key === 'Escape') setQuery('');
        }}
      />
      {groups.length === 0 && (
        <p className="sb-help" data-testid="palette-empty">
          No kind matches “{query}”.
        </p>
      )}
      {groups.map(([title, list]) => (
        <section key={title}>
          <h3>{title}</h3>
          <ul>
            {list.map((k) => (
              <li key={k.kind}>
                <button
                  type="button"
                  className="sb-palette-item"
                  draggable
                  data-testid={`palette-${k.kind}`}
                  aria-label={`Add ${k.display.label}: ${k.display.description}`}
                  title={k.display.description}
                  style={{ borderLeftColor: k.display.color }}
                  onDragStart={(e) => {
                    e.dataTransfer.setData(KIND_MIME, k.kind);
                    e.dataTransfer.effectAllowed = 'copy';
                  }}
                  onClick={() => addByKeyboard(k.kind)}
                >
                  <span className="sb-palette-icon" style={{ color: k.display.color }} aria-hidden>
                    {k.display.icon}
                  </span>
                  <span className="sb-palette-text">
                    <span className="sb-palette-label">{k.display.label}</span>
                    <span className="sb-palette-desc" data-testid={`palette-desc-${k.kind}`}>
                      {k.display.description}
                    </span>
                  </span>
                </button>
              </li>
            ))}
          </ul>
        </section>
      ))}
    </nav>
  );
}
