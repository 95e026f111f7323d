/**
 * Reading `model.request` events back into the messages that were sent. Browser-safe: the editor's
 * trace and the server's tests use the same resolver.
 *
 * How a request is stored (written by the runtime's request recorder):
 * - a message body of `INLINE_MAX` characters or fewer is inline (`content`, no `h`);
 * - a longer one carries `h`, its content address (CONTENT_HASH), and its `content` only the first
 *   time the log holds that address: later requests carry the address alone;
 * - a run of messages that an earlier request sent too is a reference `{ ref, from, count }`:
 *   `count` messages from index `from` of the (resolved) messages of the request at seq `ref`,
 *   so a conversation of 100 turns does not write its history 100 times;
 * - tools and the response format are stored once per address the same way.
 * A reader must see the log from its start (or from a request that carries everything it needs).
 */
import type { EventOf, RequestMessageT, RequestRefT, RunEvent } from './events.js';

/** Bodies up to this many characters are always inline: an address would be as long. */
export const INLINE_MAX = 64;
/** The content address: the first 16 hex digits of the SHA-256 of the body's UTF-8 bytes. */
export const CONTENT_HASH = 'sha256/16';

export interface ResolvedToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A message as it was sent; `content` is undefined only when the log lacks its body (`missing`). */
export interface ResolvedMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  name?: string;
  toolCallId?: string;
  toolCalls?: ResolvedToolCall[];
  /** True when the body's address was never given a content in the log read so far. */
  missing?: true;
}

export interface ResolvedRequest {
  seq: number;
  nodeId: string;
  turn: number;
  attempt: number;
  call: number;
  model: string;
  provider?: string;
  modelId?: string;
  params?: Record<string, unknown>;
  messages: ResolvedMessage[];
  tools?: Array<{ name: string; description?: string; parameters?: unknown }>;
  responseFormat?: { type: 'json_schema'; name: string; schema?: unknown; strict?: boolean };
  redacted?: string[];
}

type RequestEvent = EventOf<'model.request'>;

function isRef(m: RequestMessageT | RequestRefT): m is RequestRefT {
  return (m as RequestRefT).ref !== undefined;
}

/**
 * Resolves the `model.request` events of one log, fed in seq order. Keeps every body it has seen
 * (by address) and the resolved messages of every request (sharing message objects).
 */
export class RequestResolver {
  private readonly bodies = new Map<string, string>();
  private readonly specs = new Map<
    string,
    { description?: string; parameters?: unknown; schema?: unknown }
  >();
  private readonly resolved = new Map<number, ResolvedRequest>();

  /** Feeds one event (others are ignored); returns the resolved request for a `model.request`. */
  add(e: RunEvent): ResolvedRequest | undefined {
    if (e.type !== 'model.request') return undefined;
    const known = this.resolved.get(e.seq);
    if (known) return known;
    const r = this.resolve(e);
    this.resolved.set(e.seq, r);
    return r;
  }

  /** Feeds a whole log (or a prefix of it). */
  addAll(events: Iterable<RunEvent>): this {
    for (const e of events) this.add(e);
    return this;
  }

  get(seq: number): ResolvedRequest | undefined {
    return this.resolved.get(seq);
  }

  private body(h: string | undefined, content: string | undefined): { content: string; missing?: true } {
    if (h === undefined) return { content: content ?? '' };
    if (content !== undefined) {
      if (!this.bodies.has(h)) this.bodies.set(h, content);
      return { content };
    }
    const known = this.bodies.get(h);
    return known === undefined ? { content: '', missing: true } : { content: known };
  }

  private resolve(e: RequestEvent): ResolvedRequest {
    const messages: ResolvedMessage[] = [];
    for (const m of e.messages) {
      if (isRef(m)) {
        const base = this.resolved.get(m.ref);
        const slice = base?.messages.slice(m.from, m.from + m.count) ?? [];
        for (const x of slice) messages.push(x);
        // A reference to a request this reader never saw: say so instead of inventing messages.
        for (let i = slice.length; i < m.count; i++)
          messages.push({ role: 'user', content: '', missing: true });
        continue;
      }
      const b = this.body(m.h, m.content);
      const out: ResolvedMessage = { role: m.role, content: b.content };
      if (m.name !== undefined) out.name = m.name;
      if (m.toolCallId !== undefined) out.toolCallId = m.toolCallId;
      if (m.toolCalls !== undefined) out.toolCalls = m.toolCalls.map((c) => ({ ...c }));
      if (b.missing) out.missing = true;
      messages.push(out);
    }
    const r: ResolvedRequest = {
      seq: e.seq,
      nodeId: e.nodeId ?? '',
      turn: e.turn,
      attempt: e.attempt,
      call: e.call,
      model: e.model,
      messages,
    };
    if (e.provider !== undefined) r.provider = e.provider;
    if (e.modelId !== undefined) r.modelId = e.modelId;
    if (e.params !== undefined) r.params = e.params;
    if (e.redacted !== undefined) r.redacted = e.redacted;
    if (e.tools)
      r.tools = e.tools.map((t) => {
        if (t.description !== undefined || t.parameters !== undefined) {
          const spec: { description?: string; parameters?: unknown } = {};
          if (t.description !== undefined) spec.description = t.description;
          if (t.parameters !== undefined) spec.parameters = t.parameters;
          if (!this.specs.has(t.h)) this.specs.set(t.h, spec);
        }
        const spec = this.specs.get(t.h);
        const out: { name: string; description?: string; parameters?: unknown } = { name: t.name };
        if (spec?.description !== undefined) out.description = spec.description;
        if (spec?.parameters !== undefined) out.parameters = spec.parameters;
        return out;
      });
    if (e.responseFormat) {
      const f = e.responseFormat;
      if (f.schema !== undefined && !this.specs.has(f.h)) this.specs.set(f.h, { schema: f.schema });
      const schema = this.specs.get(f.h)?.schema;
      r.responseFormat = {
        type: f.type,
        name: f.name,
        ...(schema === undefined ? {} : { schema }),
        ...(f.strict === undefined ? {} : { strict: f.strict }),
      };
    }
    return r;
  }
}

/** The full request at `seq`, read from a log that holds it (and everything it refers to). */
export function resolveModelRequest(events: readonly RunEvent[], seq: number): ResolvedRequest | undefined {
  const r = new RequestResolver();
  for (const e of events) {
    if (e.seq > seq) break;
    r.add(e);
  }
  return r.get(seq);
}

/** Every request of a log, resolved, in seq order. */
export function resolveModelRequests(events: readonly RunEvent[]): ResolvedRequest[] {
  const r = new RequestResolver();
  const out: ResolvedRequest[] = [];
  for (const e of events) {
    const x = r.add(e);
    if (x) out.push(x);
  }
  return out;
}
