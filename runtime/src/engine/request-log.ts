/**
 * Builds the `model.request` event of each model call: what was sent, stored compactly and with
 * secrets redacted. The storage rules (inline short bodies, content addresses, references to the
 * messages of an earlier request) are described with the reader, `schemas/src/model-request.ts`.
 *
 * One recorder per run (nested runs share it: they write to the same log, in one seq space).
 * What it remembers is only an optimisation: a recorder that forgot everything (a resumed run in
 * a new process) writes self-contained requests.
 */
import { createHash } from 'node:crypto';
import type { ChatMessage, ModelCall } from '@switchboard/nodes/core';
import type { ModelConfigT, RequestMessageT, RequestRefT, RequestToolT } from '@switchboard/schemas';
import { INLINE_MAX } from '@switchboard/schemas/core';

/** How many nodes' last requests are kept as reference candidates (a chain of 10,000 keeps this many). */
const RECENT_NODES = 64;
/** A run of fewer common messages is written out rather than referenced. */
const MIN_REF = 2;

interface Sent {
  seq: number;
  messages: readonly ChatMessage[];
  /** The list's length when it was sent: behaviours append to it afterwards. */
  length: number;
}

export interface RequestContext {
  nodeId: string;
  turn: number;
  attempt: number;
  call: number;
  model: string;
}

const NO_REDACTIONS: Set<string> = new Set<string>();

const PARAM_KEYS = ['temperature', 'maxTokens', 'timeoutMs', 'maxRetries'] as const;

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

function sameCalls(a: ChatMessage, b: ChatMessage): boolean {
  const x = (a as { toolCalls?: ChatMessage[] }).toolCalls as
    | Array<{ id: string; name: string; arguments: string }>
    | undefined;
  const y = (b as { toolCalls?: unknown }).toolCalls as typeof x;
  if (x === y) return true;
  if (!x || !y || x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++)
    if (x[i]!.id !== y[i]!.id || x[i]!.name !== y[i]!.name || x[i]!.arguments !== y[i]!.arguments)
      return false;
  return true;
}

function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  if (a === b) return true;
  return (
    a.role === b.role &&
    a.content === b.content &&
    (a as { name?: string }).name === (b as { name?: string }).name &&
    (a as { toolCallId?: string }).toolCallId === (b as { toolCallId?: string }).toolCallId &&
    sameCalls(a, b)
  );
}

export class RequestRecorder {
  /** Raw body → its address, for bodies the log already holds with their content. */
  private readonly written = new Map<string, string>();
  private readonly specs = new Set<string>();
  private last: Sent | undefined;
  private readonly byNode = new Map<string, Sent>();
  private readonly models = new Map<string, Record<string, unknown>>();
  /** Longest value first: a secret containing another is replaced whole. */
  private readonly secrets: Array<{ value: string; name: string; marker: string }>;

  constructor(
    private readonly configs: Readonly<Record<string, ModelConfigT>>,
    secrets: ReadonlyMap<string, string>,
  ) {
    this.secrets = [...secrets].map(([name, value]) => ({ value, name, marker: `[redacted:${name}]` }));
    this.secrets.sort((a, b) => b.value.length - a.value.length);
  }

  /** The event's fields (without the envelope); `sent` is called with its seq once emitted. */
  build(ctx: RequestContext, call: ModelCall): Record<string, unknown> {
    const e: Record<string, unknown> = {
      type: 'model.request',
      nodeId: ctx.nodeId,
      turn: ctx.turn,
      attempt: ctx.attempt,
      call: ctx.call,
      model: ctx.model,
    };
    const desc = this.describe(ctx.model);
    if (desc.provider !== undefined) e.provider = desc.provider;
    if (desc.modelId !== undefined) e.modelId = desc.modelId;
    if (desc.params !== undefined) e.params = desc.params;
    // Filled only by redact(), which runs only when the flow names secrets.
    const redacted = this.secrets.length > 0 ? new Set<string>() : NO_REDACTIONS;
    if (call.tools && call.tools.length > 0) e.tools = call.tools.map((t) => this.tool(t, redacted));
    if (call.jsonSchema) {
      const text = JSON.stringify(call.jsonSchema.schema);
      const h = hash(text);
      const f: Record<string, unknown> = { type: 'json_schema', name: call.jsonSchema.name, h };
      if (call.jsonSchema.strict !== undefined) f.strict = call.jsonSchema.strict;
      if (!this.specs.has(h)) {
        this.specs.add(h);
        f.schema = call.jsonSchema.schema;
      }
      e.responseFormat = f;
    }
    e.messages = this.messages(ctx.nodeId, call.messages, redacted);
    if (redacted.size > 0) e.redacted = [...redacted];
    return e;
  }

  /** Remembers what a request sent, once its event has a seq (it was not dropped). */
  sent(nodeId: string, seq: number, messages: readonly ChatMessage[]): void {
    const s: Sent = { seq, messages, length: messages.length };
    this.last = s;
    this.byNode.delete(nodeId);
    this.byNode.set(nodeId, s);
    if (this.byNode.size > RECENT_NODES) this.byNode.delete(this.byNode.keys().next().value!);
  }

