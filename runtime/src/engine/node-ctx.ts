/**
 * The contexts handed to behaviours: `NodeCtx` for a node's turn (also its RunView), and its
 * observer and team variants. They read the run through, never copy it: one is made per step.
 */
import {
  type BehaviorEvent,
  type Candidate,
  type ConditionContext,
  type Counters,
  type InboxItem,
  type MemoryPolicy,
  type Message,
  type ModelCall,
  type ModelPort,
  type ModelReply,
  memoryView,
  type NodeContext,
  type ObserverContext,
  type StateAccess,
  type Summary,
  type TeamContext,
  type ToolPort,
  threadView,
} from '@switchboard/nodes/core';
import { dict } from '@switchboard/schemas/core';
import { type Ctx, NO_ITEMS, NO_SEQS, type Outcome } from './context.js';
import type { GNode } from './graph.js';
import type { Run } from './run.js';
import { type Cursor, rootScope, type Scope } from './state.js';

const NO_TOOLS: Promise<readonly ToolPort[]> = Promise.resolve([]);

/** The last message as conditions see it, with `json` parsed on first read. */
class LastView {
  readonly content: string;
  readonly author: string;
  constructor(private readonly m: Message) {
    this.content = m.content;
    this.author = m.author;
  }
  get json(): unknown {
    return jsonOf(this.m);
  }
}

const parsedJson = new WeakMap<Message, unknown>();
/** `last.json` of a text message that happens to be JSON (parsed once, bounded). */
function jsonOf(m: Message): unknown {
  const t = m.content.trimStart();
  // Most messages are prose: nothing to parse, so nothing worth remembering.
  if (!(t.startsWith('{') || t.startsWith('[')) || t.length > 1024 * 1024) return undefined;
  if (parsedJson.has(m)) return parsedJson.get(m);
  let v: unknown;
  try {
    v = JSON.parse(t);
  } catch {
    v = undefined;
  }
  parsedJson.set(m, v);
  return v;
}

class BoundModel implements ModelPort {
  constructor(
    private readonly run: Run,
    private readonly nc: NodeCtx,
    readonly name: string,
  ) {}
  complete(call: ModelCall): Promise<ModelReply> {
    return this.run.models.call(this.nc, this.name, call);
  }
  completeThen<T>(call: ModelCall, then: (reply: ModelReply) => T | PromiseLike<T>): Promise<T> {
    return this.run.models.call(this.nc, this.name, call, then);
  }
}

/** The context of one node execution; also its RunView. No per-step closures beyond this object. */
export class NodeCtx implements NodeContext {
  promptTokens = 0;
  completionTokens = 0;
  /** The run's turn this execution belongs to (0: none), the attempt at it, model calls in the attempt. */
  turn = 0;
  attempt = 1;
  calls = 0;
  modelName: string | undefined;
  extraInbox: InboxItem[] = [];
  inboxTaken: readonly InboxItem[];
  readonly offerHandoverTools: boolean;
  readonly noTools: boolean;

  constructor(
    readonly engine: Run,
    readonly cx: Ctx,
    readonly node: GNode,
    readonly candidates: Candidate[],
    cur: Cursor,
  ) {
    this.inboxTaken = engine.conversation.inboxUsed ? (cx.data.inbox[node.id] ?? NO_ITEMS) : NO_ITEMS;
    const scope = cur.scopes[cur.scopes.length - 1]!;
    this.offerHandoverTools =
      node.role === 'agent' &&
      node.out.length > 1 &&
      (scope.mode === 'root' || scope.mode === 'handover') &&
      cur.stopAfter !== node.id;
    this.noTools = !engine.options.tools && node.delegates.length === 0 && !this.offerHandoverTools;
  }

  // Read through, not copied: a context is made for every step, and most steps read none of these.
  get state(): StateAccess {
    return this.cx.state;
  }
  get signal(): AbortSignal {
    return this.engine.signal;
  }
  get clock(): { now(): number } {
    return this.engine.clock;
  }
  get tracksRate(): boolean {
    return this.node.observers.length > 0;
  }

  get run(): this {
    return this;
  }
  get inbox(): readonly InboxItem[] {
    return this.extraInbox.length === 0 ? this.inboxTaken : [...this.inboxTaken, ...this.extraInbox];
  }
  get memo() {
    const d = this.cx.data;
    const id = this.node.id;
    return {
      get: (key: string) => d.memo[id]?.[key],
      set: (key: string, value: unknown) => {
        d.memo[id] ??= dict();
        d.memo[id][key] = value;
      },
    };
  }
  /** Before a retried attempt: usage of the failed attempt still counts, extra inbox items stay. */
  resetTurn(): void {
    this.attempt++;
    this.calls = 0;
  }

