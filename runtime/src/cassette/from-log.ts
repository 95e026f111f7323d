/**
 * A cassette built from a stored run's log rather than recorded at the provider boundary: each
 * `model.request` resolved to the full request and keyed exactly as the recorder keys it (the
 * canonical form of `canonical.ts`, computed from the same fields), its reply from the
 * `model.completed` that followed (with the deltas and retries between), the tool calls the
 * reply asked for from the assistant message of the node's next request (the raw argument text,
 * which the next request must carry unchanged to be found), and each tool's result from the
 * run's tool journal (the full result; the event holds a clipped copy) or else its event.
 */
import type { Flow, ModelConfigT, RunEvent } from '@switchboard/schemas';
import { RequestResolver, type ResolvedRequest } from '@switchboard/schemas/core';
import type { ChatMessage, ModelResponse, ToolCallRequest } from '../models/types.js';
import { argsHash } from '../server/journaled-tools.js';
import type { JournalCall } from '../store/tool-journal.js';
import { sanitizeName } from '../tools/names.js';
import type { ToolResult } from '../tools/types.js';
import { type CanonicalRequest, canonicalRequest, hashOf, toolKey } from './canonical.js';
import {
  CASSETTE_FORMAT,
  CASSETTE_VERSION,
  type Cassette,
  type CassetteModelCall,
  type CassetteTool,
  type CassetteToolCall,
} from './file.js';

export interface RunLog {
  /** The flow as it was run (the run's spec). */
  flow: Flow;
  input: unknown;
  events: readonly RunEvent[];
  /** The run's tool journal (`tools.jsonl`), when it has one. */
  journal?: readonly JournalCall[];
}

/** Why a log cannot make a faithful cassette (e.g. redacted secrets), one line each. */
export interface LogCassette {
  cassette: Cassette;
  warnings: string[];
  /** The log position of each of `cassette.models`: the seq, run id and turn of its `model.request`. */
  requests: Array<{ seq: number; runId: string; turn: number }>;
}

type ModelErrorCodeT = NonNullable<CassetteModelCall['error']>['code'];

const MODEL_ERRORS = new Set<string>([
  'rate_limited',
  'server_error',
  'timeout',
  'network',
  'bad_response',
  'stream_interrupted',
  'length',
  'cancelled',
  'auth',
  'bad_request',
  'script_exhausted',
]);

/** The messages of a resolved request as the provider received them. */
function chatMessages(r: ResolvedRequest): ChatMessage[] {
  return r.messages.map((m) => {
    const out: Record<string, unknown> = { role: m.role, content: m.content };
    if (m.name !== undefined) out.name = m.name;
    if (m.toolCallId !== undefined) out.toolCallId = m.toolCallId;
    if (m.toolCalls !== undefined) out.toolCalls = m.toolCalls.map((c) => ({ ...c }));
    return out as unknown as ChatMessage;
  });
}

/**
 * The recorder's canonical request for a logged one. The model's config comes from the flow the
 * run ran (as the recorder had it); the event's own description is the fallback.
 */
export function canonicalFromLog(flow: Flow, r: ResolvedRequest): CanonicalRequest {
  const models = flow.models as Record<string, ModelConfigT>;
  let config: ModelConfigT | undefined = Object.hasOwn(models, r.model) ? models[r.model] : undefined;
  if (!config) {
    const c: Record<string, unknown> = { provider: r.provider ?? 'openai' };
    if (r.modelId !== undefined) c.model = r.modelId;
    if (typeof r.params?.temperature === 'number') c.temperature = r.params.temperature;
    if (typeof r.params?.maxTokens === 'number') c.maxTokens = r.params.maxTokens;
    config = c as unknown as ModelConfigT;
  }
  const req: Parameters<typeof canonicalRequest>[2] = {
    nodeId: r.nodeId,
    messages: chatMessages(r),
    signal: undefined as unknown as AbortSignal,
  };
  if (r.tools && r.tools.length > 0)
    req.tools = r.tools.map((t) => ({
      name: t.name,
      description: t.description ?? '',
      parameters: (t.parameters ?? {}) as Record<string, unknown>,
    }));
  if (r.responseFormat)
    req.jsonSchema = {
      name: r.responseFormat.name,
      schema: (r.responseFormat.schema ?? {}) as Record<string, unknown>,
      ...(r.responseFormat.strict === undefined ? {} : { strict: r.responseFormat.strict }),
    };
  return canonicalRequest(r.model, config, req);
}

/**
 * The host's tools granted to `agent`, among the tools a request offered: all but the ones the
 * engine adds itself (delegation `ask_…` and `handover_to_…`). The MCP host names a tool
 * `<toolNodeId>__<tool>`, which tells its tool node; a host that names them otherwise is given
 * the agent's one tool node (or the first).
 */
