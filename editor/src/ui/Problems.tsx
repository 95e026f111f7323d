/** The problems list: every error and warning of the validator; a click selects its element. */
import type { Problem } from '@switchboard/schemas';
import { useReactFlow } from '@xyflow/react';
import { useState, useSyncExternalStore } from 'react';
import { useEditor } from './context.js';

export function Problems() {
  const { store } = useEditor();
  const rf = useReactFlow();
  const set = useSyncExternalStore(store.subscribeProblems, store.getProblems);
  // One line unless there are errors to fix or the reader opened the list.
  const [choice, setChoice] = useState<boolean | undefined>();
  const open = choice ?? set.errors.length > 0;
  const items: Array<{ p: Problem; sev: 'error' | 'warning' }> = [
    ...set.errors.map((p) => ({ p, sev: 'error' as const })),
    ...set.warnings.map((p) => ({ p, sev: 'warning' as const })),
  ];
  const go = (p: Problem) => {
    if (p.nodeId && store.readNode(p.nodeId)) {
      store.select({ nodes: [p.nodeId] });
      const n = rf.getInternalNode(p.nodeId);
      if (n) {
        const w = n.measured.width ?? 180;
        const h = n.measured.height ?? 60;
        rf.setCenter(n.internals.positionAbsolute.x + w / 2, n.internals.positionAbsolute.y + h / 2, {
          zoom: Math.max(rf.getZoom(), 0.8),
          duration: 200,
        });
      }
    } else if (p.edgeId && store.readEdge(p.edgeId)) store.select({ edges: [p.edgeId] });
  };
  return (
    <section className="sb-problems" aria-label="Problems" data-testid="problems" data-open={open}>
      <h3>
        <button
          type="button"
          className="sb-problems-toggle"
          data-testid="btn-problems"
          aria-expanded={open}
          onClick={() => setChoice(!open)}
        >
          {open ? '▾' : '▸'} Problems{' '}
          <span
            data-testid="problem-count"
            data-errors={set.errors.length}
            data-warnings={set.warnings.length}
          >
            {set.errors.length} errors, {set.warnings.length} warnings
          </span>
        </button>
      </h3>
      {!open ? null : items.length === 0 ? (
        <p className="sb-help" data-testid="no-problems">
          The flow is valid.
        </p>
      ) : (
        <ul>
          {items.map(({ p, sev }, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: the list is recomputed as a whole
            <li key={i}>
              <button
                type="button"
                className={`sb-problem sb-problem-${sev}`}
                data-testid="problem"
                data-code={p.code}
                data-severity={sev}
                data-node={p.nodeId}
                data-edge={p.edgeId}
                onClick={() => go(p)}
              >
                <span className="sb-problem-sev">{sev}</span> {p.message}
                <code>{p.path || '/'}</code>
                {(p.nodeId ?? p.edgeId) && <span className="sb-problem-at">{p.nodeId ?? p.edgeId}</span>}
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
