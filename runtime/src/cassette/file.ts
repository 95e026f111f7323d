/**
 * The cassette file: the flow and input of a run, every model request with its reply and every
 * tool call with its result, keyed so the same request finds the same reply, and the events the
 * run produced (to compare a replay with). Plain JSON.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { validate } from '@switchboard/nodes';
import { type Flow, type ModelConfigT, parseFlowText, type RunEvent } from '@switchboard/schemas';
import type { ModelErrorCode, ModelResponse } from '../models/types.js';
import type { ToolResult } from '../tools/types.js';
import type { CanonicalRequest } from './canonical.js';

export const CASSETTE_FORMAT = 'switchboard-cassette';
export const CASSETTE_VERSION = 1;
const MAX_CASSETTE_BYTES = 256 * 1024 * 1024;

export interface CassetteModelCall {
  key: string;
  nodeId: string;
  request: CanonicalRequest;
  response?: ModelResponse;
  error?: { code: ModelErrorCode; message: string; attempts: number };
  /** Streamed pieces, in order, replayed as `model.delta` events. */
  deltas?: string[];
  retries?: Array<{ attempt: number; delayMs: number; cause: string }>;
}

export interface CassetteTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  toolNodeId: string;
  server: string;
  remoteName: string;
}

export interface CassetteToolCall {
  key: string;
  agent: string;
  tool: string;
  args: Record<string, unknown>;
  result?: ToolResult;
  error?: string;
}

export interface Cassette {
  format: typeof CASSETTE_FORMAT;
  version: typeof CASSETTE_VERSION;
  recordedAt: string;
  flow: Flow;
  input: unknown;
  answers?: Record<string, string[]>;
  /** Per model name of the flow: whether its replies came from a script (events say so). */
  scripted: Record<string, boolean>;
  /**
   * The model configs the run used where they differ from the flow's (`run --model`): its
   * `model.request` events describe the models as run, so a replay runs with them too (the
   * cassette answers every call: no endpoint is contacted).
   */
  modelsAsRun?: Record<string, ModelConfigT>;
  models: CassetteModelCall[];
  /** The tools each agent was given, by agent node id. */
  toolSets: Array<{ agent: string; tools: CassetteTool[] }>;
  tools: CassetteToolCall[];
  events: RunEvent[];
  result: { status: string; output?: unknown; error?: { code: string; message: string } };
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** Checks the parts of a cassette replay relies on; the message names the JSON path. */
export function checkCassette(v: unknown): { ok: true; cassette: Cassette } | { ok: false; message: string } {
  const bad = (path: string, m: string) => ({ ok: false as const, message: `${path}: ${m}` });
  if (!isObj(v)) return bad('/', 'a cassette is a JSON object');
  if (v.format !== CASSETTE_FORMAT) return bad('/format', `expected "${CASSETTE_FORMAT}"`);
  if (v.version !== CASSETTE_VERSION) return bad('/version', `expected ${CASSETTE_VERSION}`);
  const fv = validate(v.flow);
  if (!fv.ok) return bad(`/flow${fv.errors[0]?.path ?? ''}`, fv.errors[0]?.message ?? 'not a valid flow');
  if (!isObj(v.scripted)) return bad('/scripted', 'expected an object');
  for (const k of ['models', 'toolSets', 'tools', 'events'] as const)
    if (!Array.isArray(v[k])) return bad(`/${k}`, 'expected an array');
  const models = v.models as unknown[];
  for (let i = 0; i < models.length; i++) {
    const m = models[i];
    if (!isObj(m) || typeof m.key !== 'string' || typeof m.nodeId !== 'string' || !isObj(m.request))
      return bad(`/models/${i}`, 'expected { key, nodeId, request, response | error }');
    if (!isObj(m.response) && !isObj(m.error))
      return bad(`/models/${i}`, 'has neither a response nor an error');
  }
  const tools = v.tools as unknown[];
  for (let i = 0; i < tools.length; i++) {
    const t = tools[i];
    if (!isObj(t) || typeof t.key !== 'string' || typeof t.tool !== 'string')
      return bad(`/tools/${i}`, 'expected { key, agent, tool, args, result }');
  }
  if (!isObj(v.result) || typeof v.result.status !== 'string') return bad('/result', 'expected { status }');
  return { ok: true, cassette: v as unknown as Cassette };
}

export async function readCassette(
  file: string,
): Promise<{ ok: true; cassette: Cassette } | { ok: false; message: string }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    return {
      ok: false,
      message: `cannot read the cassette ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    };
  }
  // Bounded like a flow, with room for long runs; `__proto__` and friends are refused as keys.
  const parsed = parseFlowText(text, { maxBytes: MAX_CASSETTE_BYTES, maxValues: 50_000_000 });
  if (!parsed.ok) {
    const p = parsed.errors[0];
    return {
      ok: false,
      message: `the cassette ${file} is unusable at ${p?.path || '/'}: ${p?.message ?? 'unreadable'}`,
    };
  }
  const r = checkCassette(parsed.value);
  return r.ok ? r : { ok: false, message: `the cassette ${file} is invalid at ${r.message}` };
}

export async function writeCassette(file: string, c: Cassette): Promise<void> {
  await writeFile(file, `${JSON.stringify(c)}\n`);
}
