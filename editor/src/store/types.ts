/** The shapes the store and its parts share, and that the UI reads (re-exported by `editorStore.ts`). */
import type { Flow, Problem } from '@switchboard/schemas/core';
import type { Edge, Node } from '@xyflow/react';

export interface NodeData extends Record<string, unknown> {
  kind: string;
  label?: string;
  config: Record<string, unknown>;
}

export interface EdgeData extends Record<string, unknown> {
  kind: string;
  caption: string;
}

export type SbNode = Node<NodeData>;
export type SbEdge = Edge<EdgeData>;

export type XY = { x: number; y: number };
export type Size = { width: number; height: number };

/** A node's view state that stays out of the document until an action ends. */
export interface NodeUi {
  position?: XY;
  size?: Size;
  measured?: Size;
  dragging?: boolean;
}

/** Node changes the store understands (a subset of React Flow's `NodeChange`). */
export type NodeChangeLike =
  | { type: 'position'; id: string; position?: XY; dragging?: boolean }
  | {
      type: 'dimensions';
      id: string;
      dimensions?: Size;
      setAttributes?: boolean | 'width' | 'height';
      resizing?: boolean;
    }
  | { type: 'select'; id: string; selected: boolean }
  | { type: string; id?: string };

export type EdgeChangeLike =
  | { type: 'select'; id: string; selected: boolean }
  | { type: string; id?: string };

export interface ProblemSet {
  errors: Problem[];
  warnings: Problem[];
}

/** Severity and messages of the problems on one node or edge, as one comparable string. */
export type ProblemMark = string;

/** The shared validator's verdict on a flow (`validate` from `@switchboard/nodes`). */
export type FlowValidator = (flow: Flow) => ProblemSet;

/** Positions and sizes are written to the document as whole pixels. */
export const ROUND = (v: number) => Math.round(v);