function hostTools(flow: Flow, agent: string, r: ResolvedRequest): CassetteTool[] {
  const grants: Array<{ prefix: string; toolNodeId: string; server: string }> = [];
  const engine = new Set<string>();
  const safe = (id: string) => id.replace(/[^A-Za-z0-9_-]/g, '_');
  for (const e of flow.edges) {
    if (e.source === agent && e.kind === 'delegate') {
      const cfg = (e.config ?? {}) as { toolName?: unknown };
      engine.add(typeof cfg.toolName === 'string' ? cfg.toolName : `ask_${safe(e.target)}`.slice(0, 64));
    } else if (e.source === agent) engine.add(`handover_to_${safe(e.target)}`.slice(0, 64));
    if (e.kind !== 'tools' || e.target !== agent) continue;
    const node = flow.nodes.find((n) => n.id === e.source);
    if (node?.kind !== 'tool') continue;
    grants.push({
      prefix: `${sanitizeName(node.id)}__`,
      toolNodeId: node.id,
      server: String((node.config as Record<string, unknown>).server ?? ''),
    });
  }
  if (grants.length === 0) return [];
  // The longest prefix first: tool node `a` must not claim the tools of tool node `a__b`.
  grants.sort((a, b) => b.prefix.length - a.prefix.length);
  const out: CassetteTool[] = [];
  for (const t of r.tools ?? []) {
    if (engine.has(t.name)) continue;
    const g = grants.find((x) => t.name.startsWith(x.prefix));
    const grant = g ?? grants[grants.length - 1]!;
    out.push({
      name: t.name,
      description: t.description ?? '',
      inputSchema: (t.parameters ?? { type: 'object' }) as Record<string, unknown>,
      toolNodeId: grant.toolNodeId,
      server: grant.server,
      remoteName: g ? t.name.slice(g.prefix.length) : t.name,
    });
  }
  return out;
}

interface Open {
  entry: CassetteModelCall;
  /** How many messages the request sent: the reply is appended after them. */
  sent: number;
  turn: number;
  attempt: number;
}

interface Answered {
  entry: CassetteModelCall;
  sent: number;
}