  private describe(model: string): { provider?: string; modelId?: string; params?: Record<string, unknown> } {
    let d = this.models.get(model);
    if (!d) {
      d = Object.create(null) as Record<string, unknown>;
      const c = Object.hasOwn(this.configs, model) ? this.configs[model] : undefined;
      if (c) {
        d.provider = c.provider;
        if (c.model !== undefined) d.modelId = c.model;
        const params: Record<string, unknown> = {};
        let any = false;
        for (const k of PARAM_KEYS)
          if (c[k] !== undefined) {
            params[k] = c[k];
            any = true;
          }
        if (any) d.params = params;
      }
      this.models.set(model, d);
    }
    return d;
  }

  private redact(text: string, used: Set<string>): string {
    let out = text;
    for (let i = 0; i < this.secrets.length; i++) {
      const { value, name, marker } = this.secrets[i]!;
      if (out.includes(value)) {
        out = out.split(value).join(marker);
        used.add(name);
      }
    }
    return out;
  }

  private tool(
    t: { name: string; description: string; parameters: Record<string, unknown> },
    redacted: Set<string>,
  ) {
    const description = this.secrets.length > 0 ? this.redact(t.description, redacted) : t.description;
    const h = hash(`${t.name}\u0000${description}\u0000${JSON.stringify(t.parameters)}`);
    const out: RequestToolT = { name: t.name, h };
    if (!this.specs.has(h)) {
      this.specs.add(h);
      out.description = description;
      out.parameters = t.parameters;
    }
    return out;
  }

  /** The best earlier request to refer to, and how many of its messages `messages` starts with (after a leading system message). */
  private base(
    nodeId: string,
    messages: readonly ChatMessage[],
  ): { s: Sent; from: number; at: number; n: number } | undefined {
    let best: { s: Sent; from: number; at: number; n: number } | undefined;
    const at = messages.length > 0 && messages[0]!.role === 'system' ? 1 : 0;
    const own = this.byNode.get(nodeId);
    for (let c = 0; c < 2; c++) {
      const s = c === 0 ? own : this.last;
      if (!s || (c === 1 && s === own)) continue;
      const from = s.length > 0 && s.messages[0]!.role === 'system' ? 1 : 0;
      let n = 0;
      while (
        at + n < messages.length &&
        from + n < s.length &&
        sameMessage(messages[at + n]!, s.messages[from + n]!)
      )
        n++;
      if (n >= MIN_REF && (!best || n > best.n)) best = { s, from, at, n };
    }
    return best;
  }

  private messages(
    nodeId: string,
    messages: readonly ChatMessage[],
    redacted: Set<string>,
  ): Array<RequestMessageT | RequestRefT> {
    const out: Array<RequestMessageT | RequestRefT> = [];
    const b = this.base(nodeId, messages);
    for (let i = 0; i < messages.length; i++) {
      if (b && i === b.at) {
        out.push({ ref: b.s.seq, from: b.from, count: b.n });
        i += b.n - 1;
        continue;
      }
      out.push(this.message(messages[i]!, redacted));
    }
    return out;
  }

  private message(m: ChatMessage, redacted: Set<string>): RequestMessageT {
    const out: RequestMessageT = { role: m.role };
    const name = (m as { name?: string }).name;
    if (name !== undefined) out.name = name;
    if (m.role === 'tool') out.toolCallId = m.toolCallId;
    if (m.role === 'assistant' && m.toolCalls !== undefined)
      out.toolCalls = m.toolCalls.map((c) => ({
        id: c.id,
        name: c.name,
        arguments: this.secrets.length > 0 ? this.redact(c.arguments, redacted) : c.arguments,
      }));
    const raw = m.content;
    const known = this.written.get(raw);
    if (known !== undefined) {
      out.h = known;
      return out;
    }
    const content = this.secrets.length > 0 ? this.redact(raw, redacted) : raw;
    if (content.length <= INLINE_MAX) {
      out.content = content;
      return out;
    }
    const h = hash(content);
    out.h = h;
    out.content = content;
    this.written.set(raw, h);
    return out;
  }
}

/**
 * The secrets a run's flow refers to: every `${env:NAME}` in the flow whose variable is set
 * (to 4 characters or more: shorter values are no secret and would be redacted everywhere).
 */
export function flowSecrets(
  flow: object,
  env: Readonly<Record<string, string | undefined>>,
): Map<string, string> {
  let names = envNames.get(flow);
  if (!names) {
    names = referencedEnv(flow);
    envNames.set(flow, names);
  }
  const out = new Map<string, string>();
  for (const n of names) {
    const value = Object.hasOwn(env, n) ? env[n] : undefined;
    if (typeof value === 'string' && value.length >= 4) out.set(n, value);
  }
  return out;
}

/** The variables a flow names, per flow object: a host runs the same flow object many times. */
const envNames = new WeakMap<object, ReadonlySet<string>>();

function referencedEnv(flow: object): Set<string> {
  const names = new Set<string>();
  const stack: unknown[] = [flow];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (v.includes('${env:'))
        for (const m of v.matchAll(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g)) names.add(m[1]!);
    } else if (Array.isArray(v)) for (const x of v) stack.push(x);
    else if (v !== null && typeof v === 'object') for (const x of Object.values(v)) stack.push(x);
  }
  return names;
}
