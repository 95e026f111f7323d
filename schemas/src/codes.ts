/**
 * Every problem the validator can report, with a stable code and a sentence a person
 * understands. Codes never change meaning; new problems get new codes.
 */
export const PROBLEM_CODES = {
  'not-json': 'The file is not valid JSON',
  'empty-document': 'The document is empty',
  'too-large': 'The document is larger than the limit',
  'too-deep': 'The document is nested deeper than the limit',
  'reserved-key': 'Keys named __proto__, constructor or prototype are not allowed',
  bom: 'The file starts with a byte-order mark; it was ignored',
  'unsupported-version': 'This flow format version is not supported',
  schema: 'The document does not match the flow schema',
  'duplicate-id': 'Two nodes or edges share an id',
  'unknown-kind': 'No node kind of this name is registered',
  'dangling-edge': 'The edge points at a node that does not exist',
  'illegal-edge': 'This kind of edge cannot join these two kinds of node',
  'self-loop': 'An edge joins a node to itself',
  'bad-parent': 'The parent does not exist or is not a team',
  'parent-cycle': 'Parents form a cycle',
  'team-no-entry': 'The team has no entry member',
  'team-empty': 'The team has no members',
  'start-count': 'A flow has exactly one start node',
  'no-end': 'A flow has at least one end node',
  unreachable: 'The node cannot be reached from the start node',
  'unknown-model': 'The model reference does not name an entry of `models`',
  'unknown-server': 'The MCP server reference does not name an entry of `mcpServers`',
  'unknown-node-ref': 'The reference does not name a node or edge of this flow',
  'env-not-allowed': 'An ${env:…} reference is only allowed where a secret may stand',
  'literal-secret': 'This looks like a literal secret (an API key or token); use ${env:NAME}',
  'endless-cycle':
    'These nodes hand over in a cycle that nothing can stop (no decider, human or team termination)',
  config: 'The node config does not match its kind',
  'edge-config': 'The edge config does not match its kind',
  'hidden-characters': 'The text contains invisible or bidirectional control characters',
  'too-many-errors': 'More problems were found than are shown',
} as const;

export type ProblemCode = keyof typeof PROBLEM_CODES;

/** One problem found in a flow: where (JSON pointer, node or edge id), what (code) and why. */
export interface Problem {
  code: ProblemCode;
  /** JSON pointer into the document, e.g. `/nodes/3/config/model`; `''` is the whole document. */
  path: string;
  nodeId?: string;
  edgeId?: string;
  message: string;
}

export function problem(
  code: ProblemCode,
  path: string,
  detail?: string,
  ids?: { nodeId?: string; edgeId?: string },
): Problem {
  const base = PROBLEM_CODES[code];
  const p: Problem = { code, path, message: detail ? `${base}: ${detail}` : base };
  if (ids?.nodeId !== undefined) p.nodeId = ids.nodeId;
  if (ids?.edgeId !== undefined) p.edgeId = ids.edgeId;
  return p;
}

/** JSON pointer escaping (RFC 6901). */
export function pointer(...parts: Array<string | number>): string {
  return parts.map((p) => `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}
