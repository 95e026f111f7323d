/**
 * One agent turn: assemble the system prompt from conditional, templated segments; build the
 * messages under the memory policy; run tool rounds; validate structured output and re-prompt
 * with the error. Malformed tool calls (bad JSON, wrong types, unknown or ungranted tools,
 * oversized arguments) are never executed and never written back into the history: the model
 * gets a structured error instead, and after a bounded number of repairs the turn fails. The
 * good calls of a reply that come before its first malformed one still run; those after it do
 * not, since a call may depend on what the calls before it did.
 */
import type { Static } from '@sinclair/typebox';
import { type ConditionT, checkAgainstSchema, type Dict, dict } from '@switchboard/schemas/core';
import { evaluateCondition } from '../../lib/condition.js';
import { renderTemplate, templateHeads } from '../../lib/template.js';
import {
  type ChatMessage,
  type ConditionContext,
  type FlowBehavior,
  type InboxItem,
  type Message,
  type ModelPort,
  type ModelReply,
  type NodeContext,
  NodeError,
  type StepOutcome,
  type ToolCallRequest,
  type ToolOutcome,
  type ToolPort,
  type ToolSpec,
} from '../../runtime-api.js';
import type { AgentConfig } from './index.js';
import { reaskText } from './no-handover.js';

type AgentConfigT = Static<typeof AgentConfig>;

/** Tool-call arguments above this size are refused unread. */
export const MAX_TOOL_ARGS_BYTES = 64 * 1024;
/** Structured output above this size is refused unparsed. */
export const MAX_OUTPUT_CHARS = 1024 * 1024;
export const DEFAULT_TOOL_ROUNDS = 4;
export const DEFAULT_TOOL_REPAIRS = 2;
/** Tool calls run per turn (config.maxToolCalls); the calls beyond are refused, each with an event. */
export const DEFAULT_MAX_TOOL_CALLS = 32;
export const DEFAULT_OUTPUT_REPAIRS = 2;
/** Re-asks of an agent that could hand over along several edges and chose none. */
export const DEFAULT_HANDOVER_REASKS = 1;

export interface CallProblem {
  callId: string;
  tool: string;
  error:
    | 'not_granted'
    | 'arguments_too_large'
    | 'arguments_not_json'
    | 'arguments_not_object'
    | 'arguments_invalid'
    | 'no_more_tool_rounds'
    | 'no_tools'
    | 'over_tool_call_cap'
    | 'not_run_after_invalid_call';
  detail: string;
}

