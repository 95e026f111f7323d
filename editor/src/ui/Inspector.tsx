/**
 * The right-hand panel: the selected node's or edge's form, generated from its schema, or the
 * flow's settings when nothing is selected.
 */
import { DEFAULT_DECIDER_ROUTES, EDGE_CONFIG_SCHEMAS, type FlowEdgeT } from '@switchboard/schemas/core';
import { lazy, Suspense, useId, useSyncExternalStore } from 'react';
import { edgeCaption } from '../model/captions.js';
import { routeChoices } from '../model/routes.js';
import type { JsonSchema } from '../model/schemaForm.js';
import type { EditorStore } from '../store/editorStore.js';
import { useDocVersion, useEditor } from './context.js';
import { JsonEditor } from './fields.js';
import { type RefChoices, SchemaForm } from './SchemaForm.js';

// Loaded when the flow settings are first opened.
const FlowSettings = lazy(() => import('./FlowSettings.js').then((m) => ({ default: m.FlowSettings })));

function useSelection(store: EditorStore) {
  return useSyncExternalStore(store.subscribe, store.getSelection);
}

/** Names a field may refer to; reads the flow's tables, and its nodes only for kinds that refer to nodes. */
function refChoices(
  store: EditorStore,
  kind:
    | {
        role?: string;
        modelRefs?: readonly string[];
        serverRefs?: readonly string[];
        nodeRefs?: readonly string[];
        routeRefs?: readonly string[];
      }
    | undefined,
  nodeId?: string,
): RefChoices {
  const keys = (v: unknown) => (v && typeof v === 'object' ? Object.keys(v) : []);
  const nodes = kind?.nodeRefs?.length
    ? store.nodeIds().map((id) => {
        const name = store.displayName(id);
        return { id, label: id === name ? id : `${name} (${id})` };
      })
    : [];
  const routeRefs = kind?.routeRefs ?? (kind?.role === 'decider' ? DEFAULT_DECIDER_ROUTES : []);
  return {
    models: keys(store.meta('models')),
    servers: keys(store.meta('mcpServers')),
    nodes,
    modelRefs: new Set(kind?.modelRefs ?? []),
    serverRefs: new Set(kind?.serverRefs ?? []),
    nodeRefs: new Set(kind?.nodeRefs ?? []),
    // Read when a route field is drawn: most forms have none, and typing elsewhere never pays for it.
    routes: () =>
      nodeId !== undefined && routeRefs.length > 0
        ? routeChoices(store.flowView(), nodeId, (n) => store.displayName(n))
        : [],
    routeRefs,
  };
}

function ProblemsOf({ id }: { id: string }) {
  const { store } = useEditor();
  const set = useSyncExternalStore(store.subscribeProblems, store.getProblems);
  const list = [
    ...set.errors.map((p) => ({ p, sev: 'error' })),
    ...set.warnings.map((p) => ({ p, sev: 'warning' })),
  ].filter(({ p }) => p.nodeId === id || p.edgeId === id);
  if (!list.length) return null;
  return (
    <ul className="sb-inspector-problems" aria-label="Problems of this element">
      {list.map(({ p, sev }, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: problems are recomputed as a whole
        <li key={i} className={`sb-problem-${sev}`}>
          {p.message}
        </li>
      ))}
    </ul>
  );
}

