/**
 * Where a decider (or any node with route fields) can send control: its own outgoing handover
 * edges, and for the transition decider of an fsm team the drawn transitions of the team's states
 * as well — the same set the validator accepts (`schemas/src/validate.ts`, "Decider routes").
 */
import type { Flow } from '@switchboard/schemas';

export interface RouteChoice {
  /** The edge id written into the route field. */
  id: string;
  /** What a person reads: the target's name and the edge's own label. */
  label: string;
}

export function routeChoices(
  flow: Readonly<Flow>,
  nodeId: string,
  nameOf: (id: string) => string,
): RouteChoice[] {
  const self = flow.nodes.find((n) => n.id === nodeId);
  if (!self) return [];
  const sources = new Set([nodeId]);
  const team = self.parent === undefined ? undefined : flow.nodes.find((n) => n.id === self.parent);
  if (team && team.config.mode === 'fsm' && team.config.decider === nodeId)
    for (const n of flow.nodes) if (n.parent === team.id && n.id !== nodeId) sources.add(n.id);
  const out: RouteChoice[] = [];
  for (const e of flow.edges) {
    if (e.kind !== 'handover' || !sources.has(e.source)) continue;
    const from = e.source === nodeId ? '' : `${nameOf(e.source)} `;
    const label = e.label ? ` “${e.label}”` : '';
    out.push({ id: e.id, label: `${from}→ ${nameOf(e.target)}${label} (${e.id})` });
  }
  return out;
}
