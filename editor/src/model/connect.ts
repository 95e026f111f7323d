/**
 * Which edge a drag from one handle to another would create, and whether it is allowed. The
 * legality itself is `checkConnection` from the schemas package, the rule the validator applies,
 * so the canvas never accepts an edge that validation would then reject.
 */
import type { KindRegistry, NodeKindDefinition, PortSpec } from '@switchboard/nodes';
import { checkConnection, type EdgeKindT, PROBLEM_CODES } from '@switchboard/schemas/core';

export interface ConnectionEnd {
  id: string;
  kind: string;
  handle?: string | null;
}

export type ConnectionVerdict =
  | { ok: true; kind: EdgeKindT; sourcePort: PortSpec; targetPort: PortSpec }
  | { ok: false; reason: string };

function port(def: NodeKindDefinition, type: 'source' | 'target', handle?: string | null): PortSpec[] {
  const all = def.ports.filter((p) => p.type === type);
  return handle ? all.filter((p) => p.id === handle) : all;
}

function label(def: NodeKindDefinition | undefined, kind: string): string {
  return def?.display.label.toLowerCase() ?? kind;
}

/**
 * Judges a connection from `source` to `target`. The edge kind is the first kind both ports
 * accept for which the connection is legal; when none is, the reason of the first refusal.
 */
export function judgeConnection(
  registry: KindRegistry,
  source: ConnectionEnd,
  target: ConnectionEnd,
  existing: ReadonlyArray<{ kind: string; source: string; target: string }> = [],
): ConnectionVerdict {
  if (source.id === target.id) return { ok: false, reason: PROBLEM_CODES['self-loop'] };
  const sDef = registry.get(source.kind);
  const tDef = registry.get(target.kind);
  if (!sDef || !tDef)
    return { ok: false, reason: `${PROBLEM_CODES['unknown-kind']}: "${sDef ? target.kind : source.kind}"` };
  const sPorts = port(sDef, 'source', source.handle);
  const tPorts = port(tDef, 'target', target.handle);
  if (sPorts.length === 0)
    return { ok: false, reason: `a ${label(sDef, source.kind)} has no outgoing port here` };
  if (tPorts.length === 0)
    return { ok: false, reason: `a ${label(tDef, target.kind)} has no incoming port here` };
  let firstRefusal: string | undefined;
  for (const sp of sPorts)
    for (const kind of sp.accepts)
      for (const tp of tPorts) {
        if (!tp.accepts.includes(kind)) continue;
        const bad = checkConnection(kind, sDef, tDef);
        if (bad) {
          firstRefusal ??= bad.message;
          continue;
        }
        if (existing.some((e) => e.kind === kind && e.source === source.id && e.target === target.id)) {
          firstRefusal ??= `these nodes are already joined by a ${kind} edge`;
          continue;
        }
        return { ok: true, kind, sourcePort: sp, targetPort: tp };
      }
  if (firstRefusal) return { ok: false, reason: firstRefusal };
  const gives = [...new Set(sPorts.flatMap((p) => p.accepts))].join('/');
  const takes = [...new Set(tPorts.flatMap((p) => p.accepts))].join('/');
  return {
    ok: false,
    reason: `${PROBLEM_CODES['illegal-edge']}: this port of the ${label(sDef, source.kind)} starts ${gives} edges, the ${label(tDef, target.kind)}'s port takes ${takes} edges`,
  };
}

/** The handles an edge of `kind` is drawn between when the document names none. */
export function defaultHandles(
  kind: string,
  sDef: NodeKindDefinition | undefined,
  tDef: NodeKindDefinition | undefined,
): { sourceHandle?: string; targetHandle?: string } {
  const sp = sDef?.ports.find((p) => p.type === 'source' && p.accepts.includes(kind as EdgeKindT));
  const tp = tDef?.ports.find((p) => p.type === 'target' && p.accepts.includes(kind as EdgeKindT));
  return { sourceHandle: sp?.id, targetHandle: tp?.id };
}
