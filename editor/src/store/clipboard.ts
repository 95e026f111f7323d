/**
 * Copy, paste and duplicate. The last copy is kept here; a fragment read from the system
 * clipboard can be pasted too. Pasted ids are fresh (`model/clipboard.ts`) and what was pasted
 * ends up selected.
 */
import { copyFragment, type FlowFragment, pasteFragment } from '../model/clipboard.js';
import { addNodes } from '../model/edits.js';
import type { FlowDocument } from './document.js';
import type { SelectionAccess } from './editing.js';
import type { History } from './history.js';

export class Clipboard {
  private fragment: FlowFragment | undefined;

  constructor(
    private readonly doc: FlowDocument,
    private readonly history: History,
    private readonly selection: SelectionAccess,
  ) {}

  copySelection(): FlowFragment | undefined {
    const { nodes } = this.selection.get();
    if (!nodes.length) return undefined;
    this.fragment = copyFragment(structuredClone(this.doc.flow()), nodes);
    return this.fragment;
  }

  /** Pastes a fragment (ours or one read from the system clipboard); selects what was pasted. */
  paste(fragment: FlowFragment | undefined = this.fragment, offset = { x: 40, y: 40 }): string[] {
    if (!fragment || fragment.nodes.length === 0) return [];
    const { nodes, edges } = this.doc.parts;
    const out = pasteFragment(
      fragment,
      { nodeIds: new Set(nodes.keys()), edgeIds: new Set(edges.keys()) },
      this.doc.registry,
      offset,
    );
    this.history.step(() => addNodes(this.doc.doc, out.nodes, out.edges, this.doc.layout));
    this.selection.select({
      nodes: out.nodes.filter((n) => !n.parent || !out.nodes.some((m) => m.id === n.parent)).map((n) => n.id),
    });
    return out.nodes.map((n) => n.id);
  }

  duplicateSelection(): string[] {
    const frag = this.copySelection();
    return frag ? this.paste(frag) : [];
  }
}
