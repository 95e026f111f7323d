/**
 * What the validator needs to know about node kinds. The registry in `@switchboard/nodes`
 * implements it; `schemas` itself imports nothing of ours, so the catalog is passed in.
 */
import type { TSchema } from '@sinclair/typebox';
import { type Problem, problem } from './codes.js';
import type { EdgeKindT } from './flow.js';

/** The part a kind plays in the graph; edge legality is decided by roles, so new kinds fit in. */
export type KindRole =
  | 'start'
  | 'end'
  | 'agent'
  | 'team'
  | 'decider'
  | 'observer'
  | 'tool'
  | 'human'
  | 'note'
  | 'step';

export interface KindInfo {
  kind: string;
  role: KindRole;
  configSchema: TSchema;
  /** Config fields holding a model reference (top-level or dotted paths). */
  modelRefs?: readonly string[];
  /** Config fields holding an MCP server reference. */
  serverRefs?: readonly string[];
  /** Config fields holding a node id of this flow. */
  nodeRefs?: readonly string[];
  /** Config fields holding an edge id of this flow. */
  edgeRefs?: readonly string[];
  /**
   * Config fields naming where control goes next: an outgoing handover edge of this node, or
   * `"done"`. Defaults to `rules.*.to` and `default` for kinds with the `decider` role.
   */
  routeRefs?: readonly string[];
  /**
   * Whether a node of this kind stops a cycle of handovers it sits on (deciders and humans always
   * do). For the `team` role it means the team's termination stops cycles among its members; a
   * team that merely sits on a cycle does not stop it, since control leaves it and comes back.
   */
  stopsCycles?: boolean | ((config: Record<string, unknown>) => boolean);
}

export interface KindCatalog {
  get(kind: string): KindInfo | undefined;
  /** Every registered kind, for "did you mean" hints. Optional. */
  list?(): readonly KindInfo[];
}

/** Route fields of a decider when its kind does not say otherwise (see `KindInfo.routeRefs`). */
export const DEFAULT_DECIDER_ROUTES: readonly string[] = ['rules.*.to', 'default'];

/** Roles that take part in control flow, i.e. may be joined by handover edges. */
const FLOW_ROLES: ReadonlySet<KindRole> = new Set([
  'start',
  'end',
  'agent',
  'team',
  'decider',
  'human',
  'step',
]);

function why(detail: string): Problem {
  return problem('illegal-edge', '', detail);
}

/**
 * The one rule for which edges may join which kinds; the validator and the editor's
 * connection check both call it. Returns `undefined` when legal, otherwise the problem.
 */
export function checkConnection(
  edgeKind: EdgeKindT,
  source: KindInfo,
  target: KindInfo,
): Problem | undefined {
  switch (edgeKind) {
    case 'tools':
      if (source.role !== 'tool' || target.role !== 'agent')
        return why(`a tools edge goes from a tool to an agent, not from ${source.kind} to ${target.kind}`);
      return undefined;
    case 'observe':
      if (source.role !== 'observer' || (target.role !== 'agent' && target.role !== 'team'))
        return why(
          `an observe edge goes from an observer to an agent or team, not from ${source.kind} to ${target.kind}`,
        );
      return undefined;
    case 'delegate':
      if (source.role !== 'agent' || (target.role !== 'agent' && target.role !== 'team'))
        return why(
          `a delegate edge goes from an agent to an agent or team, not from ${source.kind} to ${target.kind}`,
        );
      return undefined;
    case 'handover':
      if (!FLOW_ROLES.has(source.role) || !FLOW_ROLES.has(target.role))
        return why(
          `a handover joins flow nodes (start, agents, teams, deciders, humans, end), not ${source.kind} to ${target.kind}`,
        );
      if (source.role === 'end') return why('nothing is handed over from an end node');
      if (target.role === 'start') return why('nothing is handed over to the start node');
      return undefined;
  }
}
