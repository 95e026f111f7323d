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
  const kind = props.data?.kind ?? 'handover';
  const [path, labelX, labelY] =
    kind === 'handover' ? getSmoothStepPath({ ...props, borderRadius: 12 }) : getBezierPath(props);
  const severity = mark ? mark.slice(0, mark.indexOf('\n')) : '';
  const stroke = severity === 'error' ? '#dc2626' : (EDGE_COLORS[kind] ?? '#64748b');
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
      className={`sb-edge sb-edge-${kind}${severity ? ` sb-edge-${severity}` : ''}`}
      style={{
        stroke,
        strokeWidth: props.selected ? 3 : kind === 'delegate' ? 2.5 : 1.8,
        strokeDasharray: DASH[kind],
      }}
    />
  );
});

export const edgeTypes = { handover: FlowEdge, tools: FlowEdge, delegate: FlowEdge, observe: FlowEdge };