function NodeInspector({ id }: { id: string }) {
  const { store } = useEditor();
  useDocVersion(store);
  const labelId = useId();
  const node = store.readNode(id);
  if (!node) return null;
  const def = store.registry.get(node.kind);
  return (
    <section className="sb-inspector" aria-label={`Inspector: ${node.kind} ${id}`} data-testid="inspector">
      <h2>
        <span className="sb-swatch" style={{ background: def?.display.color }} aria-hidden>
          {def?.display.icon}
        </span>{' '}
        {def?.display.label ?? node.kind} <code data-testid="inspector-id">{id}</code>
      </h2>
      {def && <p className="sb-help">{def.display.description}</p>}
      <ProblemsOf id={id} />
      <div className="sb-field">
        <label htmlFor={labelId}>Label</label>
        <input
          id={labelId}
          data-testid="node-label"
          value={node.label ?? ''}
          placeholder={id}
          onChange={(e) => store.setNodeLabel(id, e.target.value, true)}
        />
      </div>
      {def ? (
        <SchemaForm
          schema={def.configSchema as unknown as JsonSchema}
          value={node.config}
          refs={refChoices(store, def, id)}
          onKeyChange={(k, v, typing) => store.setConfig({ node: id }, k, v, typing)}
        />
      ) : (
        <p className="sb-field-error">No kind "{node.kind}" is registered; its config is shown as JSON.</p>
      )}
      <details>
        <summary>Config as JSON</summary>
        <JsonEditor
          label="Config"
          value={node.config}
          testid="config-json"
          onChange={(v) => {
            if (v && typeof v === 'object' && !Array.isArray(v))
              store.replaceConfig({ node: id }, v as Record<string, unknown>);
          }}
        />
      </details>
    </section>
  );
}

function EdgeInspector({ id }: { id: string }) {
  const { store } = useEditor();
  useDocVersion(store);
  const labelId = useId();
  const edge: FlowEdgeT | undefined = store.readEdge(id);
  if (!edge) return null;
  const schema = EDGE_CONFIG_SCHEMAS[edge.kind] as unknown as JsonSchema | undefined;
  const src = store.readNode(edge.source);
  const srcDef = src ? store.registry.get(src.kind) : undefined;
  const caption = edgeCaption(edge, srcDef?.role, src?.config);
  return (
    <section
      className="sb-inspector"
      aria-label={`Inspector: ${edge.kind} edge ${id}`}
      data-testid="inspector"
    >
      <h2>
        {edge.kind} edge <code data-testid="inspector-id">{id}</code>
      </h2>
      <p className="sb-help">
        {store.displayName(edge.source)} → {store.displayName(edge.target)}
        {caption && (
          <>
            <br />
            Shown as: <em>{caption}</em>
          </>
        )}
      </p>
      {srcDef?.role === 'decider' && (
        <p className="sb-help">This edge is chosen by the decider's rules; edit them on the decider.</p>
      )}
      <ProblemsOf id={id} />
      <div className="sb-field">
        <label htmlFor={labelId}>Label</label>
        <input
          id={labelId}
          data-testid="edge-label"
          value={edge.label ?? ''}
          onChange={(e) => store.setEdgeLabel(id, e.target.value)}
        />
      </div>
      {schema && (
        <fieldset className="sb-fieldset">
          <legend>{edge.kind === 'handover' ? 'Handover protocol' : 'Settings'}</legend>
          <SchemaForm
            schema={schema}
            value={edge.config ?? {}}
            refs={refChoices(store, undefined)}
            onKeyChange={(k, v, typing) => store.setConfig({ edge: id }, k, v, typing)}
          />
        </fieldset>
      )}
    </section>
  );
}

export function Inspector() {
  const { store } = useEditor();
  const sel = useSelection(store);
  if (sel.nodes.length === 1 && sel.edges.length === 0)
    return <NodeInspector key={sel.nodes[0]} id={sel.nodes[0]!} />;
  if (sel.edges.length === 1 && sel.nodes.length === 0)
    return <EdgeInspector key={sel.edges[0]} id={sel.edges[0]!} />;
  if (sel.nodes.length + sel.edges.length > 1)
    return (
      <section className="sb-inspector" data-testid="inspector">
        <h2>{sel.nodes.length + sel.edges.length} selected</h2>
        <p className="sb-help">
          Copy, duplicate, delete or drag them together. Select one element to edit it.
        </p>
      </section>
    );
  return (
    <Suspense fallback={null}>
      <FlowSettings />
    </Suspense>
  );
}
