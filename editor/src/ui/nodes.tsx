/**
 * Node faces. One component draws every kind from its registry definition (ports → handles,
 * `display` → colour, icon and label, `summary` → the line that matters at a glance); teams add a
 * resizer. Components are memoized and read run state, problems and links per node id, so an
 * update to one node re-renders only that node.
 */
import type { NodeKindDefinition, PortSpec } from '@switchboard/nodes';
import { Handle, type NodeProps, NodeResizer, Position } from '@xyflow/react';
import { type CSSProperties, memo } from 'react';
import type { SbNode } from '../store/editorStore.js';
import { countRender } from './bench.js';
import { useEditor, useKeyed } from './context.js';
import { NodeCounters } from './NodeCounters.js';
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

function summaryOf(def: NodeKindDefinition | undefined, config: Record<string, unknown>): string {
  if (!def?.summary) return '';
  try {
    return String(def.summary(config as never) ?? '');
  } catch {
    // A config the kind cannot summarise is invalid; the problems list says why.
    return '';
  }
}

function titleOf(id: string, data: SbNode['data']): string {
  if (data.label) return data.label;
  const name = data.config.name;
  return typeof name === 'string' && name ? name : id;
}

function Face({ id, data, group }: { id: string; data: SbNode['data']; group: boolean }) {
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
  const summary = summaryOf(def, data.config);
  const cls = [
    'sb-node',
    group ? 'sb-node-group' : '',
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
        <span className="sb-node-icon" aria-hidden>
          {def?.display.icon ?? '?'}
        </span>
        <span className="sb-node-title">{titleOf(id, data)}</span>
        <span className="sb-node-kind">{def?.display.label ?? `unknown kind "${data.kind}"`}</span>
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
      {summary && <div className="sb-node-summary">{summary}</div>}
      <NodeCounters id={id} />
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

export const KindNode = memo(function KindNode({ id, data }: NodeProps<SbNode>) {
  return <Face id={id} data={useContent(id, data)} group={false} />;
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
