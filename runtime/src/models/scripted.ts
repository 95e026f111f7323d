/**
 * The `scripted` model provider: deterministic replies for tests and offline demos. Every event
 * of a run that uses it carries `scripted: true`, so a scripted run is never mistaken for a real one.
 *
 * ## Script format
 *
 * In the flow: `models.<name> = { "provider": "scripted", "script": [ …entries ], "latencyMs"?: n }`,
 * or `"scriptFile": "replies.json"` (a JSON array of entries, or `{ "script": [ … ] }`, relative to
 * the flow file's directory). Both may be given; the file's entries come after the inline ones.
 *
 * An entry is an object:
 *
 * ```jsonc
 * {
 *   "node": "writer",            // optional: only replies to this node (agent, decider, observer…)
 *   "text": "Here is the draft", // the reply text
 *   "json": { "verdict": "ok" }, // or: structured output; the text becomes its JSON
 *   "toolCalls": [               // optional tool calls
 *     { "name": "search", "args": { "q": "x" } },          // args are serialised as JSON
 *     { "name": "search", "arguments": "{\"q\": " }         // or raw argument text (malformed tests)
 *   ],
 *   "usage": { "promptTokens": 10, "completionTokens": 5 }, // default: a rough count of the text
 *   "finishReason": "stop",      // default "tool_calls" when there are tool calls, else "stop"
 *   "latencyMs": 50,             // overrides the model's latencyMs for this reply
 *   "deltas": ["Here ", "is…"],  // optional streamed pieces (model.delta events), spread evenly over
 *                                // the reply's latency (all at once without one); default: none
 *   "error": { "code": "server_error", "message": "boom" }, // fail this call with a ModelError
 *   "repeat": 3,                 // serve this entry this many times (true: forever) before moving on
 *   "fallback": true             // never consumed: used when nothing else matches
 * }
 * ```
 *
 * A plain string entry is short for `{ "text": "…" }`.
 *
 * Choosing a reply for a call from node N: the first unconsumed entry whose `node` is N; else the
 * first unconsumed entry without `node`; else a `fallback` entry for N; else a fallback without
 * `node`; else the call fails with `ModelError('script_exhausted')`. Entries are consumed in order.
 *
 * An instant reply (no latency) resolves on the microtask queue and adds no macrotask, so a chain
 * of scripted agents runs at interpreter speed. With latency, the reply waits on a timer that the
 * request's AbortSignal cancels.
 */
import type { ModelConfigT } from '@switchboard/schemas';
import { readScriptFile, ScriptFileError, scriptPathRule } from './script-file.js';
import {
  ModelError,
  type ModelErrorCode,
  type ModelFactoryContext,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCallRequest,
} from './types.js';

export interface ScriptToolCall {
  id?: string;
  name: string;
  args?: unknown;
  arguments?: string;
}

export interface ScriptEntry {
  node?: string;
  text?: string;
  json?: unknown;
  toolCalls?: ScriptToolCall[];
  usage?: { promptTokens: number; completionTokens: number };
  finishReason?: string;
  latencyMs?: number;
  deltas?: string[];
  error?: { code?: ModelErrorCode; message?: string };
  repeat?: number | boolean;
  fallback?: boolean;
}

/** The serialisable position of a scripted provider, so a resumed run continues the script. */
export interface ScriptedSnapshot {
  /** How many times each entry has been served. */
  served: number[];
  calls: number;
}

const MAX_SCRIPT_ENTRIES = 100_000;

/** Normalises and checks script entries; throws naming the entry index on bad input. */
export function parseScript(raw: unknown, where: string): ScriptEntry[] {
  if (!Array.isArray(raw)) throw new Error(`${where}: a script must be an array of entries`);
  if (raw.length > MAX_SCRIPT_ENTRIES) throw new Error(`${where}: more than ${MAX_SCRIPT_ENTRIES} entries`);
  return raw.map((e, i) => {
    if (typeof e === 'string') return { text: e };
    if (e === null || typeof e !== 'object' || Array.isArray(e))
      throw new Error(`${where}[${i}]: an entry is a string or an object`);
    const entry = e as ScriptEntry;
    if (entry.node !== undefined && typeof entry.node !== 'string')
      throw new Error(`${where}[${i}].node: must be a node id string`);
    if (entry.text !== undefined && typeof entry.text !== 'string')
      throw new Error(`${where}[${i}].text: must be a string`);
    if (entry.toolCalls !== undefined) {
      if (!Array.isArray(entry.toolCalls)) throw new Error(`${where}[${i}].toolCalls: must be an array`);
      entry.toolCalls.forEach((tc, j) => {
        if (!tc || typeof tc.name !== 'string')
          throw new Error(`${where}[${i}].toolCalls[${j}].name: must be a string`);
        if (tc.arguments !== undefined && typeof tc.arguments !== 'string')
          throw new Error(`${where}[${i}].toolCalls[${j}].arguments: must be a string (raw JSON text)`);
      });
    }
    if (entry.latencyMs !== undefined && !(typeof entry.latencyMs === 'number' && entry.latencyMs >= 0))
      throw new Error(`${where}[${i}].latencyMs: must be a number ≥ 0`);
    return entry;
  });
}

