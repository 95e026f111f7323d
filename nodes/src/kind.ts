/**
 * The definition of a node kind: one object read by the editor (palette, inspector form, node
 * face) and by the runtime (behaviour). Third parties add kinds the same way.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import type { EdgeKindT, KindInfo, KindRole } from '@switchboard/schemas';

export interface PortSpec {
  id: string;
  type: 'source' | 'target';
  side: 'top' | 'right' | 'bottom' | 'left';
  /** Edge kinds that may use this port. */
  accepts: readonly EdgeKindT[];
  label?: string;
}

export interface KindDisplay {
  label: string;
  /** CSS colour of the node's accent. */
  color: string;
  /** A short glyph shown on the node face and in the palette. */
  icon: string;
  description: string;
  /** Palette group. */
  category: 'flow' | 'actors' | 'control' | 'tools' | 'canvas';
  /** Drawn as a container that holds other nodes. */
  group?: boolean;
  /** Default size when placed on the canvas. */
  size?: { width: number; height: number };
}

export interface NodeKindDefinition<S extends TSchema = TSchema> extends KindInfo {
  kind: string;
  role: KindRole;
  configSchema: S;
  /** A fresh default config for a new node of this kind. */
  defaults: () => Static<S>;
  ports: readonly PortSpec[];
  display: KindDisplay;
  /** One line shown on the node face, derived from the config. */
  summary?: (config: Static<S>) => string;
  /**
   * Behaviour, filled in by the runtime issue: the interpreter calls it with the interfaces it
   * supplies (model, tools, state, emit, clock). Kinds without behaviour (notes) leave it out.
   */
  behavior?: unknown;
}

/** Identity helper that keeps the config type of a kind definition. */
export function defineKind<S extends TSchema>(def: NodeKindDefinition<S>): NodeKindDefinition<S> {
  return def;
}

export type { KindRole };
