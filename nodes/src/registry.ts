/** A typed registry of node kinds that fails loudly on duplicates and unknown kinds. */
import type { TSchema } from '@sinclair/typebox';
import type { KindCatalog } from '@switchboard/schemas';
import type { NodeKindDefinition } from './kind.js';

export class KindRegistry implements KindCatalog {
  private readonly kinds = new Map<string, NodeKindDefinition>();

  /** Adds a kind. Throws when a kind of that name is already registered. */
  register<S extends TSchema>(def: NodeKindDefinition<S>): this {
    if (!/^[a-z][A-Za-z0-9_-]*(\/[a-z][A-Za-z0-9_-]*)?$/.test(def.kind))
      throw new Error(
        `Node kind "${def.kind}" has an invalid name: use letters, digits, _ or -, optionally "vendor/kind"`,
      );
    if (this.kinds.has(def.kind)) throw new Error(`Node kind "${def.kind}" is already registered`);
    this.kinds.set(def.kind, def as unknown as NodeKindDefinition);
    return this;
  }

  get(kind: string): NodeKindDefinition | undefined {
    return this.kinds.get(kind);
  }

  /** Like `get`, but throws for an unknown kind. */
  require(kind: string): NodeKindDefinition {
    const def = this.kinds.get(kind);
    if (!def)
      throw new Error(`Unknown node kind "${kind}"; registered: ${[...this.kinds.keys()].join(', ')}`);
    return def;
  }

  has(kind: string): boolean {
    return this.kinds.has(kind);
  }

  list(): NodeKindDefinition[] {
    return [...this.kinds.values()];
  }

  /** A copy that can be extended without touching this registry. */
  clone(): KindRegistry {
    const r = new KindRegistry();
    for (const d of this.kinds.values()) r.register(d);
    return r;
  }
}