function roughTokens(s: string): number {
  return Math.ceil(s.length / 4);
}

/** What a script says once and for all: the nodes its consumable entries name, each node's first fallback ('' = any node). */
export interface ScriptIndex {
  readonly nodes: ReadonlySet<string>;
  readonly fallbacks: ReadonlyMap<string, number>;
}

export function indexScript(entries: readonly ScriptEntry[]): ScriptIndex {
  const nodes = new Set<string>();
  const fallbacks = new Map<string, number>();
  entries.forEach((e, i) => {
    if (e.fallback) {
      if (!fallbacks.has(e.node ?? '')) fallbacks.set(e.node ?? '', i);
    } else if (e.node !== undefined) nodes.add(e.node);
  });
  return { nodes, fallbacks };
}

export class ScriptedProvider implements ModelProvider {
  readonly scripted = true;
  private served: number[];
  private calls = 0;
  /** Index of the first entry not yet fully served, per node key ('' = entries without node). */
  private cursor = new Map<string, number>();
  private readonly nodes: ReadonlySet<string>;
  private readonly fallbacks: ReadonlyMap<string, number>;
  /** One string for every reply: hosts key usage by it, and a fresh string per reply is a fresh key to hash. */
  private readonly model: string;

  /** `index`, when given, is `indexScript(entries)`, computed once for a script many providers serve. */
  constructor(
    private readonly entries: readonly ScriptEntry[],
    private readonly options: { latencyMs?: number; name?: string; model?: string } = {},
    index: ScriptIndex = indexScript(entries),
  ) {
    this.served = new Array<number>(entries.length).fill(0);
    this.model = options.model ?? `scripted:${options.name ?? 'model'}`;
    this.nodes = index.nodes;
    this.fallbacks = index.fallbacks;
  }

  snapshot(): ScriptedSnapshot {
    return { served: this.served.slice(), calls: this.calls };
  }

  restore(s: unknown): void {
    const snap = s as ScriptedSnapshot;
    if (!snap || !Array.isArray(snap.served) || snap.served.length !== this.entries.length) return;
    this.served = snap.served.slice();
    this.calls = snap.calls;
    this.cursor.clear();
  }

  private available(i: number): boolean {
    const e = this.entries[i]!;
    if (e.fallback) return false;
    const times = e.repeat === true ? Number.POSITIVE_INFINITY : typeof e.repeat === 'number' ? e.repeat : 1;
    return this.served[i]! < times;
  }

  /** First available entry for a key ('' = entries without node), scanning from a remembered cursor. */
  private next(key: string): number {
    let i = this.cursor.get(key) ?? 0;
    for (; i < this.entries.length; i++) {
      const e = this.entries[i]!;
      if ((e.node ?? '') !== key) continue;
      if (this.available(i)) break;
    }
    this.cursor.set(key, i);
    return i < this.entries.length ? i : -1;
  }

  private pick(nodeId: string): number {
    // Long scripts stay O(1) amortised per call; nodes the script never names cost no scan.
    if (this.nodes.has(nodeId)) {
      const i = this.next(nodeId);
      if (i >= 0) return i;
    }
    const i = this.next('');
    if (i >= 0) return i;
    return this.fallbacks.get(nodeId) ?? this.fallbacks.get('') ?? -1;
  }

