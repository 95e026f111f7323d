/**
 * Canonical flow text: known keys in a fixed order, unknown keys after them in their own
 * order, two-space indent, one trailing newline. The editor's export, the API and the CLI all
 * write through this, so the same document always has the same bytes.
 */
import type { Flow } from './flow.js';
import { setOwn } from './names.js';

const FLOW_ORDER = [
  '$schema',
  'version',
  'id',
  'name',
  'description',
  'models',
  'mcpServers',
  'budgets',
  'nodes',
  'edges',
  'metadata',
];
const NODE_ORDER = ['id', 'kind', 'parent', 'label', 'position', 'size', 'config'];
const EDGE_ORDER = ['id', 'kind', 'source', 'target', 'sourceHandle', 'targetHandle', 'label', 'config'];

function ordered(obj: Record<string, unknown>, order: string[]): Record<string, unknown> {
  // An ordinary object (a canonical flow may go into a shared document), keys set as own properties.
  const out: Record<string, unknown> = {};
  for (const k of order) if (Object.hasOwn(obj, k) && obj[k] !== undefined) setOwn(out, k, obj[k]);
  for (const k of Object.keys(obj)) if (!order.includes(k) && obj[k] !== undefined) setOwn(out, k, obj[k]);
  return out;
}

/** Returns a copy of the flow with canonical key order. */
export function canonicalFlow(flow: Flow): Flow {
  const f = ordered(flow as unknown as Record<string, unknown>, FLOW_ORDER);
  f.nodes = flow.nodes.map((n) => ordered(n as unknown as Record<string, unknown>, NODE_ORDER));
  f.edges = flow.edges.map((e) => ordered(e as unknown as Record<string, unknown>, EDGE_ORDER));
  return f as unknown as Flow;
}

export function serializeFlow(flow: Flow): string {
  return `${JSON.stringify(canonicalFlow(flow), null, 2)}\n`;
}
