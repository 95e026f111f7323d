/**
 * The conversation of a run: messages appended to the transcript (each a `message` event),
 * the threads of nodes that keep one, inboxes (tool results, directives, briefings, user
 * messages waiting for a node), and the summaries observers wrote.
 */
import { INBOX_PRIORITY, type InboxItem, type Message, type Summary } from '@switchboard/nodes/core';
import type { Ctx, RunCore } from './context.js';
import type { GNode } from './graph.js';
import type { RunData } from './state.js';

export class Conversation {
  /**
   * Whether an inbox item or a handover floor was ever set in this run (a resumed run may carry
   * some): until then a step does not look its node up in those tables.
   */
  inboxUsed: boolean;
  floorsUsed: boolean;

  constructor(
    private readonly run: RunCore,
    resumed: boolean,
  ) {
    this.inboxUsed = this.floorsUsed = resumed;
  }

  append(cx: Ctx, m: Omit<Message, 'seq'>, nodeId?: string): Message {
    const msg = m as Message;
    msg.seq = ++cx.data.msgSeq;
    return this.record(cx, msg, nodeId);
  }

  /** Appends a message that already has its seq (the next one). */
  record(cx: Ctx, msg: Message, nodeId?: string): Message {
    const d = cx.data;
    d.transcript.push(msg);
    const message = { seq: msg.seq, role: msg.role, author: msg.author, content: msg.content };
    const events = this.run.events;
    if (nodeId !== undefined) events.message(cx, message, nodeId);
    else events.emit(cx, { type: 'message', message });
    const threads = this.run.graph.threads;
    if (threads.size > 0) {
      if (threads.has(msg.author)) this.addToThread(d, msg.author, msg.seq);
      if (msg.to !== undefined && msg.to !== msg.author && threads.has(msg.to))
        this.addToThread(d, msg.to, msg.seq);
    }
    return msg;
  }

  addToThread(d: RunData, id: string, seq: number): void {
    const t = d.threads[id];
    // Threads of one and two seqs are built whole: a push gives the array room for 17, and most
    // threads (an agent of a chain: what it was handed, what it said) stay that short.
    if (t === undefined) d.threads[id] = [seq];
    else if (t.length === 1) d.threads[id] = [t[0]!, seq];
    else t.push(seq);
  }

  addInbox(cx: Ctx, nodeId: string, item: Omit<InboxItem, 'order'>): void {
    this.inboxUsed = true;
    const d = cx.data;
    d.inbox[nodeId] ??= [];
    const list = d.inbox[nodeId]!;
    const full = item as InboxItem;
    full.order = ++d.inboxOrder;
    list.push(full);
    // Stable by arrival within a priority: tool results, then directives and briefings, then user messages.
    list.sort((a, b) => INBOX_PRIORITY[a.kind] - INBOX_PRIORITY[b.kind] || a.order - b.order);
  }

  /** The summary a node reads: its own observers', or an observer's own. */
  summaryFor(cx: Ctx, node: GNode): Summary | undefined {
    const ids = node.observers;
    for (let i = 0; i < ids.length; i++) {
      const s = cx.data.summaries[ids[i]!];
      if (s) return s;
    }
    if (node.role === 'observer') return cx.data.summaries[node.id];
    return undefined;
  }

  lastMessage(cx: Ctx): Message | undefined {
    const t = cx.data.transcript;
    return t[t.length - 1];
  }
}
