/**
 * The definition of a node kind: one object read by the editor (palette, inspector form, node
 * face) and by the runtime (behaviour). Third parties add kinds the same way.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import type { EdgeKindT, KindInfo, KindRole } from '@switchboard/schemas';
import type { KindBehavior } from './runtime-api.js';

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
   * Behaviour, written against the interfaces of `runtime-api.ts` (model, tools, state, emit,
   * clock): `flow` for nodes on the control path, `observer` for observers, `team` for team
   * policies. Kinds the runtime ignores (notes, tools) leave it out.
   */
  // biome-ignore lint/suspicious/noExplicitAny: each kind's behaviour is typed by its own config
  behavior?: KindBehavior<any>;
}

/** Identity helper that keeps the config type of a kind definition. */
export function defineKind<S extends TSchema>(def: NodeKindDefinition<S>): NodeKindDefinition<S> {
  return def;
}

export type { KindRole };
