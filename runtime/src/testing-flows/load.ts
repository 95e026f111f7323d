/**
 * Reads a `*.tests.json` file into runnable cases, or into the list of what is wrong with it
 * (each problem with its JSON pointer). The flow of a tests file is read and validated once per
 * flow file, however many cases and tests files use it.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { validateText } from '@switchboard/nodes';
import {
  type Flow,
  type FlowTestCaseT,
  pointer,
  RUN_EVENT_TYPES,
  validateFlowTestsText,
} from '@switchboard/schemas';
import { type Cassette, readCassette } from '../cassette/file.js';
import { parseScript, type ScriptEntry } from '../models/scripted.js';

export interface Problem {
  path: string;
  message: string;
}

export interface LoadedCase {
  index: number;
  def: FlowTestCaseT;
  /** Parsed `replies` (for every model) or per-model scripts. */
  replies?: ScriptEntry[];
  models?: Map<string, ScriptEntry[]>;
  cassette?: Cassette;
}

export interface LoadedSuite {
  file: string;
  flowFile: string;
  flow: Flow;
  cases: LoadedCase[];
}

export type LoadResult = { ok: true; suite: LoadedSuite } | { ok: false; file: string; problems: Problem[] };

/** Flows already read and validated, by absolute path: validated once per run of the command. */
export type FlowCache = Map<string, Promise<{ flow?: Flow; problems: Problem[] }>>;

const MAX_BYTES = 8 * 1024 * 1024;

async function readText(file: string): Promise<string> {
  return readFile(file, 'utf8');
}

function loadFlow(cache: FlowCache, file: string): Promise<{ flow?: Flow; problems: Problem[] }> {
  let p = cache.get(file);
  if (!p) {
    p = (async () => {
      let text: string;
      try {
        text = await readText(file);
      } catch (e) {
        return {
          problems: [
            {
              path: '/flow',
              message: `cannot read the flow ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
            },
          ],
        };
      }
      const v = validateText(text);
      if (!v.ok || !v.flow)
        return {
          problems: v.errors.map((p) => ({
            path: '/flow',
            message: `the flow ${file} is invalid at ${p.path || '/'}: ${p.message}`,
          })),
        };
      return { flow: v.flow, problems: [] };
    })();
    cache.set(file, p);
  }
  return p;
}

function checkRegex(src: string | undefined, flags: string | undefined, path: string, out: Problem[]): void {
  if (src === undefined) return;
  try {
    new RegExp(src, flags ?? '');
  } catch (e) {
    out.push({ path, message: `not a valid regular expression: ${(e as Error).message}` });
  }
}

/** Checks a case against its flow; returns it prepared, pushing problems on the way. */
async function prepareCase(
  c: FlowTestCaseT,
  i: number,
  flow: Flow,
  baseDir: string,
  out: Problem[],
): Promise<LoadedCase> {
  const at = (...parts: Array<string | number>) => pointer('cases', i, ...parts);
  const nodes = new Map(flow.nodes.map((n) => [n.id, n]));
  const edges = new Set(flow.edges.map((e) => e.id));
  const prepared: LoadedCase = { index: i, def: c };
  for (const key of Object.keys(c.answers ?? {})) {
    const n = nodes.get(key);
    if (!n) out.push({ path: at('answers', key), message: `the flow has no node "${key}"` });
    else if (n.kind !== 'human')
      out.push({ path: at('answers', key), message: `node "${key}" is a ${n.kind}, not a human node` });
  }
  const sources = [c.replies && 'replies', c.models && 'models', c.cassette && 'cassette'].filter(Boolean);
  if (sources.length > 1)
    out.push({
      path: at(sources[1]!),
      message: `give model replies one way: ${sources.join(' and ')} were both given`,
    });
  if (c.replies) {
    try {
      prepared.replies = parseScript(c.replies, 'replies');
    } catch (e) {
      out.push({ path: at(), message: (e as Error).message });
    }
  }
  if (c.models) {
    prepared.models = new Map();
    for (const [name, script] of Object.entries(c.models)) {
      if (!Object.hasOwn(flow.models, name)) {
        out.push({
          path: at('models', name),
          message: `the flow has no model "${name}" (it has: ${Object.keys(flow.models).join(', ')})`,
        });
        continue;
      }
      try {
        prepared.models.set(name, parseScript(script, `models.${name}`));
      } catch (e) {
        out.push({ path: at('models', name), message: (e as Error).message });
      }
    }
  }
  if (c.cassette) {
    const r = await readCassette(resolve(baseDir, c.cassette));
    if (!r.ok) out.push({ path: at('cassette'), message: r.message });
    else prepared.cassette = r.cassette;
  }
  const ex = c.expect;
  for (const kind of ['order', 'includes', 'set', 'excludes'] as const)
    ex.edges?.[kind]?.forEach((id, j) => {
      if (!edges.has(id))
        out.push({ path: at('expect', 'edges', kind, j), message: `the flow has no edge "${id}"` });
    });
  ex.nodes?.forEach((n, j) => {
    if (!nodes.has(n.node))
      out.push({ path: at('expect', 'nodes', j, 'node'), message: `the flow has no node "${n.node}"` });
    checkRegex(n.matches, n.flags, at('expect', 'nodes', j, 'matches'), out);
  });
  checkRegex(ex.output?.matches, ex.output?.flags, at('expect', 'output', 'matches'), out);
  ex.events?.forEach((e, j) => {
    if (!RUN_EVENT_TYPES.includes(e.type))
      out.push({
        path: at('expect', 'events', j, 'type'),
        message: `no event type "${e.type}" (known: ${RUN_EVENT_TYPES.join(', ')})`,
      });
    if (e.node !== undefined && !nodes.has(e.node))
      out.push({ path: at('expect', 'events', j, 'node'), message: `the flow has no node "${e.node}"` });
  });
  return prepared;
}

/** Loads one tests file. Never throws. */
export async function loadTestsFile(file: string, flows: FlowCache): Promise<LoadResult> {
  const abs = resolve(file);
  let text: string;
  try {
    text = await readText(abs);
  } catch (e) {
    return {
      ok: false,
      file,
      problems: [
        { path: '', message: `cannot read it: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` },
      ],
    };
  }
  if (text.length > MAX_BYTES)
    return {
      ok: false,
      file,
      problems: [{ path: '', message: `larger than the limit of ${MAX_BYTES} bytes` }],
    };
  const v = validateFlowTestsText(text);
  if (!v.ok) return { ok: false, file, problems: v.errors };
  const baseDir = dirname(abs);
  const flowFile = resolve(baseDir, v.tests.flow);
  const f = await loadFlow(flows, flowFile);
  if (!f.flow) return { ok: false, file, problems: f.problems };
  const problems: Problem[] = [];
  const cases: LoadedCase[] = [];
  const names = new Set<string>();
  for (const [i, c] of v.tests.cases.entries()) {
    if (names.has(c.name))
      problems.push({ path: pointer('cases', i, 'name'), message: `two cases are named "${c.name}"` });
    names.add(c.name);
    cases.push(await prepareCase(c, i, f.flow, baseDir, problems));
  }
  if (problems.length > 0) return { ok: false, file, problems };
  return { ok: true, suite: { file, flowFile, flow: f.flow, cases } };
}
