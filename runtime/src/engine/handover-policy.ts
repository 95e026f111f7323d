/**
 * What happens when an agent that could hand over along several edges ended its turn without
 * choosing one. The agent behaviour has already re-asked it (config.noHandover.reask); here the
 * flow's answer applies: the named default edge, "done" (its scope ends, said out loud), or a
 * `no_handover` failure. Never a silent end: every case emits `handover.missing`.
 */
import { RunFailure } from './errors.js';
import type { GEdge, GNode } from './graph.js';

interface NoHandoverConfig {
  default?: string;
}

/** The edges to follow instead (none: the scope ends); throws `no_handover` when the flow names no default. */
export function edgesWithoutHandover(node: GNode, emit: (e: Record<string, unknown>) => void): GEdge[] {
  const candidates = node.out.map((e) => e.id);
  const want = (node.config.noHandover as NoHandoverConfig | undefined)?.default;
  const base = { type: 'handover.missing', nodeId: node.id, candidates };
  if (want === 'done') {
    emit({ ...base, action: 'done' });
    return [];
  }
  if (want !== undefined) {
    const e = node.out.find((x) => x.id === want) ?? node.out.find((x) => x.target === want);
    if (e) {
      emit({ ...base, action: 'default', edgeId: e.id });
      return [e];
    }
  }
  emit({ ...base, action: 'fail' });
  throw new RunFailure(
    'no_handover',
    `agent "${node.id}" ended its turn without handing over; it can hand over along ${candidates
      .map((c) => `"${c}"`)
      .join(
        ', ',
      )}${want !== undefined ? ` and its default "${want}" is not one of them` : ''}: set config.noHandover.default to take an edge (or "done") in that case`,
  );
}

/**
 * The arguments of a generated handover tool: `to` may name only the tool's own target (an
 * `enum`), so a provider with structured tool calls cannot name anywhere else; the engine checks
 * the arguments against this schema for the others. Optional: the tool's name already says where.
 */
export function handoverParameters(target: string): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      to: { type: 'string', enum: [target], description: 'Who receives the work.' },
      note: { type: 'string', description: 'Optional note for the receiver.' },
    },
  };
}
