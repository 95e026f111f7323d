/**
 * The one validator: schema errors plus the semantic checks that make a flow runnable.
 * The editor, the REST API and the CLI all call this, so they give the same verdicts with
 * the same paths. Errors block a run; warnings never do.
 *
 * Order: structure (depth, size, reserved keys — before anything looks deeper), version
 * (read first, migrated explicitly), schema (document shell, then each node, edge and server,
 * stopping once the error cap is reached), then the graph.
 */

import { type TSchema, Type } from '@sinclair/typebox';
import { Ajv, type ValidateFunction } from 'ajv';
import { type Problem, type ProblemCode, pointer, problem, quote } from './codes.js';
import { Collector } from './collector.js';
import { Condition } from './condition.js';
import { EDGE_CONFIG_SCHEMAS } from './edges.js';
import { explainErrors, suggest } from './explain.js';
import {
  type Flow,
  FlowDocument,
  FlowEdge,
  type FlowEdgeT,
  FlowNode,
  type FlowNodeT,
  McpServerConfig,
  RefName,
} from './flow.js';
import { type IdsAt, inspectDocument } from './inspect.js';
import { checkConnection, DEFAULT_DECIDER_ROUTES, type KindCatalog, type KindInfo } from './kinds.js';
import { MAX_ID_LENGTH } from './limits.js';
import { type Migration, migrateFlow } from './migrate.js';
import { isReservedName } from './names.js';
import { DEFAULT_LIMITS, type ParseLimits, parseJsonBounded } from './parse.js';
import { scriptPathRule } from './script-path.js';
import { savedFlowBytes } from './serialize.js';

export interface ValidateOptions {
  kinds: KindCatalog;
  /** Errors beyond this are summarised by one `too-many-errors` problem. Default 200. */
  maxErrors?: number;
  /** Size and nesting limits (defaults: `DEFAULT_LIMITS`). */
  limits?: ParseLimits;
  /** Format migrations (default `FLOW_MIGRATIONS`); tests pass their own. */
  migrations?: readonly Migration[];
}

export interface ValidationResult {
  ok: boolean;
  errors: Problem[];
  warnings: Problem[];
  /** The document, typed (and migrated), when it passed the schema — even if semantic errors remain. */
  flow?: Flow;
}

// Our own schemas and the kinds' schemas are code, so Ajv may compile them; schemas that come
// from flows are never compiled (see `json-schema.ts`). `$data` stays off, error lists are capped
// by validating item by item, and `verbose` lets `explain.ts` re-check union branches.
const ajv = new Ajv({ allErrors: true, strict: false, $data: false, validateFormats: false, verbose: true });
ajv.addSchema(Condition as object);
const compiled = new WeakMap<object, ValidateFunction | null>();

function compile(schema: TSchema): ValidateFunction | null {
  let fn = compiled.get(schema);
  if (fn === undefined) {
    try {
      fn = ajv.compile(schema);
    } catch {
      fn = null;
    }
    compiled.set(schema, fn);
  }
  return fn;
}

/** The document with nodes, edges and servers left open: they are checked one by one. */
const FlowShell = Type.Object(
  {
    ...FlowDocument.properties,
    mcpServers: Type.Optional(Type.Record(RefName, Type.Unknown())),
    nodes: Type.Array(Type.Unknown()),
    edges: Type.Array(Type.Unknown()),
  },
  { additionalProperties: false },
);

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

function idsFor(ids: IdsAt | { nodeId?: string; edgeId?: string }, path: string) {
  return typeof ids === 'function' ? ids(path) : ids;
}

/** Runs a compiled schema and reports its errors under `prefix`. Returns whether it passed. */
function check(
  schema: TSchema,
  value: unknown,
  prefix: string,
  code: ProblemCode,
  c: Collector,
  ids: IdsAt | { nodeId?: string; edgeId?: string },
): boolean {
  const fn = compile(schema);
  // No closure here: this runs once per node and edge.
  if (!fn) {
    c.error(problem(code, prefix, 'the schema of this kind cannot be compiled', idsFor(ids, prefix)));
    return false;
  }
  if (fn(value)) return true;
  for (const x of explainErrors(ajv, fn.errors ?? [])) {
    const path = prefix + x.path;
    c.error(problem(code, path, x.detail, idsFor(ids, path)));
  }
  return false;
}

