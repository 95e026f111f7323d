/**
 * The one validator: schema errors plus the semantic checks that make a flow runnable.
 * The editor, the REST API and the CLI all call this, so they give the same verdicts with
 * the same paths. Errors block a run; warnings never do.
 */

import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { type Problem, type ProblemCode, pointer, problem } from './codes.js';
import { Condition } from './condition.js';
import { EDGE_CONFIG_SCHEMAS } from './edges.js';
import { FLOW_VERSION, type Flow, FlowDocument, type FlowNodeT } from './flow.js';
import { checkConnection, type KindCatalog, type KindInfo } from './kinds.js';
import { type ParseLimits, parseFlowText } from './parse.js';

export interface ValidateOptions {
  kinds: KindCatalog;
  /** Errors beyond this are summarised by one `too-many-errors` problem. Default 200. */
  maxErrors?: number;
  limits?: ParseLimits;
}

export interface ValidationResult {
  ok: boolean;
  errors: Problem[];
  warnings: Problem[];
  /** The document, typed, when it passed the schema (even if semantic errors remain). */
  flow?: Flow;
}

// Our own schemas are trusted, so Ajv may compile them; schemas that come from flows are
// never compiled (see `json-schema.ts`). `$data` stays off and error lists are capped below.
const ajv = new Ajv({ allErrors: true, strict: false, $data: false, validateFormats: false });
ajv.addSchema(Condition as object);
let flowValidator: ValidateFunction | undefined;
const compiled = new WeakMap<object, ValidateFunction>();

function compile(schema: TSchema): ValidateFunction {
  let fn = compiled.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    compiled.set(schema, fn);
  }
  return fn;
}

