/**
 * Node faces. One component draws every kind from its registry definition (ports → handles,
 * `display` → colour, icon and label, `summary` → the line that matters at a glance); teams add a
 * resizer. Components are memoized and read run state, problems and links per node id, so an
 * update to one node re-renders only that node.
 */
import type { NodeKindDefinition, PortSpec } from '@switchboard/nodes';
import { Handle, type NodeProps, NodeResizer, Position } from '@xyflow/react';
import { type CSSProperties, memo, useEffect, useState } from 'react';
import { faceFact } from '../model/faceFact.js';
import type { SbNode } from '../store/editorStore.js';
import { countRender } from './bench.js';
import { useEditor, useKeyed } from './context.js';
import { PinBadge } from './PinBadge.js';

const SIDE: Record<PortSpec['side'], Position> = {
  top: Position.Top,
  right: Position.Right,
  bottom: Position.Bottom,
  left: Position.Left,
};

function Handles({ nodeId, def }: { nodeId: string; def: NodeKindDefinition | undefined }) {
  if (!def) return null;
  const bySide = new Map<string, PortSpec[]>();
  for (const p of def.ports) bySide.set(p.side, [...(bySide.get(p.side) ?? []), p]);
  return (
    <>
      {def.ports.map((p) => {
        const list = bySide.get(p.side)!;
        const i = list.indexOf(p);
        const along = `${((i + 1) / (list.length + 1)) * 100}%`;
        const style: CSSProperties =
          p.side === 'top' || p.side === 'bottom' ? { left: along } : { top: along };
        const title = `${p.label ?? p.id}: ${p.type === 'source' ? 'starts' : 'takes'} ${p.accepts.join('/')} edges`;
        return (
          <Handle
            key={p.id}
            id={p.id}
            type={p.type}
            position={SIDE[p.side]}
            style={style}
            className={`sb-handle sb-handle-${p.accepts[0]}`}
            data-testid={`handle-${nodeId}-${p.id}`}
            title={title}
            aria-label={title}
          />
        );
      })}
    </>
  );
}

function titleOf(id: string, data: SbNode['data']): string {
  if (data.label) return data.label;
  const name = data.config.name;
  return typeof name === 'string' && name ? name : id;
}

