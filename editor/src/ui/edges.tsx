/** Edge looks per kind: handover solid, tools dashed, delegate double-dotted, observe dotted. */
import { BaseEdge, type EdgeProps, getBezierPath, getSmoothStepPath } from '@xyflow/react';
import { memo } from 'react';
import { EDGE_COLORS } from '../model/edgeStyle.js';
import type { SbEdge } from '../store/editorStore.js';
import { useEditor, useKeyed } from './context.js';

const DASH: Record<string, string | undefined> = {
  handover: undefined,
  tools: '6 4',
  delegate: '2 3',
  observe: '1 5',
};

export const FlowEdge = memo(function FlowEdge(props: EdgeProps<SbEdge>) {
  const { store } = useEditor();
  const mark = useKeyed(store.marks, props.id);
  const run = useKeyed(store.runState.edges, props.id);
  const kind = props.data?.kind ?? 'handover';
  const [path, labelX, labelY] =
    kind === 'handover' ? getSmoothStepPath({ ...props, borderRadius: 12 }) : getBezierPath(props);
  const severity = mark ? mark.slice(0, mark.indexOf('\n')) : '';
  const stroke = run !== '' ? '#16a34a' : severity === 'error' ? '#dc2626' : (EDGE_COLORS[kind] ?? '#64748b');
  return (
    <BaseEdge
      id={props.id}
      path={path}
      markerEnd={props.markerEnd}
      label={props.data?.caption || undefined}
      labelX={labelX}
      labelY={labelY}
      labelBgPadding={[4, 2]}
      labelBgBorderRadius={3}
      labelStyle={{ fontSize: 11 }}
      className={`sb-edge sb-edge-${kind}${severity ? ` sb-edge-${severity}` : ''}${run ? ` sb-edge-run-${run}` : ''}`}
      style={{
        stroke,
        strokeWidth: run === 'active' ? 4 : props.selected ? 3 : kind === 'delegate' ? 2.5 : 1.8,
        strokeDasharray: run === 'active' ? '8 6' : DASH[kind],
        // Edges a run took stay green, fainter than the one control passes along now.
        strokeOpacity: run === 'taken' ? 0.6 : undefined,
      }}
    />
  );
});

export const edgeTypes = { handover: FlowEdge, tools: FlowEdge, delegate: FlowEdge, observe: FlowEdge };
