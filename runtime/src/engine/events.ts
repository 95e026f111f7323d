/**
 * Event emission: every event of a run is stamped here (runId, seq, ts, scripted) and handed to
 * `onEvent` and the run's event queue synchronously, in seq order. Owns the run's seq and the
 * "ended" flag after which nothing more is emitted.
 */
import type { Message, ModelReply } from '@switchboard/nodes/core';
import type { RunEvent } from '@switchboard/schemas';
import type { Ctx } from './context.js';
import type { EventQueue } from './event-queue.js';
import type { GEdge } from './graph.js';

/** A message as `message` events carry it. */
export type MessageEventBody = Pick<Message, 'seq' | 'role' | 'author' | 'content'>;

export class Emitter {
  /** The seq of the last event emitted. */
  seq: number;
  /** Nothing is emitted once the run has ended. */
  ended = false;
  /** Set when a scripted model is in the run: every event says so. */
  scripted = false;

  constructor(
    private readonly now: () => number,
    private readonly onEvent: ((e: RunEvent) => void) | undefined,
    private readonly queue: EventQueue,
    seq: number,
  ) {
    this.seq = seq;
  }

  emit(cx: Ctx, e: Record<string, unknown>): void {
    if (this.ended) return;
    e.runId = cx.runId;
    e.seq = ++this.seq;
    e.ts = this.now();
    if (this.scripted) e.scripted = true;
    if (cx.parentRunId !== undefined) {
      e.parentRunId = cx.parentRunId;
      e.parentCallId = cx.parentCallId;
    }
    this.deliver(e as unknown as RunEvent);
  }

  /** The run ended: nothing more is emitted, and readers of the queue see its end. */
  close(): void {
    this.ended = true;
    this.queue.close();
  }

  /** A tool event of `nodeId`: `fields` plus type and node. */
  tool(cx: Ctx, nodeId: string, type: string, fields: Record<string, unknown>): void {
    fields.type = type;
    fields.nodeId = nodeId;
    this.emit(cx, fields);
  }

  private deliver(ev: RunEvent): void {
    if (this.onEvent !== undefined) this.onEvent(ev);
    if (this.queue.active) this.queue.push(ev);
  }

  // The events of every step are built whole, in emit()'s key order (fields, runId, seq, ts,
  // scripted): stamping a built event adds four properties, each a shape transition, and
  // allocates its property array twice — about 60 ns an event, seven events a step (bench gate
  // e). Events of nested runs carry two more fields and go through emit().

  private direct(cx: Ctx): boolean {
    return cx.parentRunId === undefined && !this.ended;
  }

  /** node.started, and node.completed without output. */
  node(cx: Ctx, type: 'node.started' | 'node.completed', nodeId: string): void {
    if (!this.direct(cx)) {
      this.emit(cx, { type, nodeId });
      return;
    }
    const runId = cx.runId;
    const seq = ++this.seq;
    const ts = this.now();
    const e = this.scripted
      ? { type, nodeId, runId, seq, ts, scripted: true }
      : { type, nodeId, runId, seq, ts };
    this.deliver(e as RunEvent);
  }

  turnStarted(cx: Ctx, nodeId: string, turn: number): void {
    const type = 'turn.started';
    if (!this.direct(cx)) {
      this.emit(cx, { type, nodeId, turn });
      return;
    }
    const runId = cx.runId;
    const seq = ++this.seq;
    const ts = this.now();
    const e = this.scripted
      ? { type, nodeId, turn, runId, seq, ts, scripted: true }
      : { type, nodeId, turn, runId, seq, ts };
    this.deliver(e as RunEvent);
  }

  handover(cx: Ctx, nodeId: string, edge: GEdge): void {
    const type = 'handover';
    const edgeId = edge.id;
    const from = edge.source;
    const to = edge.target;
    if (!this.direct(cx)) {
      this.emit(cx, { type, nodeId, edgeId, from, to });
      return;
    }
    const runId = cx.runId;
    const seq = ++this.seq;
    const ts = this.now();
    const e = this.scripted
      ? { type, nodeId, edgeId, from, to, runId, seq, ts, scripted: true }
      : { type, nodeId, edgeId, from, to, runId, seq, ts };
    this.deliver(e as RunEvent);
  }

  message(cx: Ctx, message: MessageEventBody, nodeId: string): void {
    const type = 'message';
    if (!this.direct(cx)) {
      this.emit(cx, { type, message, nodeId });
      return;
    }
    const runId = cx.runId;
    const seq = ++this.seq;
    const ts = this.now();
    const e = this.scripted
      ? { type, message, nodeId, runId, seq, ts, scripted: true }
      : { type, message, nodeId, runId, seq, ts };
    this.deliver(e as RunEvent);
  }

  modelCompleted(cx: Ctx, nodeId: string, res: ModelReply): void {
    const type = 'model.completed';
    const text = res.text;
    const usage = { promptTokens: res.usage.promptTokens, completionTokens: res.usage.completionTokens };
    const model = res.model;
    const finishReason = res.finishReason;
    if (!this.direct(cx)) {
      this.emit(cx, { type, nodeId, text, usage, model, finishReason });
      return;
    }
    const runId = cx.runId;
    const seq = ++this.seq;
    const ts = this.now();
    const e = this.scripted
      ? { type, nodeId, text, usage, model, finishReason, runId, seq, ts, scripted: true }
      : { type, nodeId, text, usage, model, finishReason, runId, seq, ts };
    this.deliver(e as RunEvent);
  }

  turnCompleted(cx: Ctx, nodeId: string, turn: number, usage: object, model: string): void {
    const type = 'turn.completed';
    if (!this.direct(cx)) {
      this.emit(cx, { type, nodeId, turn, usage, model });
      return;
    }
    const runId = cx.runId;
    const seq = ++this.seq;
    const ts = this.now();
    const e = this.scripted
      ? { type, nodeId, turn, usage, model, runId, seq, ts, scripted: true }
      : { type, nodeId, turn, usage, model, runId, seq, ts };
    this.deliver(e as RunEvent);
  }
}