function Face({
  id,
  data,
  group,
  note = false,
}: {
  id: string;
  data: SbNode['data'];
  group: boolean;
  note?: boolean;
}) {
  countRender(id);
  const { store } = useEditor();
  const def = store.registry.get(data.kind);
  const run = useKeyed(store.runState.store, id);
  const breakpoint = useKeyed(store.runState.breakpoints, id);
  const compared = useKeyed(store.runState.compare, id);
  const others = useKeyed(store.presence, id);
  const mark = useKeyed(store.marks, id);
  const link = useKeyed(store.links, id);
  const severity = mark ? mark.slice(0, mark.indexOf('\n')) : '';
  const messages = mark ? mark.slice(mark.indexOf('\n') + 1) : '';
  const fact = faceFact(def, data.config);
  const title = titleOf(id, data);
  const kindLabel = def?.display.label ?? `unknown kind "${data.kind}"`;
  const cls = [
    'sb-node',
    group ? 'sb-node-group' : '',
    note ? 'sb-node-note' : '',
    severity ? `sb-node-${severity}` : '',
    run.active ? 'sb-run-active' : '',
    run.status !== 'idle' ? `sb-run-${run.status}` : '',
    others ? 'sb-node-peer-selected' : '',
    compared ? `sb-compare-${compared}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  // Co-editors who have this node selected: `name|color` per line.
  const peers = others ? others.split('\n').map((l) => l.split('|') as [string, string]) : [];
  const style = { '--accent': def?.display.color ?? '#6b7280' } as CSSProperties & Record<string, string>;
  if (peers.length) style['--peer'] = peers[0]![1];
  return (
    <div
      className={cls}
      style={style}
      data-testid={`node-${id}`}
      data-kind={data.kind}
      data-problem={severity || undefined}
      data-run-status={run.status}
      data-run-active={run.active || undefined}
      data-breakpoint={breakpoint || undefined}
      data-compare={compared || undefined}
      data-peers={peers.map((p) => p[0]).join(', ') || undefined}
      title={messages || undefined}
    >
      {breakpoint && (
        <span
          className="sb-node-breakpoint"
          role="img"
          aria-label="Breakpoint: the run pauses before this node"
        />
      )}
      {peers.length > 0 && (
        <span className="sb-node-peers" data-testid={`node-peers-${id}`}>
          {peers.map(([name, color]) => (
            <span key={name} className="sb-node-peer-tag" style={{ background: color }}>
              {name}
            </span>
          ))}
        </span>
      )}
      <div className="sb-node-head">
        <span className="sb-node-kind" data-testid={`node-kind-${id}`}>
          <span className="sb-node-icon" aria-hidden>
            {def?.display.icon ?? '?'}
          </span>
          {kindLabel}
        </span>
        {(!note || data.label) && (
          <span className="sb-node-title" title={title}>
            {title}
          </span>
        )}
      </div>
      {run.status === 'paused' && (
        <span
          className="sb-node-paused"
          data-testid={`node-paused-${id}`}
          role="img"
          aria-label="The run is paused before this node"
        >
          ⏸ paused here
        </span>
      )}
      {note ? (
        <NoteBody text={typeof data.config.text === 'string' ? data.config.text : ''} />
      ) : (
        fact && (
          <div className="sb-node-fact" data-testid={`node-fact-${id}`} title={fact}>
            {fact}
          </div>
        )
      )}
      <PinBadge id={id} config={data.config} />
      {link && <div className="sb-node-links">{link}</div>}
      {severity && (
        <div
          className={`sb-node-badge sb-badge-${severity}`}
          role="img"
          aria-label={`${severity}: ${messages}`}
        >
          {severity === 'error' ? '!' : '?'}
        </div>
      )}
      <Handles nodeId={id} def={def} />
    </div>
  );
}

/** The node's content as it is now: typing in the inspector changes it without a new React Flow node. */
function useContent(id: string, data: SbNode['data']): SbNode['data'] {
  const { store } = useEditor();
  return useKeyed(store.content, id) ?? data;
}

type Render = (text: string) => string;
let markdown: Promise<Render> | undefined;
/** The Markdown renderer, loaded the first time a note is drawn. */
function loadMarkdown(): Promise<Render> {
  markdown ??= import('../model/markdown.js').then((m) => m.renderMarkdown);
  return markdown;
}

/** A note's text as sanitised Markdown (plain text until the renderer has loaded). */
function NoteBody({ text }: { text: string }) {
  const [render, setRender] = useState<Render | undefined>();
  useEffect(() => {
    let live = true;
    void loadMarkdown().then((r) => live && setRender(() => r));
    return () => {
      live = false;
    };
  }, []);
  if (!render)
    return (
      <div className="sb-note-body nowheel" data-testid="note-body">
        {text}
      </div>
    );
  return (
    <div
      className="sb-note-body sb-markdown nowheel"
      data-testid="note-body"
      data-rendered="true"
      // biome-ignore lint/security/noDangerouslySetInnerHtml: renderMarkdown escapes raw HTML and sanitises with DOMPurify
      dangerouslySetInnerHTML={{ __html: render(text) }}
    />
  );
}

export const KindNode = memo(function KindNode({ id, data: given, selected }: NodeProps<SbNode>) {
  const { store } = useEditor();
  const data = useContent(id, given);
  if (store.registry.get(data.kind)?.role !== 'note') return <Face id={id} data={data} group={false} />;
  // A note is sized by its author: the size goes into the flow like a team's.
  return (
    <>
      <NodeResizer
        isVisible={!!selected}
        minWidth={140}
        minHeight={60}
        onResizeEnd={(_e, box) => store.commitResize(id, box)}
      />
      <Face id={id} data={data} group={false} note />
    </>
  );
});

export const TeamNode = memo(function TeamNode({ id, data, selected }: NodeProps<SbNode>) {
  const { store } = useEditor();
  return (
    <>
      <NodeResizer
        isVisible={!!selected}
        minWidth={200}
        minHeight={120}
        onResizeEnd={(_e, box) => store.commitResize(id, box)}
      />
      <Face id={id} data={useContent(id, data)} group />
    </>
  );
});

/** Defined once at module level: React Flow re-mounts every node when this object changes. */
export const nodeTypes = { kind: KindNode, group: TeamNode };