/** Validates a parsed document. Never throws on any JSON value. */
export function validateFlow(doc: unknown, options: ValidateOptions): ValidationResult {
  const c = new Collector(options.maxErrors ?? 200);
  const done = (flow?: Flow): ValidationResult => {
    c.finish();
    const r: ValidationResult = { ok: c.errors.length === 0, errors: c.errors, warnings: c.warnings };
    if (flow) r.flow = flow;
    return r;
  };
  if (!isObject(doc)) {
    c.error(problem('schema', '', `the document must be a JSON object, not ${describeType(doc)}`));
    return done();
  }
  const idsOf = (raw: Record<string, unknown>): IdsAt => {
    const nodes = Array.isArray(raw.nodes) ? raw.nodes : [];
    const edges = Array.isArray(raw.edges) ? raw.edges : [];
    return (path) => {
      const m = /^\/(nodes|edges)\/(\d+)/.exec(path);
      if (!m) return {};
      const item: unknown = (m[1] === 'nodes' ? nodes : edges)[Number(m[2])];
      const id =
        isObject(item) && typeof item.id === 'string' && item.id.length <= MAX_ID_LENGTH
          ? item.id
          : undefined;
      if (id === undefined) return {};
      return m[1] === 'nodes' ? { nodeId: id } : { edgeId: id };
    };
  };
  let ids = idsOf(doc);
  const limits = {
    maxDepth: options.limits?.maxDepth ?? DEFAULT_LIMITS.maxDepth,
    maxValues: options.limits?.maxValues ?? DEFAULT_LIMITS.maxValues,
  };
  if (!inspectDocument(doc, limits, c, ids)) return done();

  // Version first.
  const migrated = migrateFlow(doc, options.migrations ? { migrations: options.migrations } : {});
  if (!migrated.ok) {
    c.errors.unshift(migrated.error);
    return done();
  }
  let raw = doc;
  if (migrated.applied.length > 0) {
    raw = migrated.doc;
    ids = idsOf(raw);
    c.warn(
      problem(
        'migrated',
        '/version',
        `from version ${migrated.from}: ${migrated.applied.map((m) => m.description).join('; ')}`,
      ),
    );
  }

  // One size limit for every way in (REST body, room, file): the bytes the flow has once saved,
  // so whatever is stored is also what `switchboard validate`/`run` and the editor's import read.
  const maxBytes = options.limits?.maxBytes ?? DEFAULT_LIMITS.maxBytes;
  const bytes = savedFlowBytes(raw);
  if (bytes > maxBytes) {
    c.error(problem('too-large', '', `${bytes} bytes as saved, limit ${maxBytes}`));
    return done();
  }
  // Names that reach a prototype are refused wherever the document names something, before the
  // schema: the engine and the stores look these up (in Maps and null-prototype tables, but an id
  // must stay usable as a key anywhere, e.g. by a host or a script reading the flow).
  reservedIds(raw, c, ids);

  // Schema, piece by piece so the error cap also caps the work.
  let schemaOk = check(FlowShell, raw, '', 'schema', c, ids);
  const nodes = Array.isArray(raw.nodes) ? (raw.nodes as unknown[]) : [];
  const edges = Array.isArray(raw.edges) ? (raw.edges as unknown[]) : [];
  for (let i = 0; i < nodes.length && !c.full; i++) {
    const n = nodes[i];
    if (!check(FlowNode, n, `/nodes/${i}`, 'schema', c, ids)) {
      schemaOk = false;
      continue;
    }
    // Each node's config against its kind, so every shape error shows at once.
    const { kind, config } = n as FlowNodeT;
    const info = options.kinds.get(kind);
    if (!info)
      c.error(
        problem('unknown-kind', `/nodes/${i}/kind`, unknownKind(kind, options.kinds), ids(`/nodes/${i}`)),
      );
    else check(info.configSchema, config, `/nodes/${i}/config`, 'config', c, ids);
  }
  for (let i = 0; i < edges.length && !c.full; i++)
    if (!check(FlowEdge, edges[i], `/edges/${i}`, 'schema', c, ids)) schemaOk = false;
  if (isObject(raw.mcpServers))
    for (const [name, server] of Object.entries(raw.mcpServers)) {
      if (c.full) break;
      if (!check(McpServerConfig, server, pointer('mcpServers', name), 'schema', c, ids)) schemaOk = false;
    }
  if (c.full) schemaOk = false;

  if (!schemaOk) return done();
  const flow = raw as unknown as Flow;
  // The graph checks run even when a config is wrong: they read configs defensively.
  semanticChecks(flow, options.kinds, c);
  return done(flow);
}