export function cassetteFromLog(log: RunLog): LogCassette {
  const { flow, events } = log;
  const warnings: string[] = [];
  const resolver = new RequestResolver();
  const models: CassetteModelCall[] = [];
  const requests: LogCassette['requests'] = [];
  const tools: CassetteToolCall[] = [];
  const toolSets = new Map<string, CassetteTool[]>();
  const scripted = new Map<string, boolean>();
  const open = new Map<string, Open>();
  const answered = new Map<string, Answered>();
  const calls = new Map<string, CassetteToolCall>();
  // Full tool results from the journal, per tool name and arguments, in call order.
  const journal = new Map<string, Array<JournalCall['done']>>();
  for (const c of log.journal ?? []) {
    if (!c.done) continue;
    const k = `${c.intent.tool}\u0000${c.intent.args}`;
    const list = journal.get(k);
    if (list) list.push(c.done);
    else journal.set(k, [c.done]);
  }
  const runScripted = events.some((e) => (e as { scripted?: unknown }).scripted === true);

  const fail = (o: Open, code: string, message: string) => {
    o.entry.error = {
      code: (MODEL_ERRORS.has(code) ? code : 'bad_response') as ModelErrorCodeT,
      message,
      attempts: 1,
    };
  };

  for (const e of events) {
    const key = `${e.runId}\u0000${e.nodeId ?? ''}`;
    switch (e.type) {
      case 'model.request': {
        const r = resolver.add(e)!;
        const o = open.get(key);
        // A request while one is open: the provider asking again with corrections appended (the
        // same provider call, keyed by its first request), unless it is a new attempt.
        if (o && o.turn === e.turn && o.attempt === e.attempt) break;
        if (o) {
          fail(o, 'server_error', `the recorded call of node "${e.nodeId}" failed`);
          open.delete(key);
        }
        const prev = answered.get(key);
        if (prev) {
          const m = r.messages[prev.sent];
          if (m?.role === 'assistant' && m.content === prev.entry.response!.text && !m.missing)
            prev.entry.response!.toolCalls = (m.toolCalls ?? []).map((c) => ({ ...c }));
          answered.delete(key);
        }
        if (r.redacted?.length)
          warnings.push(
            `model.request seq ${e.seq} (node "${e.nodeId}") had ${r.redacted.join(', ')} redacted: its key cannot match a replay`,
          );
        if (r.messages.some((m) => m.missing))
          warnings.push(`model.request seq ${e.seq} (node "${e.nodeId}") refers to messages the log lacks`);
        const request = canonicalFromLog(flow, r);
        const entry: CassetteModelCall = { key: hashOf(request), nodeId: r.nodeId, request };
        models.push(entry);
        requests.push({ seq: e.seq, runId: e.runId, turn: e.turn });
        open.set(key, { entry, sent: r.messages.length, turn: e.turn, attempt: e.attempt });
        if (!scripted.has(e.model)) scripted.set(e.model, runScripted);
        if (e.nodeId && !toolSets.has(e.nodeId)) {
          const set = hostTools(flow, e.nodeId, r);
          if (set.length > 0) toolSets.set(e.nodeId, set);
        }
        break;
      }
      case 'model.delta': {
        const o = open.get(key);
        if (!o) break;
        o.entry.deltas ??= [];
        o.entry.deltas.push(e.text);
        break;
      }
      case 'model.retry': {
        const o = open.get(key);
        if (!o) break;
        o.entry.retries ??= [];
        o.entry.retries.push({ attempt: e.attempt, delayMs: e.delayMs, cause: e.cause });
        break;
      }
      case 'model.completed': {
        const o = open.get(key);
        if (!o) break;
        const response: ModelResponse = {
          text: e.text,
          toolCalls: [],
          usage: e.usage ?? { promptTokens: 0, completionTokens: 0 },
          finishReason: e.finishReason ?? 'stop',
          model: e.model ?? o.entry.request.params.model,
        };
        o.entry.response = response;
        open.delete(key);
        answered.set(key, { entry: o.entry, sent: o.sent });
        break;
      }
      case 'node.failed': {
        const o = open.get(key);
        if (o) {
          fail(o, e.error.code, e.error.message);
          open.delete(key);
        }
        break;
      }
      case 'tool.called':
      case 'tool.denied': {
        // Until the node's next request shows the raw arguments, the calls as the events give them.
        const a = answered.get(key);
        if (a) {
          const args = e.type === 'tool.called' ? e.args : {};
          const call: ToolCallRequest = { id: e.callId, name: e.tool, arguments: JSON.stringify(args ?? {}) };
          a.entry.response!.toolCalls.push(call);
        }
        if (e.type !== 'tool.called' || !e.nodeId) break;
        if (!(toolSets.get(e.nodeId) ?? []).some((t) => t.name === e.tool)) break;
        const args = (e.args ?? {}) as Record<string, unknown>;
        const t: CassetteToolCall = { key: toolKey(e.tool, args), agent: e.nodeId, tool: e.tool, args };
        tools.push(t);
        calls.set(`${e.runId}\u0000${e.callId}`, t);
        break;
      }
      case 'tool.result': {
        const t = calls.get(`${e.runId}\u0000${e.callId}`);
        if (!t) break;
        const full = journal.get(`${t.tool}\u0000${argsHash(t.args)}`)?.shift();
        t.result = full
          ? (structuredClone(full.result) as ToolResult)
          : {
              content: typeof e.result === 'string' ? e.result : JSON.stringify(e.result),
              isError: e.isError,
            };
        if (!full && log.journal)
          warnings.push(
            `tool.result seq ${e.seq}: no journal entry for ${t.tool}; the event's (clipped) result is used`,
          );
        break;
      }
    }
  }
  for (const o of open.values()) fail(o, 'cancelled', 'the recorded run ended during this call');

  const answers = new Map<string, string[]>();
  for (const e of events)
    if (e.type === 'input.received' && e.nodeId && !e.parentRunId) {
      const list = answers.get(e.nodeId) ?? [];
      list.push(e.answer);
      answers.set(e.nodeId, list);
    }
  const end = events.findLast((e) => !e.parentRunId && e.type.startsWith('run.') && e.type !== 'run.started');
  const result: Cassette['result'] = { status: 'unknown' };
  if (end?.type === 'run.completed') {
    result.status = 'completed';
    if (end.output !== undefined) result.output = end.output;
  } else if (end?.type === 'run.failed') {
    result.status = 'failed';
    result.error = { code: end.error.code, message: end.error.message };
  } else if (end?.type === 'run.cancelled') result.status = 'cancelled';
  else if (end) result.status = end.type.slice('run.'.length);

  const cassette: Cassette = {
    format: CASSETTE_FORMAT,
    version: CASSETTE_VERSION,
    recordedAt: new Date().toISOString(),
    flow,
    input: log.input,
    scripted: Object.fromEntries(scripted),
    // Every entry has a response or an error by now (calls cut short are errors).
    models,
    toolSets: [...toolSets].map(([agent, list]) => ({ agent, tools: list })),
    tools: tools.filter((t) => t.result || t.error),
    events: [...events],
    result,
  };
  if (answers.size > 0) cassette.answers = Object.fromEntries(answers);
  return { cassette, warnings, requests };
}
