/**
 * Observers of an agent's turn: guards (before the model is called, after the message is made)
 * and the other observers (summaries, reminders), each firing an `observer.fired` event.
 */
import type { ObserverBehavior } from '@switchboard/nodes/core';
import type { Ctx, Outcome } from './context.js';
import type { GNode } from './graph.js';
import { type NodeCtx, ObserverCtx } from './node-ctx.js';
import type { Run } from './run.js';

function observerNodes(run: Run, node: GNode): GNode[] {
  const out: GNode[] = [];
  for (const id of node.observers) {
    const o = run.graph.nodes.get(id);
    if (o && (o.behavior as ObserverBehavior | undefined)?.type === 'observer') out.push(o);
  }
  return out;
}

/**
 * Guards `after` a turn check the message it produced before it is committed ('retry' redoes
 * the turn). Guards `before` a turn check it before the model is called; a violation holds the
 * turn ('held': `o` says what happens instead — nothing, or an escalation).
 */
export async function runGuards(
  run: Run,
  cx: Ctx,
  nc: NodeCtx,
  phase: 'before' | 'after',
  o: Outcome,
  rejections: Map<string, number>,
): Promise<'ok' | 'retry' | 'held'> {
  const events = run.events;
  for (const obs of observerNodes(run, nc.node)) {
    if (obs.config.type !== 'guard') continue;
    const beh = obs.behavior as ObserverBehavior;
    if (!beh.runsAt(obs.config, phase)) continue;
    const oc = new ObserverCtx(run, cx, obs, nc, phase, o, rejections.get(obs.id) ?? 0);
    const v = await beh.observe(oc);
    if (v.action !== 'violation') continue;
    const n = (rejections.get(obs.id) ?? 0) + 1;
    rejections.set(obs.id, n);
    const base = { type: 'observer.fired', nodeId: obs.id, observer: obs.id, target: nc.node.id };
    if (phase === 'after' && v.onViolation === 'retry' && n <= v.maxRetries) {
      events.emit(cx, { ...base, action: 'retry', detail: { reason: v.reason, attempt: n } });
      nc.extraInbox.push({
        kind: 'directive',
        text: `Your last message was rejected: ${v.reason}. Try again.`,
        from: obs.id,
        order: 0,
      });
      return 'retry';
    }
    const d = cx.data;
    d.counters.failures[nc.node.id] = (d.counters.failures[nc.node.id] ?? 0) + 1;
    if (v.onViolation === 'escalate' && v.escalateTo !== undefined) {
      events.emit(cx, {
        ...base,
        action: 'escalate',
        detail: { reason: v.reason, to: v.escalateTo, when: phase },
      });
      o.escalateTo = v.escalateTo;
      delete o.message;
      delete o.route;
      return phase === 'before' ? 'held' : 'ok';
    }
    events.emit(cx, { ...base, action: 'block', detail: { reason: v.reason, when: phase } });
    delete o.message;
    return phase === 'before' ? 'held' : 'ok';
  }
  return 'ok';
}

/** The observers that are not guards, before or after a turn: summaries and reminders. */
export async function runObservers(
  run: Run,
  cx: Ctx,
  nc: NodeCtx,
  phase: 'before' | 'after',
  o: Outcome | undefined,
): Promise<void> {
  for (const obs of observerNodes(run, nc.node)) {
    if (obs.config.type === 'guard') continue;
    const beh = obs.behavior as ObserverBehavior;
    if (!beh.runsAt(obs.config, phase)) continue;
    const oc = new ObserverCtx(run, cx, obs, nc, phase, o, 0);
    const r = await beh.observe(oc);
    const base = { type: 'observer.fired', nodeId: obs.id, observer: obs.id, target: nc.node.id };
    if (r.action === 'summary') {
      cx.data.summaries[obs.id] = r.summary;
      run.events.emit(cx, {
        ...base,
        action: 'summary',
        detail: { coversSeq: r.summary.coversSeq, text: r.summary.text },
      });
    } else if (r.action === 'remind') {
      run.conversation.addInbox(cx, nc.node.id, { kind: 'reflection', text: r.text, from: obs.id });
      run.events.emit(cx, { ...base, action: 'remind', detail: { text: r.text } });
    }
  }
}