/** The verdict on the calls of one reply. */
export interface CheckedCalls {
  /** Parsed arguments of the calls that may run: every call before the first invalid one. */
  args: Record<string, unknown>[];
  /** The invalid calls, and the valid calls after the first invalid one (they do not run). */
  problems: CallProblem[];
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

/**
 * Checks every call of one reply (each invalid one is reported, each ungranted one denied).
 * The calls before the first invalid one may run; a valid call after it is reported as not run.
 */
export function checkToolCalls(
  calls: readonly ToolCallRequest[],
  granted: ReadonlyMap<string, ToolPort>,
  onDenied: (call: ToolCallRequest, reason: string) => void,
): CheckedCalls {
  const problems: CallProblem[] = [];
  const args: Record<string, unknown>[] = [];
  let firstBad: string | undefined;
  for (const call of calls) {
    const before = problems.length;
    const parsed = checkCall(call, granted, onDenied, problems);
    if (problems.length > before) {
      firstBad ??= problems[before]!.callId;
      continue;
    }
    if (firstBad === undefined) args.push(parsed!);
    else
      problems.push({
        callId: clip(String(call.id), 64),
        tool: clip(String(call.name), 64),
        error: 'not_run_after_invalid_call',
        detail: `not run: call "${firstBad}" before it is invalid, and a call may depend on the ones before it; make it again if it is still needed`,
      });
  }
  return { args, problems };
}

/** One call's parsed arguments, or a problem pushed to `problems` (and undefined). */
function checkCall(
  call: ToolCallRequest,
  granted: ReadonlyMap<string, ToolPort>,
  onDenied: (call: ToolCallRequest, reason: string) => void,
  problems: CallProblem[],
): Record<string, unknown> | undefined {
  const tool = clip(String(call.name), 64);
  const callId = clip(String(call.id), 64);
  const port = granted.get(call.name);
  if (!port) {
    const reason = `tool "${tool}" is not granted to this agent`;
    onDenied(call, reason);
    problems.push({
      callId,
      tool,
      error: 'not_granted',
      detail: `${reason}; available: ${[...granted.keys()].join(', ') || 'none'}`,
    });
    return undefined;
  }
  const raw = typeof call.arguments === 'string' ? call.arguments : '';
  if (raw.length > MAX_TOOL_ARGS_BYTES) {
    problems.push({
      callId,
      tool,
      error: 'arguments_too_large',
      detail: `arguments are ${raw.length} characters; the limit is ${MAX_TOOL_ARGS_BYTES}`,
    });
    return undefined;
  }
  let parsed: unknown;
  try {
    parsed = raw.trim() === '' ? {} : JSON.parse(raw);
  } catch {
    // The parser's message may quote the input; the model gets a fixed sentence instead.
    problems.push({
      callId,
      tool,
      error: 'arguments_not_json',
      detail: 'the arguments are not valid JSON',
    });
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    problems.push({
      callId,
      tool,
      error: 'arguments_not_object',
      detail: 'the arguments must be a JSON object',
    });
    return undefined;
  }
  const check = checkAgainstSchema(port.parameters, parsed);
  if (!check.valid) {
    problems.push({
      callId,
      tool,
      error: 'arguments_invalid',
      detail: check.errors.slice(0, 5).join('; '),
    });
    return undefined;
  }
  return parsed as Record<string, unknown>;
}

/** Parses structured output: a JSON value, optionally inside a ```json fence. */
export function parseJsonOutput(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  if (text.length > MAX_OUTPUT_CHARS)
    return { ok: false, error: `the answer is longer than ${MAX_OUTPUT_CHARS} characters` };
  let t = text.trim();
  const fence = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/.exec(t);
  if (fence) t = fence[1]!.trim();
  try {
    return { ok: true, value: JSON.parse(t) };
  } catch {
    return { ok: false, error: 'the answer is not valid JSON' };
  }
}

function toChat(m: Message, self: string): ChatMessage {
  if (m.author === self) return { role: 'assistant', content: m.content };
  return m.author === 'user'
    ? { role: 'user', content: m.content }
    : { role: 'user', content: m.content, name: m.author };
}

/** Pending inbox items as one text ('' when there are none, without building anything). */
function inboxText(items: readonly InboxItem[]): string {
  if (items.length === 0) return '';
  if (items.length === 1) return items[0]!.text;
  return items.map((i) => i.text).join('\n\n');
}

/** What `{{…}}` placeholders of a prompt may read; each is computed when a placeholder names it. */
const PROMPT_FIELDS: Readonly<Record<string, (ctx: NodeContext<AgentConfigT>) => unknown>> = {
  task: (ctx) => ctx.run.task,
  input: (ctx) => ctx.run.input,
  summary: (ctx) => ctx.run.summary()?.text ?? '',
  inbox: (ctx) => inboxText(ctx.inbox),
  last: (ctx) => {
    const t = ctx.run.transcript;
    return t[t.length - 1]?.content ?? '';
  },
  state: (ctx) => ctx.run.state.snapshot(),
  node: (ctx) => ({ id: ctx.node.id, label: ctx.node.label }),
};

/** The system prompt: segments whose condition holds, rendered, joined by blank lines. */
export function buildSystemPrompt(ctx: NodeContext<AgentConfigT>): string {
  // Conditions, and each field of the template context, are made on first need: most prompts
  // have no conditions and read a field or two (`{{task}}`).
  let cond: ConditionContext | undefined;
  let tctx: Dict<unknown> | undefined;
  let out = '';
  const segments = ctx.node.config.prompt;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg.when !== undefined) {
      cond ??= ctx.conditions();
      if (!evaluateCondition(seg.when as ConditionT, cond)) continue;
    }
    let text = seg.text;
    if (text.includes('{{')) {
      tctx ??= dict();
      const heads = templateHeads(text);
      for (let k = 0; k < heads.length; k++) {
        const h = heads[k]!;
        if (!Object.hasOwn(tctx, h) && Object.hasOwn(PROMPT_FIELDS, h)) tctx[h] = PROMPT_FIELDS[h]!(ctx);
      }
      text = renderTemplate(text, tctx);
    }
    out = out === '' ? text : `${out}\n\n${text}`;
  }
  return out;
}

