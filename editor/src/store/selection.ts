/**
 * Which nodes and edges are selected. Local to this editor (co-editors see it through presence),
 * never in the document; read by the projection to mark React Flow objects `selected`.
 */
export interface SelectionView {
  nodes: string[];
  edges: string[];
}

export class Selection {
  private nodes = new Set<string>();
  private edges = new Set<string>();
  private snapshot: SelectionView = { nodes: [], edges: [] };

  hasNode(id: string): boolean {
    return this.nodes.has(id);
  }

  hasEdge(id: string): boolean {
    return this.edges.has(id);
  }

  setNode(id: string, selected: boolean): void {
    if (selected) this.nodes.add(id);
    else this.nodes.delete(id);
  }

  setEdge(id: string, selected: boolean): void {
    if (selected) this.edges.add(id);
    else this.edges.delete(id);
  }

  /**
   * Replaces the selection with what `exists` keeps of the given ids; returns every id whose state
   * may have changed (the old selection and the new), for the projection to redraw.
   */
  replace(
    sel: { nodes?: string[]; edges?: string[] },
    exists: { node: (id: string) => boolean; edge: (id: string) => boolean },
  ): { nodes: Set<string>; edges: Set<string> } {
    const touched = {
      nodes: new Set([...this.nodes, ...(sel.nodes ?? [])]),
      edges: new Set([...this.edges, ...(sel.edges ?? [])]),
    };
    this.nodes = new Set((sel.nodes ?? []).filter(exists.node));
    this.edges = new Set((sel.edges ?? []).filter(exists.edge));
    return touched;
  }

  clear(): void {
    this.nodes.clear();
    this.edges.clear();
  }

  /** The selection, as an object that keeps its identity until the selection changes. */
  get(): SelectionView {
    const s = this.snapshot;
    if (
      s.nodes.length !== this.nodes.size ||
      s.edges.length !== this.edges.size ||
      s.nodes.some((id) => !this.nodes.has(id)) ||
      s.edges.some((id) => !this.edges.has(id))
    )
      this.snapshot = { nodes: [...this.nodes], edges: [...this.edges] };
    return this.snapshot;
  }
}