  // RunView
  get runId(): string {
    return this.cx.runId;
  }
  get input(): unknown {
    return this.cx.data.input;
  }
  get task(): string {
    return this.cx.data.task;
  }
  get transcript(): readonly Message[] {
    return this.cx.data.transcript;
  }
  get counters(): Counters {
    // The live counters, read-only by contract (behaviours get no copy to allocate per step).
    return this.cx.data.counters;
  }
  get mic(): string | undefined {
    return this.cx.data.mic;
  }
  summary(): Summary | undefined {
    return this.engine.conversation.summaryFor(this.cx, this.node);
  }
  view(memory: MemoryPolicy): readonly Message[] {
    const d = this.cx.data;
    const id = this.node.id;
    const floor = this.engine.conversation.floorsUsed ? d.floors[id] : undefined;
    if (memory === 'thread') return threadView(d.transcript, d.threads[id] ?? NO_SEQS, floor ?? 0);
    const opts: Parameters<typeof memoryView>[2] = { nodeId: id };
    if (floor !== undefined) opts.floor = floor;
    if (memory === 'summary') {
      const s = this.summary();
      if (s) opts.summary = s;
    }
    return memoryView(d.transcript, memory, opts);
  }

  emit(event: BehaviorEvent): void {
    const e = event as unknown as Record<string, unknown>;
    if (e.nodeId === undefined) e.nodeId = this.node.id;
    this.engine.events.emit(this.cx, e);
  }
  model(name?: string): ModelPort {
    return new BoundModel(this.engine, this, name ?? 'default');
  }
  tools(): Promise<readonly ToolPort[]> {
    // Most agents of a chain have no tools: their run makes no tool table at all.
    return this.noTools ? NO_TOOLS : this.engine.tools.forNode(this);
  }
  ask(question: string, options?: string[]): Promise<string> {
    const t = this.node.config.timeoutMs;
    const timeoutMs = typeof t === 'number' ? t : undefined;
    return this.engine.human.ask(this.cx, this.node.id, question, { options, timeoutMs });
  }
  conditions(extra?: Partial<ConditionContext>): ConditionContext {
    const d = this.cx.data;
    const last = d.transcript[d.transcript.length - 1];
    const c: ConditionContext = { state: d.state, counters: this.counters, input: d.input };
    if (last) {
      // `last.json` is parsed only when a condition reads it.
      c.last =
        last.json !== undefined
          ? { content: last.content, author: last.author, json: last.json }
          : new LastView(last);
    }
    if (extra) Object.assign(c, extra);
    return c;
  }
}

/** What an agent is about to read this turn: its pending inbox items, or else the last message someone else wrote. */
function turnInput(nc: NodeCtx): string | undefined {
  const inbox = nc.inbox;
  if (inbox.length > 0) return inbox.map((i) => i.text).join('\n\n');
  const t = nc.transcript;
  for (let i = t.length - 1; i >= 0; i--) if (t[i]!.author !== nc.node.id) return t[i]!.content;
  return undefined;
}

export class ObserverCtx extends NodeCtx implements ObserverContext {
  readonly subject: string;
  readonly pending?: { content: string; json?: unknown };
  readonly toolCalls: number;
  readonly recentBySubject: number;

  constructor(
    engine: Run,
    cx: Ctx,
    observer: GNode,
    subject: NodeCtx,
    readonly phase: 'before' | 'after',
    o: Outcome | undefined,
    readonly rejections: number,
  ) {
    super(engine, cx, observer, [], { at: null, scopes: [rootScope(0)] });
    this.subject = subject.node.id;
    this.turn = subject.turn;
    if (o?.message) this.pending = o.message;
    else if (phase === 'before') {
      const read = turnInput(subject);
      if (read !== undefined) this.pending = { content: read };
    }
    this.toolCalls = o?.toolCalls ?? 0;
    // The engine's clock, as commit() stamps `recent` with it.
    const now = engine.clock.now();
    this.recentBySubject = (cx.data.recent[this.subject] ?? []).filter((t) => now - t <= 60_000).length;
  }
  override summary(): Summary | undefined {
    return this.cx.data.summaries[this.node.id];
  }
}

export class TeamCtx extends NodeCtx implements TeamContext {
  readonly members;
  readonly stats;
  constructor(engine: Run, cx: Ctx, team: GNode, cur: Cursor, scope: Scope) {
    super(engine, cx, team, [], cur);
    this.members = (engine.graph.members.get(team.id) ?? []).map((m) => {
      const r: { id: string; kind: string; label: string; role?: string } = {
        id: m.id,
        kind: m.kind,
        label: m.label,
      };
      if (typeof m.config.role === 'string') r.role = m.config.role;
      return r;
    });
    this.stats = scope;
  }
  override summary(): Summary | undefined {
    return this.engine.conversation.summaryFor(this.cx, this.node);
  }
}