export function buildMessages(ctx: NodeContext<AgentConfigT>): ChatMessage[] {
  const memory = ctx.node.config.memory ?? 'transcript';
  const system: ChatMessage = { role: 'system', content: buildSystemPrompt(ctx) };
  const summary = memory === 'summary' ? ctx.run.summary() : undefined;
  const view = ctx.run.view(memory);
  const inbox = ctx.inbox;
  // Allocated at its final length: pushing onto a one-element array reallocates it, every turn.
  const n = 1 + (summary ? 1 : 0) + view.length + (inbox.length > 0 ? 1 : 0);
  const messages = new Array<ChatMessage>(n === 1 ? 2 : n);
  let k = 0;
  messages[k++] = system;
  if (summary)
    messages[k++] = { role: 'user', content: `Summary of the conversation so far:\n${summary.text}` };
  for (let i = 0; i < view.length; i++) messages[k++] = toChat(view[i]!, ctx.node.id);
  if (inbox.length > 0) messages[k++] = { role: 'user', content: inboxText(inbox) };
  if (k === 1) messages[k++] = { role: 'user', content: ctx.run.task };
  return messages;
}

/**
 * The verdict on the calls of one reply, with an event for every call that will not run:
 * `tool.denied` (not granted) or `tool.refused` (why). `granted` is undefined when no tool may be
 * called now; `room` is what is left of the per-turn cap.
 */
function checkReply(
  ctx: NodeContext<AgentConfigT>,
  calls: readonly ToolCallRequest[],
  granted: ReadonlyMap<string, ToolPort> | undefined,
  o: { room: number; maxCalls: number; maxRounds: number; hasTools: boolean },
): CheckedCalls {
  let checked: CheckedCalls;
  if (granted === undefined)
    checked = {
      args: [],
      problems: calls.map((c) => ({
        callId: clip(String(c.id), 64),
        tool: clip(String(c.name), 64),
        ...(o.hasTools
          ? {
              error: 'no_more_tool_rounds' as const,
              detail: `no tool calls are allowed now (${o.maxRounds} rounds used); give your answer`,
            }
          : { error: 'no_tools' as const, detail: 'this agent has no tools; give your answer' }),
      })),
    };
  else {
    const room = Math.max(0, o.room);
    checked = checkToolCalls(calls.slice(0, room), granted, (c, reason) =>
      ctx.emit({
        type: 'tool.denied',
        callId: clip(String(c.id), 64),
        tool: clip(String(c.name), 64),
        reason,
      }),
    );
    for (const c of calls.slice(room))
      checked.problems.push({
        callId: clip(String(c.id), 64),
        tool: clip(String(c.name), 64),
        error: 'over_tool_call_cap',
        detail: `not run: a turn runs at most ${o.maxCalls} tool calls; answer with what you have`,
      });
  }
  for (const p of checked.problems)
    if (p.error !== 'not_granted')
      ctx.emit({ type: 'tool.refused', callId: p.callId, tool: p.tool, error: p.error, reason: p.detail });
  return checked;
}

const NO_TOOLS: readonly ToolPort[] = [];
const NO_GRANTS: ReadonlyMap<string, ToolPort> = new Map();
/** Never offered to a model (tools are offered only when there are some), so never mutated. */
const NO_SPECS: ToolSpec[] = [];

/**
 * Runs the checked calls of one reply. Consecutive delegations run concurrently — they are
 * independent nested runs, e.g. a principal dispatching several associates at once — while
 * every other call waits for the one before it, since a later call may read what an earlier
 * one wrote. Results come back in call order either way.
 */
