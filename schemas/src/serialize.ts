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

const NON_ASCII = /[\u0080-\uffff]/;
const ASCII_RUNS = /[^\u0080-\uffff]+/g;

/** UTF-8 byte length of a string, without encoding it (a lone surrogate counts as U+FFFD would: 3). */
export function utf8Length(s: string): number {
  // Flows are mostly ASCII: a native scan settles that, and only the rest is counted by hand.
  if (!NON_ASCII.test(s)) return s.length;
  // Each ASCII run becomes one marker, so a surrogate is never paired across a removed run.
  const rest = s.replace(ASCII_RUNS, 'a');
  let nonAscii = 0;
  let n = 0;
  for (let i = 0; i < rest.length; i++) {
    const c = rest.charCodeAt(i);
    if (c < 0x80) continue;
    nonAscii++;
    if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < rest.length) {
      const d = rest.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4; // a pair: two code units, four bytes
        nonAscii++;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n + s.length - nonAscii;
}

/**
 * Bytes of a document's saved text (`serializeFlow`): key order does not change the length, so
 * this needs no canonical copy. The size limit applies to this, whatever form the document came in.
 */
export function savedFlowBytes(doc: unknown): number {
  return utf8Length(JSON.stringify(doc, null, 2) ?? '') + 1;
}