/** Parses untrusted text (bounded) and validates it. Never throws on any input. */
export function validateFlowText(text: string | Uint8Array, options: ValidateOptions): ValidationResult {
  // Reserved keys are found by `inspectDocument`, in the same pass as everything else.
  const parsed = parseJsonBounded(text, options.limits);
  if (!parsed.ok) return { ok: false, errors: parsed.errors, warnings: parsed.warnings };
  const r = validateFlow(parsed.value, options);
  r.warnings.unshift(...parsed.warnings);
  return r;
}

/** Fields that hold an id or a name: on the document, each node, each edge, each model. */
const ID_FIELDS = {
  flow: ['id'],
  node: ['id', 'parent'],
  edge: ['id', 'source', 'target'],
  model: ['model'],
};

function reservedIds(raw: Record<string, unknown>, c: Collector, ids: IdsAt): void {
  const at = (path: string, v: unknown) => {
    if (isReservedName(v)) c.error(problem('reserved-id', path, quote(v as string), ids(path)));
  };
  for (const f of ID_FIELDS.flow) at(pointer(f), raw[f]);
  const list = (key: 'nodes' | 'edges', fields: string[]) => {
    const items = raw[key];
    if (!Array.isArray(items)) return;
    items.forEach((item, i) => {
      if (!isObject(item)) return;
      for (const f of fields) if (Object.hasOwn(item, f)) at(`/${key}/${i}/${f}`, item[f]);
      // A delegate edge names the tool its target becomes.
      const cfg = item.config;
      if (key === 'edges' && isObject(cfg) && Object.hasOwn(cfg, 'toolName'))
        at(`/edges/${i}/config/toolName`, cfg.toolName);
    });
  };
  list('nodes', ID_FIELDS.node);
  list('edges', ID_FIELDS.edge);
  if (isObject(raw.models))
    for (const [name, m] of Object.entries(raw.models)) {
      if (!isObject(m)) continue;
      if (Object.hasOwn(m, 'model')) at(pointer('models', name, 'model'), m.model);
      // Checked here, so a REST write, a room save and `switchboard validate` all refuse it.
      const file = m.scriptFile;
      const rule = typeof file === 'string' ? scriptPathRule(file) : undefined;
      if (rule)
        c.error(
          problem('script-file-path', pointer('models', name, 'scriptFile'), `${quote(file)}: ${rule}`),
        );
    }
}

function unknownKind(kind: string, kinds: KindCatalog): string {
  const known = kinds.list?.().map((k) => k.kind) ?? [];
  const hint = suggest(kind, known);
  if (hint) return `${quote(kind)}; did you mean ${quote(hint)}?`;
  return known.length ? `${quote(kind)}; known kinds are ${known.join(', ')}` : quote(kind);
}

function describeType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'string' ? 'a string' : `a ${typeof v}`;
}

const refPointers = new Map<string, string>();

function refValues(config: Record<string, unknown>, dotted: string): Array<[string, string]> {
  // Fast path: a plain top-level field (most references are).
  if (!dotted.includes('.')) {
    if (!Object.hasOwn(config, dotted)) return NO_REFS;
    const v = config[dotted];
    let at = refPointers.get(dotted);
    if (at === undefined) {
      at = pointer(dotted);
      refPointers.set(dotted, at);
    }
    if (typeof v === 'string') return [[at, v]];
    if (!Array.isArray(v)) return NO_REFS;
  }
  // `a.b` reads one string (or each string of an array); `a.*.b` reads every element of an array.
  const parts = dotted.split('.');
  const out: Array<[string, string]> = [];
  const walk = (v: unknown, i: number, path: string) => {
    if (i === parts.length) {
      if (typeof v === 'string') out.push([path, v]);
      else if (Array.isArray(v))
        v.forEach((x, j) => {
          if (typeof x === 'string') out.push([`${path}/${j}`, x]);
        });
      return;
    }
    if (v === null || typeof v !== 'object') return;
    const p = parts[i]!;
    if (p === '*' && Array.isArray(v))
      v.forEach((x, j) => {
        walk(x, i + 1, `${path}/${j}`);
      });
    else if (!Array.isArray(v) && Object.hasOwn(v, p))
      walk((v as Record<string, unknown>)[p], i + 1, path + pointer(p));
  };
  walk(config, 0, '');
  return out;
}

