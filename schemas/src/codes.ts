/**
 * Every problem the validator can report, with a stable code and a sentence a person
 * understands, defined in this one place. Codes never change meaning; new problems get new codes.
 * Each code has a fixture in `test/fixtures/invalid/<code>.json` (or `test/fixtures/warnings/`).
 */
export const PROBLEM_CODES = {
  // Reading the text.
  'not-json': 'The file is not valid JSON',
  'not-utf8': 'The file is not UTF-8 text',
  unreadable: 'The file cannot be read',
  'empty-document': 'The document is empty',
  'too-large': 'The document is larger than the limit',
  'too-deep': 'The document is nested deeper than the limit',
  'reserved-key': 'Keys named __proto__, constructor or prototype are not allowed',
  bom: 'The file starts with a byte-order mark; it was ignored',
  // Version.
  'unsupported-version': 'This flow format version is not supported',
  migrated: 'The flow was written in an older format version and was migrated; save it to update the file',
  // Shape.
  schema: 'The document does not match the flow schema',
  config: 'The node config does not match its kind',
  'edge-config': 'The edge config does not match its kind',
  'unknown-kind': 'No node kind of this name is registered',
  // Graph.
  'duplicate-id': 'Two nodes or edges share an id',
  'reserved-id': 'Ids and names must not be __proto__, constructor or prototype',
  'dangling-edge': 'The edge points at a node that does not exist',
  'illegal-edge': 'This kind of edge cannot join these two kinds of node',
  'self-loop': 'An edge joins a node to itself',
  'bad-parent': 'The parent does not exist or is not a team',
  'parent-cycle': 'Parents form a cycle',
  'team-no-entry': 'The team has no entry member',
  'team-empty': 'The team has no members',
  'team-decider': 'The team needs a decider among its own members',
  'start-count': 'A flow has exactly one start node',
  'no-end': 'A flow has at least one end node',
  unreachable: 'The node cannot be reached from the start node',
  'no-default-handover':
    'The agent can hand over along several edges and names no default (config.noHandover.default) for a turn that chooses none',
  'endless-cycle':
    'These nodes hand over in a cycle that nothing can stop (no decider, human or enclosing team with a termination)',
  'bad-route': 'A decider route must name an edge the decider can take (or the node it leads to), or "done"',
  // References.
  'unknown-model': 'The model reference does not name an entry of `models`',
  'unknown-server': 'The MCP server reference does not name an entry of `mcpServers`',
  'unknown-node-ref': 'The reference does not name a node or edge of this flow',
  // Files.
  'script-file-path':
    'A scriptFile must be a relative path inside the flow’s folder (the server’s: <data>/scripts/)',
  'script-file':
    'The scriptFile cannot be used (it must be a regular JSON file inside the folder, within the size limit)',
  // Secrets and hidden text.
  'env-not-allowed': 'An ${env:…} reference is only allowed where a secret may stand',
  'literal-secret': 'This looks like a literal secret (an API key or token); use ${env:NAME}',
  'bidi-control':
    'The text contains bidirectional control characters, which can make it read differently than it runs',
  'hidden-characters': 'The text contains invisible characters (zero-width spaces, joiners or similar)',
  'too-many-errors': 'More problems were found than are shown',
} as const;

export type ProblemCode = keyof typeof PROBLEM_CODES;

/** Codes that are reported as warnings: they never block a run. */
export const WARNING_CODES: ReadonlySet<ProblemCode> = new Set<ProblemCode>([
  'bom',
  'migrated',
  'unreachable',
  'no-default-handover',
  'hidden-characters',
]);

/** One problem found in a flow: where (JSON pointer, node or edge id), what (code) and why. */
export interface Problem {
  code: ProblemCode;
  /** JSON pointer into the document, e.g. `/nodes/3/config/model`; `''` is the whole document. */
  path: string;
  nodeId?: string;
  edgeId?: string;
  /** The code's sentence, followed by the specifics: `The node config …: missing property "role"`. */
  message: string;
}

export function problem(
  code: ProblemCode,
  path: string,
  detail?: string,
  ids?: { nodeId?: string | undefined; edgeId?: string | undefined },
): Problem {
  const base = PROBLEM_CODES[code];
  const p: Problem = { code, path, message: detail ? `${base}: ${detail}` : base };
  if (ids?.nodeId !== undefined) p.nodeId = ids.nodeId;
  if (ids?.edgeId !== undefined) p.edgeId = ids.edgeId;
  return p;
}

/** JSON pointer escaping (RFC 6901). */
export function pointer(...parts: Array<string | number>): string {
  let out = '';
  for (const p of parts) {
    const s = String(p);
    out += `/${s.includes('~') || s.includes('/') ? s.replace(/~/g, '~0').replace(/\//g, '~1') : s}`;
  }
  return out;
}

/** The segments of a JSON pointer, unescaped. */
export function pointerParts(path: string): string[] {
  if (path === '') return [];
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

// Characters that must never reach a terminal or a message unescaped: controls, bidi, zero-width.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/**
 * Quotes a value taken from the document for a message: JSON-style quotes, at most `max`
 * characters, and control, bidi and zero-width characters shown as `\uXXXX`, so a crafted id or
 * kind cannot rewrite the terminal line or hide text in an error message.
 */
export function quote(value: unknown, max = 80): string {
  let s = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  if (s.length > max) s = `${s.slice(0, max)}…`;
  return `"${sanitize(s.replace(/\\/g, '\\\\').replace(/"/g, '\\"'))}"`;
}

/** Shows control, bidi and zero-width characters as `\uXXXX`. */
export function sanitize(s: string): string {
  return s.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
