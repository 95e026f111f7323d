/** Edge looks per kind: handover solid, tools dashed, delegate double-dotted, observe dotted. */
import { BaseEdge, EdgeLabelRenderer, type EdgeProps, getBezierPath, getSmoothStepPath } from '@xyflow/react';
import { memo } from 'react';
import { EDGE_COLORS } from '../model/edgeStyle.js';
import type { SbEdge } from '../store/editorStore.js';
import { useEditor, useKeyed } from './context.js';
import { LABEL_MAX_WIDTH, labelSpots, parseSpot } from './edgeLabels.js';

const near = (a: number, b: number) => Math.abs(a - b) < 1;

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
  const caption = props.data?.caption ?? '';
  // The placed spot holds while the edge's ends are where they were when it was computed.
  const spot = parseSpot(useKeyed(labelSpots, props.id));
  const fresh =
    spot &&
    near(spot.sx, props.sourceX) &&
    near(spot.sy, props.sourceY) &&
    near(spot.tx, props.targetX) &&
    near(spot.ty, props.targetY);
  const at = fresh ? spot : { x: labelX, y: labelY, width: LABEL_MAX_WIDTH };
  const stroke = run !== '' ? '#16a34a' : severity === 'error' ? '#dc2626' : (EDGE_COLORS[kind] ?? '#64748b');
  return (
    <>
      <BaseEdge
        id={props.id}
        path={path}
        markerEnd={props.markerEnd}
        className={`sb-edge sb-edge-${kind}${severity ? ` sb-edge-${severity}` : ''}${run ? ` sb-edge-run-${run}` : ''}`}
        style={{
          stroke,
          strokeWidth: run === 'active' ? 4 : props.selected ? 3 : kind === 'delegate' ? 2.5 : 1.8,
          strokeDasharray: run === 'active' ? '8 6' : DASH[kind],
          // Edges a run took stay green, fainter than the one control passes along now.
          strokeOpacity: run === 'taken' ? 0.6 : undefined,
        }}
      />
      {caption && (
        <EdgeLabelRenderer>
          <div
            className={`sb-edge-label sb-edge-label-${kind}${props.selected ? ' sb-edge-label-selected' : ''}`}
            data-testid={`edge-label-${props.id}`}
            data-placed={fresh ? 'yes' : 'no'}
            title={caption}
            style={{
              transform: `translate(-50%, -50%) translate(${at.x}px, ${at.y}px)`,
              maxWidth: at.width,
            }}
          >
            {caption}
          </div>
        </EdgeLabelRenderer>
      )}
    </>
  );
});

export const edgeTypes = { handover: FlowEdge, tools: FlowEdge, delegate: FlowEdge, observe: FlowEdge };