const NO_REFS: Array<[string, string]> = [];

type TeamConfigView = {
  mode?: unknown;
  entry?: unknown;
  decider?: unknown;
  speaker?: { strategy?: unknown; decider?: unknown };
  termination?: { decider?: unknown };
};

interface HandoverOut {
  edge: FlowEdgeT;
  target: string;
}

function semanticChecks(flow: Flow, kinds: KindCatalog, c: Collector): void {
  const nodeIndex = new Map<string, number>();
  const edgeIndex = new Map<string, number>();
  const nodeIds = (id: string) => ({ nodeId: id });

  flow.nodes.forEach((n, i) => {
    if (nodeIndex.has(n.id))
      c.error(
        problem(
          'duplicate-id',
          `/nodes/${i}/id`,
          `${quote(n.id)} is also node ${nodeIndex.get(n.id)}`,
          nodeIds(n.id),
        ),
      );
    else nodeIndex.set(n.id, i);
  });
  flow.edges.forEach((e, i) => {
    if (edgeIndex.has(e.id) || nodeIndex.has(e.id))
      c.error(
        problem(
          'duplicate-id',
          `/edges/${i}/id`,
          `${quote(e.id)} is also ${edgeIndex.has(e.id) ? `edge ${edgeIndex.get(e.id)}` : `node ${nodeIndex.get(e.id)}`}`,
          { edgeId: e.id },
        ),
      );
    else edgeIndex.set(e.id, i);
  });

  const infos = flow.nodes.map((n) => kinds.get(n.kind));
  const node = (id: string): FlowNodeT | undefined => {
    const i = nodeIndex.get(id);
    return i === undefined ? undefined : flow.nodes[i];
  };
  const infoOf = (id: string): KindInfo | undefined => {
    const i = nodeIndex.get(id);
    return i === undefined ? undefined : infos[i];
  };
  const roleOf = (id: string) => infoOf(id)?.role;

  // Budgets name nodes (or teams) of this flow.
  flow.budgets?.nodes?.forEach((b, i) => {
    if (!nodeIndex.has(b.node))
      c.error(problem('unknown-node-ref', `/budgets/nodes/${i}/node`, `node ${quote(b.node)}`));
  });

  // Node configs and their references.
  flow.nodes.forEach((n, i) => {
    const k = infos[i];
    if (!k || c.full) return;
    const at = `/nodes/${i}/config`;
    for (const ref of k.modelRefs ?? [])
      for (const [p, val] of refValues(n.config, ref))
        if (!Object.hasOwn(flow.models, val))
          c.error(
            problem(
              'unknown-model',
              at + p,
              `${quote(val)}; models are ${names(flow.models)}`,
              nodeIds(n.id),
            ),
          );
    for (const ref of k.serverRefs ?? [])
      for (const [p, val] of refValues(n.config, ref))
        if (!flow.mcpServers || !Object.hasOwn(flow.mcpServers, val))
          c.error(
            problem(
              'unknown-server',
              at + p,
              `${quote(val)}; servers are ${names(flow.mcpServers)}`,
              nodeIds(n.id),
            ),
          );
    for (const ref of k.nodeRefs ?? [])
      for (const [p, val] of refValues(n.config, ref))
        if (!nodeIndex.has(val))
          c.error(problem('unknown-node-ref', at + p, `node ${quote(val)}`, nodeIds(n.id)));
    for (const ref of k.edgeRefs ?? [])
      for (const [p, val] of refValues(n.config, ref))
        if (!edgeIndex.has(val))
          c.error(problem('unknown-node-ref', at + p, `edge ${quote(val)}`, nodeIds(n.id)));
  });

  // Parents: exist, are teams, form no cycle.
  const children = new Map<string, string[]>();
  flow.nodes.forEach((n, i) => {
    if (n.parent === undefined) return;
    const p = node(n.parent);
    if (!p || roleOf(n.parent) !== 'team') {
      const why = p ? `${quote(n.parent)} is not a team but ${quote(p.kind)}` : `no node ${quote(n.parent)}`;
      c.error(problem('bad-parent', `/nodes/${i}/parent`, why, nodeIds(n.id)));
      return;
    }
    push(children, n.parent, n.id);
  });
  // Walk up from each node once; a node on a cycle is reported, nodes below one are not.
  const state = new Uint8Array(flow.nodes.length); // 0 unseen, 1 on the current walk, 2 done
  const reported = new Set<number>();
  for (let i = 0; i < flow.nodes.length; i++) {
    const walk: number[] = [];
    let cur: number | undefined = i;
    while (cur !== undefined && state[cur] === 0) {
      state[cur] = 1;
      walk.push(cur);
      const parent: string | undefined = flow.nodes[cur]!.parent;
      cur = parent === undefined ? undefined : nodeIndex.get(parent);
    }
    if (cur !== undefined && state[cur] === 1) {
      const cycle = walk.slice(walk.indexOf(cur));
      const names = [...cycle, cur].map((k) => quote(flow.nodes[k]!.id)).join(' → ');
      for (const k of cycle)
        if (!reported.has(k)) {
          reported.add(k);
          const id = flow.nodes[k]!.id;
          c.error(problem('parent-cycle', `/nodes/${k}/parent`, names, nodeIds(id)));
        }
    }
    for (const k of walk) state[k] = 2;
  }

  // Edges.
  const handoverOut = new Map<string, HandoverOut[]>();
  const hasMemberIn = new Set<string>(); // members with a handover from a sibling
  flow.edges.forEach((e, i) => {
    if (c.full) return;
    const ids = { edgeId: e.id };
    const s = node(e.source);
    const t = node(e.target);
    if (!s) c.error(problem('dangling-edge', `/edges/${i}/source`, `no node ${quote(e.source)}`, ids));
    if (!t) c.error(problem('dangling-edge', `/edges/${i}/target`, `no node ${quote(e.target)}`, ids));
    if (e.config !== undefined)
      check(EDGE_CONFIG_SCHEMAS[e.kind], e.config, `/edges/${i}/config`, 'edge-config', c, ids);
    if (!s || !t) return;
    if (e.source === e.target) {
      c.error(problem('self-loop', `/edges/${i}`, `${e.kind} edge from ${quote(e.source)} to itself`, ids));
      return;
    }
    const si = infoOf(e.source);
    const ti = infoOf(e.target);
    if (si && ti) {
      const bad = checkConnection(e.kind, si, ti);
      if (bad) c.error({ ...bad, path: `/edges/${i}`, edgeId: e.id });
    }
    if (e.kind === 'handover') {
      const list = handoverOut.get(e.source);
      if (list) list.push({ edge: e, target: e.target });
      else handoverOut.set(e.source, [{ edge: e, target: e.target }]);
      if (s.parent !== undefined && s.parent === t.parent) hasMemberIn.add(e.target);
    }
  });

  // Start and end.
  const starts: number[] = [];
  let ends = 0;
  infos.forEach((k, i) => {
    if (k?.role === 'start') starts.push(i);
    else if (k?.role === 'end') ends++;
  });
  if (starts.length !== 1)
    c.error(
      problem(
        'start-count',
        starts.length > 1 ? `/nodes/${starts[1]}` : '/nodes',
        starts.length === 0 ? 'there is none' : `found ${starts.length}`,
        starts.length > 1 ? nodeIds(flow.nodes[starts[1]!]!.id) : undefined,
      ),
    );
  if (ends === 0) c.error(problem('no-end', '/nodes', 'there is none'));

  // Decider routes: each names an edge the decider can take (or the node it leads to), or "done".
  // A decider is offered its own outgoing handovers; the transition decider of an fsm team is
  // offered the drawn transitions of the team's states as well.
  const fsmDeciderOf = new Map<string, string>();
  flow.nodes.forEach((n, i) => {
    const d = (n.config as TeamConfigView).decider;
    if (infos[i]?.role === 'team' && n.config.mode === 'fsm' && typeof d === 'string')
      fsmDeciderOf.set(d, n.id);
  });
  flow.nodes.forEach((n, i) => {
    const k = infos[i];
    if (!k) return;
    const refs = k.routeRefs ?? (k.role === 'decider' ? DEFAULT_DECIDER_ROUTES : []);
    if (refs.length === 0) return;
    const offered = [...(handoverOut.get(n.id) ?? [])];
    const team = fsmDeciderOf.get(n.id);
    if (team !== undefined && n.parent === team)
      for (const m of children.get(team) ?? []) if (m !== n.id) offered.push(...(handoverOut.get(m) ?? []));
    for (const ref of refs)
      for (const [p, val] of refValues(n.config, ref)) {
        if (val === 'done' || offered.some((o) => o.edge.id === val || o.target === val)) continue;
        const list = offered.length ? offered.map((o) => quote(o.edge.id)).join(', ') : 'none';
        c.error(
          problem(
            'bad-route',
            `/nodes/${i}/config${p}`,
            `${quote(val)}; the edges it can take are ${list}`,
            nodeIds(n.id),
          ),
        );
      }
  });

  // An approval gate routes its verdict along the edges marked "approve" and "reject"; any other
  // mark is never taken. (A gate with only an "approve" edge is allowed: a rejection ends the run.)
  flow.nodes.forEach((n, i) => {
    if (infos[i]?.role !== 'human' || n.config.mode !== 'approve') return;
    const outs = handoverOut.get(n.id) ?? [];
    const marked = outs.filter((o) => o.edge.config?.branch !== undefined);
    for (const o of marked) {
      const b = o.edge.config!.branch;
      if (b !== 'approve' && b !== 'reject')
        c.error(
          problem(
            'bad-route',
            `/edges/${edgeIndex.get(o.edge.id)}/config/branch`,
            `${quote(b)}: the branches of an approval gate are "approve" and "reject"`,
            { edgeId: o.edge.id },
          ),
        );
    }
  });

  // An agent that can hand over along several edges and chooses none: the flow says what then
  // (config.noHandover.default: an edge, or "done"); without it the run fails with no_handover.
  flow.nodes.forEach((n, i) => {
    if (infos[i]?.role !== 'agent') return;
    const outs = handoverOut.get(n.id) ?? [];
    if (outs.length < 2) return;
    const mode = n.parent === undefined ? 'handover' : (node(n.parent)?.config.mode ?? 'handover');
    if (mode !== 'handover') return; // in group chats and fsm teams the team picks who is next
    const policy = n.config.noHandover as { default?: unknown } | undefined;
    if (policy?.default !== undefined) return;
    c.warn(
      problem(
        'no-default-handover',
        `/nodes/${i}/config`,
        `${quote(n.id)} can hand over along ${outs.map((o) => quote(o.edge.id)).join(', ')}; a turn that calls no handover tool fails the run`,
        nodeIds(n.id),
      ),
    );
  });

  // Nodes that name no model use "default", which must then exist.
  if (!Object.hasOwn(flow.models, 'default'))
    flow.nodes.forEach((n, i) => {
      const slot = implicitModelSlot(infos[i], n.config);
      if (slot !== undefined)
        c.error(
          problem(
            'unknown-model',
            `/nodes/${i}/config${slot}`,
            `no model is named here, so "default" is used, and models are ${names(flow.models)}`,
            nodeIds(n.id),
          ),
        );
    });

  // Teams: members, an entry, and the deciders they name.
  flow.nodes.forEach((n, i) => {
    if (infos[i]?.role !== 'team') return;
    const cfg = n.config as TeamConfigView;
    const members = children.get(n.id) ?? [];
    const active = members.filter((m) => {
      const r = roleOf(m);
      return r !== 'note' && r !== 'observer' && r !== 'tool';
    });
    if (active.length === 0) {
      c.error(
        problem(
          'team-empty',
          `/nodes/${i}`,
          `${quote(n.id)} holds no agents, deciders or teams`,
          nodeIds(n.id),
        ),
      );
      return;
    }
    const deciders = members.filter((m) => roleOf(m) === 'decider');
    const deciderRefs: Array<[string, unknown]> = [
      ['/decider', cfg.decider],
      ['/speaker/decider', cfg.speaker?.decider],
      ['/termination/decider', cfg.termination?.decider],
    ];
    for (const [p, ref] of deciderRefs)
      if (typeof ref === 'string' && nodeIndex.has(ref) && !deciders.includes(ref))
        c.error(
          problem(
            'team-decider',
            `/nodes/${i}/config${p}`,
            `${quote(ref)} is not a decider inside ${quote(n.id)}`,
            nodeIds(n.id),
          ),
        );
    // The runtime follows the decider a team names; it never guesses one.
    const needDecider = (p: string, why: string) => {
      const hint =
        deciders.length === 1
          ? `; ${quote(deciders[0])} is the only decider inside`
          : deciders.length === 0
            ? '; add a decider inside the team'
            : `; candidates: ${deciders.map((d) => quote(d)).join(', ')}`;
      c.error(problem('team-decider', `/nodes/${i}/config${p}`, why + hint, nodeIds(n.id)));
    };
    if (cfg.mode === 'fsm' && cfg.decider === undefined)
      needDecider('', 'an fsm team names the decider that picks each transition in config.decider');
    if (cfg.mode === 'groupChat' && cfg.speaker?.strategy === 'decider' && cfg.speaker.decider === undefined)
      needDecider('/speaker', 'speaker strategy "decider" names its decider in config.speaker.decider');

    if (typeof cfg.entry === 'string') {
      if (members.includes(cfg.entry) && !active.includes(cfg.entry))
        c.error(
          problem(
            'team-no-entry',
            `/nodes/${i}/config/entry`,
            `${quote(cfg.entry)} cannot run first: its kind is ${quote(node(cfg.entry)!.kind)}`,
            nodeIds(n.id),
          ),
        );
      else if (!members.includes(cfg.entry))
        c.error(
          problem(
            'team-no-entry',
            `/nodes/${i}/config/entry`,
            `${quote(cfg.entry)} is not a member of ${quote(n.id)}`,
            nodeIds(n.id),
          ),
        );
      return;
    }
    if (cfg.mode === 'groupChat') return; // the speaker selection picks who talks first
    const roots = active.filter((m) => !hasMemberIn.has(m));
    if (roots.length !== 1)
      c.error(
        problem(
          'team-no-entry',
          `/nodes/${i}/config`,
          roots.length === 0
            ? 'every member has a handover into it; set config.entry'
            : `several members could go first (${roots.join(', ')}); set config.entry`,
          nodeIds(n.id),
        ),
      );
  });

  // Reachability from start: handovers, team membership, delegation, grants and observers.
  const count = flow.nodes.length;
  const startIdx = starts[0];
  if (startIdx !== undefined && starts.length === 1) {
    const attached: number[][] = Array.from({ length: count }, () => []);
    for (const e of flow.edges) {
      const si = nodeIndex.get(e.source);
      const ti = nodeIndex.get(e.target);
      if (si === undefined || ti === undefined) continue;
      if (e.kind === 'handover' || e.kind === 'delegate') attached[si]!.push(ti);
      else attached[ti]!.push(si); // a tool or observer is live when what it serves is
    }
    flow.nodes.forEach((n, i) => {
      const p = n.parent === undefined ? undefined : nodeIndex.get(n.parent);
      if (p === undefined) return;
      attached[p]!.push(i);
      // A handover straight to a member enters its team too (the runtime enters every ancestor),
      // so the team, its other members and its own edges are live.
      attached[i]!.push(p);
    });
    const reach = new Uint8Array(count);
    const queue = [startIdx];
    reach[startIdx] = 1;
    while (queue.length > 0)
      for (const next of attached[queue.pop()!]!)
        if (!reach[next]) {
          reach[next] = 1;
          queue.push(next);
        }
    flow.nodes.forEach((n, i) => {
      if (!reach[i] && infos[i]?.role !== 'note')
        c.warn(problem('unreachable', `/nodes/${i}`, `${quote(n.id)} never runs`, nodeIds(n.id)));
    });
  }

  // Handover cycles that nothing can stop.
  const out: number[][] = Array.from({ length: count }, () => []);
  for (const [id, list] of handoverOut) {
    const from = nodeIndex.get(id)!;
    for (const o of list) out[from]!.push(nodeIndex.get(o.target)!);
  }
  for (const scc of stronglyConnectedIndices(out)) {
    if (scc.length < 2) continue;
    const ids = scc.map((k) => flow.nodes[k]!.id);
    if (scc.some((k) => stopsOnCycle(infos[k], flow.nodes[k]!))) continue;
    if (enclosedByTerminatingTeam(ids, node, infoOf)) continue;
    const first = scc[0]!;
    c.error(
      problem(
        'endless-cycle',
        `/nodes/${first}`,
        `${[...ids, ids[0]].map((x) => quote(x)).join(' → ')}; add a decider or a human on it, or put it in a team with a termination`,
        nodeIds(ids[0]!),
      ),
    );
  }
}