export async function callTools(
  calls: readonly ToolCallRequest[],
  args: readonly Record<string, unknown>[],
  granted: ReadonlyMap<string, ToolPort>,
): Promise<ToolOutcome[]> {
  const out: ToolOutcome[] = [];
  const isDelegate = (k: number) => granted.get(calls[k]!.name)!.source === 'delegate';
  for (let i = 0; i < calls.length; ) {
    let j = i + 1;
    if (isDelegate(i)) while (j < calls.length && isDelegate(j)) j++;
    const batch = [];
    for (let k = i; k < j; k++) batch.push(granted.get(calls[k]!.name)!.call(args[k]!, calls[k]!.id));
    out.push(...(await Promise.all(batch)));
    i = j;
  }
  return out;
}

/**
 * The general turn: tool rounds, repairs, structured output. `first` is the model's reply to
 * `messages` when the caller already has it (a plain turn whose reply turned out to need more).
 */
async function agentTurn(
  ctx: NodeContext<AgentConfigT>,
  model: ModelPort,
  messages: ChatMessage[],
  first?: ModelReply,
): Promise<StepOutcome> {
  const cfg = ctx.node.config;
  const maxRounds = cfg.toolRounds ?? DEFAULT_TOOL_ROUNDS;
  const maxCalls = cfg.maxToolCalls ?? DEFAULT_MAX_TOOL_CALLS;
  // Most agents have no tools: no await (a microtask per turn) and no per-turn tables for them.
  const tools = maxRounds > 0 && ctx.noTools !== true ? await ctx.tools() : NO_TOOLS;
  let granted: ReadonlyMap<string, ToolPort> = NO_GRANTS;
  let specs = NO_SPECS;
  // The handover tools alone: what a re-ask offers once the tool rounds are spent.
  let handoverGranted: ReadonlyMap<string, ToolPort> = NO_GRANTS;
  let handoverSpecs = NO_SPECS;
  if (tools.length > 0) {
    const g = new Map<string, ToolPort>();
    const sp: ToolSpec[] = [];
    for (const t of tools) {
      g.set(t.name, t);
      sp.push({ name: t.name, description: t.description, parameters: t.parameters });
    }
    granted = g;
    specs = sp;
    if (tools.some((t) => t.source === 'handover')) {
      handoverGranted = new Map([...g].filter(([, t]) => t.source === 'handover'));
      handoverSpecs = sp.filter((x) => handoverGranted.has(x.name));
    }
  }
  const maxReasks = handoverSpecs.length > 0 ? (cfg.noHandover?.reask ?? DEFAULT_HANDOVER_REASKS) : 0;
  let reasks = 0;
  // The answer a re-ask followed: it stays the turn's message when the handover comes after it.
  let answered: { content: string; json?: unknown } | undefined;
  const output = cfg.output?.type === 'json' ? cfg.output : undefined;
  const jsonSchema = output
    ? { name: `${ctx.node.id.replace(/[^A-Za-z0-9_-]/g, '_')}_output`, schema: output.schema }
    : undefined;
  const maxOutputRepairs = output?.maxRepairs ?? DEFAULT_OUTPUT_REPAIRS;
  let rounds = 0;
  let toolRepairs = 0;
  let outputRepairs = 0;
  let toolCalls = 0;
  const handovers: string[] = [];

  for (;;) {
    const withinRounds = rounds < maxRounds;
    const offerSpecs = withinRounds ? specs : answered ? handoverSpecs : NO_SPECS;
    const offerGranted = withinRounds ? granted : answered ? handoverGranted : NO_GRANTS;
    const offer = offerSpecs.length > 0;
    let reply: ModelReply;
    if (first !== undefined) {
      reply = first;
      first = undefined;
    } else {
      const call: Parameters<typeof model.complete>[0] = { messages };
      if (offer) call.tools = offerSpecs;
      if (jsonSchema) call.jsonSchema = jsonSchema;
      reply = await model.complete(call);
    }

    if (reply.toolCalls.length > 0) {
      const checked = checkReply(ctx, reply.toolCalls, offer ? offerGranted : undefined, {
        room: maxCalls - toolCalls,
        maxCalls,
        maxRounds,
        hasTools: specs.length > 0,
      });
      const { problems } = checked;
      if (problems.length > 0 && ++toolRepairs > DEFAULT_TOOL_REPAIRS)
        throw new NodeError(
          'tool_call_invalid',
          `agent "${ctx.node.id}" kept making invalid tool calls (${problems.map((p) => `${p.tool}: ${p.error}`).join(', ')})`,
          toolRepairs,
        );
      // Only the calls that run are written back; a malformed call never enters the history.
      const runnable = reply.toolCalls.slice(0, checked.args.length);
      if (runnable.length > 0) {
        rounds++;
        messages.push({ role: 'assistant', content: reply.text, toolCalls: runnable });
        const results = await callTools(runnable, checked.args, offerGranted);
        for (let i = 0; i < runnable.length; i++) {
          const tc = runnable[i]!;
          const port = offerGranted.get(tc.name)!;
          const res = results[i]!;
          toolCalls++;
          messages.push({ role: 'tool', content: res.content, toolCallId: tc.id });
          if (port.source === 'handover' && port.edgeId && !res.isError) handovers.push(port.edgeId);
        }
      }
      if (handovers.length > 0) {
        const to = handovers.map((e) => ctx.candidates.find((c) => c.edgeId === e)?.label ?? e).join(', ');
        return {
          message: reply.text ? { content: reply.text } : (answered ?? { content: `Handing over to ${to}.` }),
          route: { edges: handovers, reason: 'handover tool' },
          toolCalls,
        };
      }
      if (problems.length > 0)
        messages.push({
          role: 'user',
          content: JSON.stringify({
            error: 'invalid_tool_calls',
            problems,
            instruction:
              runnable.length > 0
                ? `The ${runnable.length} call(s) before the first problem ran; their results are above. The calls listed here did not run. Correct them or answer.`
                : 'No tool was run. Correct the calls or answer without tools.',
          }),
        });
      continue;
    }

    if (output) {
      const parsed = parseJsonOutput(reply.text);
      const errors = parsed.ok ? checkAgainstSchema(output.schema, parsed.value).errors : [parsed.error];
      if (errors.length > 0) {
        outputRepairs++;
        if (outputRepairs > maxOutputRepairs)
          throw new NodeError(
            'output_invalid',
            `agent "${ctx.node.id}" gave no valid structured output after ${outputRepairs} attempts: ${errors.slice(0, 3).join('; ')}`,
            outputRepairs,
          );
        messages.push({ role: 'assistant', content: reply.text.slice(0, 4000) });
        messages.push({
          role: 'user',
          content: `Your answer does not match the required JSON Schema: ${errors.slice(0, 5).join('; ')}. Answer again with JSON only.`,
        });
        continue;
      }
      const message = { content: reply.text, json: (parsed as { value: unknown }).value };
      if (reasks >= maxReasks) return { message, toolCalls };
      answered = message;
    } else if (reasks >= maxReasks) return { message: { content: reply.text }, toolCalls };
    else answered = { content: reply.text };
    // Several handover edges and none chosen: ask again, naming them (no-handover.ts).
    reasks++;
    ctx.emit({
      type: 'handover.missing',
      candidates: ctx.candidates.map((c) => c.edgeId),
      action: 'reask',
      attempt: reasks,
    });
    messages.push({ role: 'assistant', content: reply.text.slice(0, 4000) });
    messages.push({ role: 'user', content: reaskText(ctx.candidates, handoverGranted) });
  }
}

export const agentBehavior: FlowBehavior<AgentConfigT> = {
  type: 'flow',
  run(ctx) {
    try {
      const cfg = ctx.node.config;
      const model = ctx.model(cfg.model);
      const messages = buildMessages(ctx);
      const offersTools = (cfg.toolRounds ?? DEFAULT_TOOL_ROUNDS) > 0 && ctx.noTools !== true;
      if (offersTools || cfg.output?.type === 'json') return agentTurn(ctx, model, messages);
      // A plain turn (nothing to offer, a text answer) is one reaction on the model's reply instead
      // of the general turn's async frame: it is every step of a chain of agents (bench gate e).
      const answered = (reply: ModelReply): StepOutcome | Promise<StepOutcome> =>
        reply.toolCalls.length === 0
          ? { message: { content: reply.text }, toolCalls: 0 }
          : agentTurn(ctx, model, messages, reply);
      const call = { messages };
      return model.completeThen ? model.completeThen(call, answered) : model.complete(call).then(answered);
    } catch (e) {
      return Promise.reject(e);
    }
  },
};