  complete(request: ModelRequest): Promise<ModelResponse> {
    if (request.signal.aborted)
      return Promise.reject(new ModelError('cancelled', 'the model call was cancelled', 0));
    const i = this.pick(request.nodeId);
    if (i < 0)
      return Promise.reject(
        new ModelError(
          'script_exhausted',
          `scripted model "${this.options.name ?? 'scripted'}" has no reply left for node "${request.nodeId}"`,
          1,
        ),
      );
    this.served[i]!++;
    this.calls++;
    const entry = this.entries[i]!;
    const latency = entry.latencyMs ?? this.options.latencyMs ?? 0;
    if (latency <= 0) {
      try {
        return Promise.resolve(this.reply(entry, request));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return new Promise<ModelResponse>((resolvePromise, reject) => {
      // The pieces arrive while the reply is being "generated", as a streaming model sends them.
      const pieces = request.onDelta && entry.deltas && !entry.error ? entry.deltas : undefined;
      const pieceTimers = pieces
        ? pieces.map((d, k) =>
            setTimeout(() => request.onDelta!(d), (latency * (k + 1)) / (pieces.length + 1)),
          )
        : [];
      const onAbort = () => {
        clearTimeout(timer);
        for (const t of pieceTimers) clearTimeout(t);
        reject(new ModelError('cancelled', 'the model call was cancelled', 1));
      };
      const timer = setTimeout(() => {
        request.signal.removeEventListener('abort', onAbort);
        try {
          resolvePromise(this.reply(entry, request, pieces !== undefined));
        } catch (e) {
          reject(e);
        }
      }, latency);
      request.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private reply(entry: ScriptEntry, request: ModelRequest, streamed = false): ModelResponse {
    if (entry.error)
      throw new ModelError(
        entry.error.code ?? 'server_error',
        entry.error.message ?? 'scripted error',
        1,
        'scripted',
      );
    const text = entry.json !== undefined ? JSON.stringify(entry.json) : (entry.text ?? '');
    const toolCalls: ToolCallRequest[] = (entry.toolCalls ?? []).map((tc, j) => ({
      id: tc.id ?? `call_${this.calls}_${j}`,
      name: tc.name,
      arguments: tc.arguments ?? JSON.stringify(tc.args ?? {}),
    }));
    // Streaming is simulated only when the script gives pieces; a plain reply arrives whole.
    if (request.onDelta && entry.deltas && !streamed) for (const d of entry.deltas) request.onDelta(d);
    return {
      text,
      toolCalls,
      usage: entry.usage ?? { promptTokens: 0, completionTokens: roughTokens(text) },
      finishReason: entry.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
      model: this.model,
    };
  }
}

/**
 * Inline scripts parsed and indexed, per script array: a host running a stored flow makes a
 * provider per run, from the same script every time. A `scriptFile` is read for every run, as
 * the file may change.
 */
const inlineScripts = new WeakMap<object, { entries: ScriptEntry[]; index: ScriptIndex }>();
const NO_SCRIPT: readonly unknown[] = [];

/** Builds a scripted provider from a flow's model entry (inline `script` and/or `scriptFile`). */
export function createScriptedProvider(
  name: string,
  config: ModelConfigT,
  ctx: Pick<ModelFactoryContext, 'baseDir'>,
): ScriptedProvider | FileScriptedProvider {
  const opts: { latencyMs?: number; name?: string; model?: string } = { name };
  if (config.latencyMs !== undefined) opts.latencyMs = config.latencyMs;
  if (config.model !== undefined) opts.model = config.model;
  if (!config.scriptFile) {
    const script: unknown = config.script ?? NO_SCRIPT;
    let parsed = typeof script === 'object' && script !== null ? inlineScripts.get(script) : undefined;
    if (!parsed) {
      const entries = parseScript(script, `models.${name}.script`);
      parsed = { entries, index: indexScript(entries) };
      inlineScripts.set(script as object, parsed);
    }
    return new ScriptedProvider(parsed.entries, opts, parsed.index);
  }
  const inline = parseScript(config.script ?? [], `models.${name}.script`);
  const where = `models.${name}.scriptFile`;
  // Refused by its shape at once; the file is read (confined, asynchronously) on the first call.
  const shape = scriptPathRule(config.scriptFile);
  if (shape) throw new ScriptFileError(where, config.scriptFile, shape);
  const file = config.scriptFile;
  const load = async () => {
    const raw = await readScriptFile(where, file, ctx.baseDir ?? process.cwd());
    const list = Array.isArray(raw) ? raw : (raw as { script?: unknown })?.script;
    return new ScriptedProvider([...inline, ...parseScript(list, where)], opts);
  };
  return new FileScriptedProvider(load);
}

/**
 * A scripted provider whose entries come from a file: the file is read on the first call (never
 * synchronously, never while the run is being built), and a restored position waits for it.
 */
export class FileScriptedProvider implements ModelProvider {
  readonly scripted = true;
  private loading: Promise<ScriptedProvider> | undefined;
  private loaded: ScriptedProvider | undefined;
  private restored: unknown;

  constructor(private readonly load: () => Promise<ScriptedProvider>) {}

  /** Reads the file now (the first call does it anyway); rejects with the file's problem. */
  ready(): Promise<ScriptedProvider> {
    this.loading ??= this.load().then((p) => {
      if (this.restored !== undefined) p.restore(this.restored);
      this.loaded = p;
      return p;
    });
    return this.loading;
  }

  complete(request: ModelRequest): Promise<ModelResponse> {
    if (this.loaded) return this.loaded.complete(request);
    return this.ready().then(
      (p) => p.complete(request),
      (e: unknown) => {
        throw new ModelError('bad_request', (e as Error).message, 0);
      },
    );
  }

  snapshot(): unknown {
    return this.loaded ? this.loaded.snapshot() : this.restored;
  }

  restore(s: unknown): void {
    if (this.loaded) this.loaded.restore(s);
    else this.restored = s;
  }
}