/** Where a node would name its model when it uses one without naming it (the runtime then uses "default"). */
function implicitModelSlot(info: KindInfo | undefined, config: Record<string, unknown>): string | undefined {
  const speaker = config.speaker as { strategy?: unknown; model?: unknown } | undefined;
  switch (info?.role) {
    case 'decider':
      return config.strategy === 'llm' && config.model === undefined ? '' : undefined;
    case 'observer':
      return config.type === 'summarizer' && config.model === undefined ? '' : undefined;
    case 'team':
      return config.mode === 'groupChat' && speaker?.strategy === 'llm' && speaker.model === undefined
        ? '/speaker'
        : undefined;
    default:
      return undefined;
  }
}

function names(record: Record<string, unknown> | undefined): string {
  const keys = record ? Object.keys(record) : [];
  return keys.length ? keys.map((k) => quote(k)).join(', ') : 'none';
}

/** Whether a node on a cycle stops it by itself: it decides, or waits for a person. */
function stopsOnCycle(info: KindInfo | undefined, n: FlowNodeT): boolean {
  if (!info) return false;
  if (info.role === 'decider' || info.role === 'human') return true;
  if (info.role === 'team') return false; // control leaves the team and comes back
  return kindStops(info, n);
}

/** A kind's own `stopsCycles`, guarded: it reads a config that may be invalid. */
function kindStops(info: KindInfo, n: FlowNodeT): boolean {
  const s = info.stopsCycles;
  if (typeof s !== 'function') return s === true;
  try {
    return s(n.config) === true;
  } catch {
    return false;
  }
}