const SECRET_PATHS = [/^\/models\/[^/]+\/(apiKey|baseURL)$/, /^\/mcpServers\/[^/]+\/(env|headers)\/[^/]+$/];
const ENV_REF = /\$\{env:/;
// Shapes of well-known credentials. Deliberately specific, so prose mentioning "sk-" passes.
const LITERAL_SECRET =
  /\b(sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|xox[abpr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})\b/;
const HIDDEN = /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/;

class Collector {
  errors: Problem[] = [];
  warnings: Problem[] = [];
  private dropped = 0;
  constructor(private readonly max: number) {}
  error(p: Problem): void {
    if (this.errors.length < this.max) this.errors.push(p);
    else this.dropped++;
  }
  warn(p: Problem): void {
    if (this.warnings.length < this.max) this.warnings.push(p);
  }
  get full(): boolean {
    return this.errors.length >= this.max;
  }
  finish(): void {
    if (this.dropped > 0) this.errors.push(problem('too-many-errors', '', `${this.dropped} more`));
  }
}

function ajvProblems(
  errs: ErrorObject[] | null | undefined,
  prefix: string,
  code: ProblemCode,
  idsAt: (path: string) => { nodeId?: string; edgeId?: string },
): Problem[] {
  if (!errs) return [];
  // A union reports a failure for every branch; the deepest path is the most useful one.
  const seen = new Set<string>();
  const out: Problem[] = [];
  for (const e of errs) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') continue;
    let path = prefix + e.instancePath;
    let detail = e.message ?? 'invalid';
    if (e.keyword === 'additionalProperties') {
      const extra = String((e.params as { additionalProperty: string }).additionalProperty);
      path += pointer(extra);
      detail = `unknown property "${extra}"`;
    } else if (e.keyword === 'required') {
      detail = `missing property "${(e.params as { missingProperty: string }).missingProperty}"`;
    } else if (e.keyword === 'const' || e.keyword === 'enum') {
      const allowed =
        (e.params as { allowedValue?: unknown; allowedValues?: unknown[] }).allowedValue ??
        (e.params as { allowedValues?: unknown[] }).allowedValues;
      detail = `must be ${JSON.stringify(allowed)}`;
    }
    const key = `${path}|${detail}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(problem(code, path, `${path || '/'} ${detail}`, idsAt(path)));
  }
  return out;
}

function refValues(config: Record<string, unknown>, dotted: string): Array<[string, string]> {
  // `a.b` reads one string; `a.*.b` reads every element of an array.
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
    else walk((v as Record<string, unknown>)[p], i + 1, path + pointer(p));
  };
  walk(config, 0, '');
  return out;
}

/** Validates a parsed document. */
export function validateFlow(doc: unknown, options: ValidateOptions): ValidationResult {
  const c = new Collector(options.maxErrors ?? 200);
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    c.error(problem('schema', '', 'the document must be a JSON object'));
    return { ok: false, errors: c.errors, warnings: c.warnings };
  }
  const raw = doc as Record<string, unknown>;
  if (typeof raw.version === 'number' && raw.version !== FLOW_VERSION) {
    c.error(
      problem(
        'unsupported-version',
        '/version',
        `version ${raw.version}; this Switchboard reads version ${FLOW_VERSION}`,
      ),
    );
    return { ok: false, errors: c.errors, warnings: c.warnings };
  }

  const rawNodes = Array.isArray(raw.nodes) ? (raw.nodes as unknown[]) : [];
  const rawEdges = Array.isArray(raw.edges) ? (raw.edges as unknown[]) : [];
  const idAt = (arr: unknown[], i: number) => {
    const item = arr[i];
    return item && typeof item === 'object' && typeof (item as { id?: unknown }).id === 'string'
      ? (item as { id: string }).id
      : undefined;
  };
  const idsAt = (path: string) => {
    const m = /^\/(nodes|edges)\/(\d+)/.exec(path);
    if (!m) return {};
    const id = idAt(m[1] === 'nodes' ? rawNodes : rawEdges, Number(m[2]));
    if (id === undefined) return {};
    return m[1] === 'nodes' ? { nodeId: id } : { edgeId: id };
  };

  flowValidator ??= compile(FlowDocument);
  const schemaOk = flowValidator(doc);
  if (!schemaOk) for (const p of ajvProblems(flowValidator.errors, '', 'schema', idsAt)) c.error(p);

  // Unknown kinds are named even when the schema failed, and the document is left as it is.
  rawNodes.forEach((n, i) => {
    const kind = n && typeof n === 'object' ? (n as { kind?: unknown }).kind : undefined;
    if (typeof kind === 'string' && !options.kinds.get(kind))
      c.error(problem('unknown-kind', `/nodes/${i}/kind`, `"${kind}"`, idsAt(`/nodes/${i}`)));
  });
  scanStrings(raw, c, idsAt);

  if (!schemaOk) {
    c.finish();
    return { ok: false, errors: c.errors, warnings: c.warnings };
  }
  const flow = doc as Flow;
  semanticChecks(flow, options.kinds, c);
  c.finish();
  return { ok: c.errors.length === 0, errors: c.errors, warnings: c.warnings, flow };
}

/** Parses untrusted text (bounded) and validates it. */
export function validateFlowText(text: string | Uint8Array, options: ValidateOptions): ValidationResult {
  const parsed = parseFlowText(text, options.limits);
  if (!parsed.ok) return { ok: false, errors: parsed.errors, warnings: parsed.warnings };
  const r = validateFlow(parsed.value, options);
  r.warnings.unshift(...parsed.warnings);
  return r;
}

function scanStrings(
  doc: Record<string, unknown>,
  c: Collector,
  idsAt: (p: string) => { nodeId?: string; edgeId?: string },
): void {
  const stack: Array<[unknown, string]> = [[doc, '']];
  while (stack.length > 0) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (HIDDEN.test(v)) c.warn(problem('hidden-characters', path, undefined, idsAt(path)));
      if (v.length < 8) continue;
      const secretSlot = SECRET_PATHS.some((re) => re.test(path));
      if (!secretSlot && ENV_REF.test(v)) c.error(problem('env-not-allowed', path, undefined, idsAt(path)));
      if (LITERAL_SECRET.test(v)) c.error(problem('literal-secret', path, undefined, idsAt(path)));
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push([v[i], `${path}/${i}`]);
    } else if (v !== null && typeof v === 'object') {
      for (const k of Object.keys(v)) stack.push([(v as Record<string, unknown>)[k], path + pointer(k)]);
    }
  }
}

function stopsCycles(info: KindInfo | undefined, node: FlowNodeT): boolean {
  if (!info) return false;
  if (info.role === 'decider' || info.role === 'human') return true;
  const s = info.stopsCycles;
  return typeof s === 'function' ? s(node.config) : s === true;
}

function semanticChecks(flow: Flow, kinds: KindCatalog, c: Collector): void {
  const nodeIndex = new Map<string, number>();
  const edgeIndex = new Map<string, number>();
  const nodeIds = (id: string) => ({ nodeId: id });

  flow.nodes.forEach((n, i) => {
    if (nodeIndex.has(n.id)) c.error(problem('duplicate-id', `/nodes/${i}/id`, `"${n.id}"`, nodeIds(n.id)));
    else nodeIndex.set(n.id, i);
  });
  flow.edges.forEach((e, i) => {
    if (edgeIndex.has(e.id) || nodeIndex.has(e.id))
      c.error(problem('duplicate-id', `/edges/${i}/id`, `"${e.id}"`, { edgeId: e.id }));
    else edgeIndex.set(e.id, i);
  });

  const info = (n: FlowNodeT) => kinds.get(n.kind);
  const node = (id: string) => {
    const i = nodeIndex.get(id);
    return i === undefined ? undefined : flow.nodes[i];
  };

  // Node configs, references.
  flow.nodes.forEach((n, i) => {
    const k = info(n);
    if (!k) return;
    const v = compile(k.configSchema);
    if (!v(n.config))
      for (const p of ajvProblems(v.errors, `/nodes/${i}/config`, 'config', () => nodeIds(n.id))) c.error(p);
    for (const ref of k.modelRefs ?? [])
      for (const [p, val] of refValues(n.config, ref))
        if (!Object.hasOwn(flow.models, val))
          c.error(problem('unknown-model', `/nodes/${i}/config${p}`, `"${val}"`, nodeIds(n.id)));
    for (const ref of k.serverRefs ?? [])
      for (const [p, val] of refValues(n.config, ref))
        if (!flow.mcpServers || !Object.hasOwn(flow.mcpServers, val))
          c.error(problem('unknown-server', `/nodes/${i}/config${p}`, `"${val}"`, nodeIds(n.id)));
    for (const ref of k.nodeRefs ?? [])
      for (const [p, val] of refValues(n.config, ref))
        if (!nodeIndex.has(val))
          c.error(problem('unknown-node-ref', `/nodes/${i}/config${p}`, `"${val}"`, nodeIds(n.id)));
    for (const ref of k.edgeRefs ?? [])
      for (const [p, val] of refValues(n.config, ref))
        if (!edgeIndex.has(val))
          c.error(problem('unknown-node-ref', `/nodes/${i}/config${p}`, `edge "${val}"`, nodeIds(n.id)));
  });

  // Parents: exist, are teams, no cycles.
  const children = new Map<string, string[]>();
  flow.nodes.forEach((n, i) => {
    if (n.parent === undefined) return;
    const p = node(n.parent);
    if (!p || info(p)?.role !== 'team') {
      c.error(problem('bad-parent', `/nodes/${i}/parent`, `"${n.parent}"`, nodeIds(n.id)));
      return;
    }
    const list = children.get(n.parent);
    if (list) list.push(n.id);
    else children.set(n.parent, [n.id]);
  });
  const parentOk = new Set<string>();
  flow.nodes.forEach((n, i) => {
    const seen = new Set<string>([n.id]);
    let cur = n.parent;
    while (cur !== undefined) {
      if (parentOk.has(cur)) break;
      if (seen.has(cur)) {
        c.error(problem('parent-cycle', `/nodes/${i}/parent`, `through "${cur}"`, nodeIds(n.id)));
        return;
      }
      seen.add(cur);
      cur = node(cur)?.parent;
    }
    parentOk.add(n.id);
  });

  // Edges.
  const handoverOut = new Map<string, string[]>();
  const handoverIn = new Map<string, string[]>();
  flow.edges.forEach((e, i) => {
    const ids = { edgeId: e.id };
    const s = node(e.source);
    const t = node(e.target);
    if (!s) c.error(problem('dangling-edge', `/edges/${i}/source`, `no node "${e.source}"`, ids));
    if (!t) c.error(problem('dangling-edge', `/edges/${i}/target`, `no node "${e.target}"`, ids));
    const schema = EDGE_CONFIG_SCHEMAS[e.kind];
    if (e.config !== undefined) {
      const v = compile(schema);
      if (!v(e.config))
        for (const p of ajvProblems(v.errors, `/edges/${i}/config`, 'edge-config', () => ids)) c.error(p);
    }
    if (!s || !t) return;
    if (e.source === e.target) {
      c.error(problem('self-loop', `/edges/${i}`, `"${e.source}"`, ids));
      return;
    }
    const si = info(s);
    const ti = info(t);
    if (si && ti) {
      const bad = checkConnection(e.kind, si, ti);
      if (bad) c.error({ ...bad, path: `/edges/${i}`, edgeId: e.id });
    }
    if (e.kind === 'handover') {
      push(handoverOut, e.source, e.target);
      push(handoverIn, e.target, e.source);
    }
  });

  // Start and end.
  const starts: number[] = [];
  let ends = 0;
  flow.nodes.forEach((n, i) => {
    const r = info(n)?.role;
    if (r === 'start') starts.push(i);
    else if (r === 'end') ends++;
  });
  if (starts.length !== 1)
    c.error(
      problem('start-count', starts.length > 1 ? `/nodes/${starts[1]}` : '/nodes', `found ${starts.length}`),
    );
  if (ends === 0) c.error(problem('no-end', '/nodes'));

  // Teams: members and an entry.
  flow.nodes.forEach((n, i) => {
    if (info(n)?.role !== 'team') return;
    const members = children.get(n.id) ?? [];
    const active = members.filter((m) => {
      const r = info(node(m)!)?.role;
      return r !== 'note' && r !== 'observer' && r !== 'tool';
    });
    if (active.length === 0) {
      c.error(problem('team-empty', `/nodes/${i}`, `"${n.id}"`, nodeIds(n.id)));
      return;
    }
    const entry = n.config.entry;
    if (typeof entry === 'string') {
      if (!members.includes(entry))
        c.error(
          problem(
            'team-no-entry',
            `/nodes/${i}/config/entry`,
            `"${entry}" is not a member of "${n.id}"`,
            nodeIds(n.id),
          ),
        );
      return;
    }
    if (n.config.mode === 'groupChat') return; // every member may speak first
    const memberSet = new Set(active);
    const roots = active.filter((m) => !(handoverIn.get(m) ?? []).some((src) => memberSet.has(src)));
    if (roots.length !== 1)
      c.error(
        problem(
          'team-no-entry',
          `/nodes/${i}/config`,
          roots.length === 0
            ? 'every member has a handover into it; set config.entry'
            : `several possible entries (${roots.join(', ')}); set config.entry`,
          nodeIds(n.id),
        ),
      );
  });

  // Reachability from start: handovers, team membership, delegation, grants and observers.
  const startIdx = starts[0];
  if (startIdx !== undefined && starts.length === 1) {
    const reach = new Set<string>();
    const attached = new Map<string, string[]>();
    for (const e of flow.edges) {
      if (!nodeIndex.has(e.source) || !nodeIndex.has(e.target)) continue;
      if (e.kind === 'handover' || e.kind === 'delegate') push(attached, e.source, e.target);
      else push(attached, e.target, e.source); // a tool or observer is live when what it serves is
    }
    for (const [team, list] of children) for (const m of list) push(attached, team, m);
    const queue = [flow.nodes[startIdx]!.id];
    reach.add(queue[0]!);
    while (queue.length > 0) {
      const id = queue.pop()!;
      for (const next of attached.get(id) ?? [])
        if (!reach.has(next)) {
          reach.add(next);
          queue.push(next);
        }
    }
    flow.nodes.forEach((n, i) => {
      if (!reach.has(n.id) && info(n)?.role !== 'note')
        c.warn(problem('unreachable', `/nodes/${i}`, `"${n.id}"`, nodeIds(n.id)));
    });
  }

  // Handover cycles that nothing can stop.
  for (const scc of stronglyConnected(
    flow.nodes.map((n) => n.id),
    handoverOut,
  )) {
    if (scc.length < 2) continue;
    if (scc.some((id) => stopsCycles(info(node(id)!), node(id)!))) continue;
    if (sharedTerminatingTeam(scc, node, info)) continue;
    const first = scc[0]!;
    c.error(problem('endless-cycle', `/nodes/${nodeIndex.get(first)}`, scc.join(' → '), nodeIds(first)));
  }
}

function sharedTerminatingTeam(
  ids: string[],
  node: (id: string) => FlowNodeT | undefined,
  info: (n: FlowNodeT) => KindInfo | undefined,
): boolean {
  // Walk up from the first member; a terminating team holding every member stops the cycle.
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
    if (t && stopsCycles(info(t), t)) return true;
  }
  return false;
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}

/** Tarjan's algorithm, iterative so a 10,000-node chain does not overflow the stack. */
export function stronglyConnected(ids: string[], out: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const result: string[][] = [];
  let counter = 0;
  for (const root of ids) {
    if (index.has(root)) continue;
    const work: Array<[string, number]> = [[root, 0]];
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const [v, i] = frame;
      if (i === 0) {
        index.set(v, counter);
        low.set(v, counter);
        counter++;
        stack.push(v);
        onStack.add(v);
      }
      const next = out.get(v) ?? [];
      if (i < next.length) {
        frame[1] = i + 1;
        const w = next[i]!;
        if (!index.has(w)) work.push([w, 0]);
        else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent[0], Math.min(low.get(parent[0])!, low.get(v)!));
      if (low.get(v) === index.get(v)) {
        const comp: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
        } while (w !== v);
        result.push(comp.reverse());
      }
    }
  }
  return result;
}