function enclosedByTerminatingTeam(
  ids: string[],
  node: (id: string) => FlowNodeT | undefined,
  info: (id: string) => KindInfo | undefined,
): boolean {
  // A team holding every node of the cycle, whose termination ends the team, stops it.
  const ancestorsOf = (id: string) => {
    const out: string[] = [];
    let p = node(id)?.parent;
    while (p !== undefined && out.length < 1000) {
      out.push(p);
      p = node(p)?.parent;
    }
    return out;
  };
  const sets = ids.map((id) => new Set(ancestorsOf(id)));
  for (const team of ancestorsOf(ids[0]!)) {
    if (!sets.every((s) => s.has(team))) continue;
    const t = node(team);
    const k = info(team);
    if (t && k && kindStops(k, t)) return true;
  }
  return false;
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}

/**
 * Strongly connected components of a graph given as adjacency lists over `0…n-1` (Tarjan's
 * algorithm, iterative so a 10,000-node chain does not overflow the stack). Each component lists
 * its nodes in the order they were first reached.
 */
export function stronglyConnectedIndices(out: readonly (readonly number[])[]): number[][] {
  const n = out.length;
  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const stack: number[] = [];
  const result: number[][] = [];
  const workNode: number[] = [];
  const workEdge: number[] = [];
  let counter = 0;
  for (let root = 0; root < n; root++) {
    if (index[root] !== -1) continue;
    workNode.push(root);
    workEdge.push(0);
    while (workNode.length > 0) {
      const top = workNode.length - 1;
      const v = workNode[top]!;
      const i = workEdge[top]!;
      if (i === 0) {
        index[v] = low[v] = counter++;
        stack.push(v);
        onStack[v] = 1;
      }
      const next = out[v]!;
      if (i < next.length) {
        workEdge[top] = i + 1;
        const w = next[i]!;
        if (index[w] === -1) {
          workNode.push(w);
          workEdge.push(0);
        } else if (onStack[w]) low[v] = Math.min(low[v]!, index[w]!);
        continue;
      }
      workNode.pop();
      workEdge.pop();
      if (workNode.length > 0) {
        const parent = workNode[workNode.length - 1]!;
        low[parent] = Math.min(low[parent]!, low[v]!);
      }
      if (low[v] === index[v]) {
        const comp: number[] = [];
        let w: number;
        do {
          w = stack.pop()!;
          onStack[w] = 0;
          comp.push(w);
        } while (w !== v);
        result.push(comp.reverse());
      }
    }
  }
  return result;
}

/** The same over string ids and an adjacency map. */
export function stronglyConnected(ids: string[], out: Map<string, string[]>): string[][] {
  const at = new Map(ids.map((id, i) => [id, i]));
  const adj = ids.map((id) => (out.get(id) ?? []).flatMap((t) => (at.has(t) ? [at.get(t)!] : [])));
  return stronglyConnectedIndices(adj).map((comp) => comp.map((i) => ids[i]!));
}
