/**
 * Teams as the loop meets them: entering one (its scope on the cursor, what was handed to it
 * goes to its entry), leaving it, routing inside it by mode (handover, group chat, FSM), a group
 * chat's speaker selection and a team's termination decider.
 */
import type { TeamBehavior } from '@switchboard/nodes/core';
import { type Ctx, isFailed, type Outcome } from './context.js';
import { RunFailure } from './errors.js';
import type { GNode } from './graph.js';
import { releaseMicLeaving } from './mic.js';
import { TeamCtx } from './node-ctx.js';
import { defaultEdges, edgesById, route, take } from './routing.js';
import type { Run } from './run.js';
import type { Cursor, Scope } from './state.js';

export async function routeInTeam(
  run: Run,
  cx: Ctx,
  cur: Cursor,
  node: GNode,
  o: Outcome,
  scope: Scope,
): Promise<void> {
  if (scope.team !== null && node.parent === scope.team) {
    const team = run.graph.nodes.get(scope.team)!;
    if (scope.mode === 'groupChat') {
      const speakerDecider = (team.config.speaker as { decider?: string } | undefined)?.decider;
      if (
        node.id === speakerDecider &&
        (team.config.speaker as { strategy?: string }).strategy === 'decider'
      ) {
        if (o.route && 'done' in o.route) cur.at = null;
        else if (o.route) await take(run, cx, cur, node, edgesById(node, o.route.edges));
        else cur.at = null;
        return;
      }
      await runTerminationDecider(run, cx, cur, team);
      if (cur.at === null) return;
      await selectSpeaker(run, cx, cur, team);
      return;
    }
    if (scope.mode === 'fsm') {
      const decider = team.config.decider as string | undefined;
      if (node.id === decider) {
        if (!o.route || 'done' in o.route) {
          cur.at = null;
          return;
        }
        const from = run.graph.nodes.get(scope.state ?? '')!;
        await take(run, cx, cur, from, edgesById(from, o.route.edges));
        return;
      }
      scope.state = node.id;
      if (o.route && 'done' in o.route) {
        cur.at = null;
        return;
      }
      if (decider !== undefined) {
        cur.at = decider;
        return;
      }
    }
  }
  if (o.route && 'done' in o.route) {
    cur.at = null;
    return;
  }
  if (scope.team !== null && scope.mode === 'handover') {
    await runTerminationDecider(run, cx, cur, run.graph.nodes.get(scope.team)!);
    if (cur.at === null) return;
  }
  const edges = o.route ? edgesById(node, o.route.edges) : defaultEdges(run, cx, node);
  await take(run, cx, cur, node, edges);
}

export async function enterTeams(
  run: Run,
  cx: Ctx,
  cur: Cursor,
  node: GNode,
  startAt: number,
  target: string,
): Promise<void> {
  for (let i = startAt; i < node.ancestors.length; i++) {
    const team = run.graph.nodes.get(node.ancestors[i]!)!;
    await enterTeam(run, cx, cur, team, node.ancestors[i + 1] ?? target);
  }
  cur.at = target;
}

export async function enterTeam(
  run: Run,
  cx: Ctx,
  cur: Cursor,
  team: GNode,
  entryOverride: string | undefined,
): Promise<void> {
  run.limits.countStep(cx, team.id);
  run.events.node(cx, 'node.started', team.id);
  const mode = (team.config.mode as 'handover' | 'groupChat' | 'fsm' | undefined) ?? 'handover';
  const scope: Scope = { team: team.id, mode, turns: 0, tokens: 0, startedAt: run.now(), spoken: 0 };
  cur.scopes.push(scope);
  const d = cx.data;
  const entry = entryOverride ?? run.graph.entry.get(team.id) ?? null;
  // What was handed to the team goes to its first member.
  const items = run.conversation.inboxUsed ? d.inbox[team.id] : undefined;
  if (items && items.length > 0 && entry !== null) {
    delete d.inbox[team.id];
    for (const it of items)
      run.conversation.addInbox(cx, entry, { kind: it.kind, text: it.text, from: it.from ?? team.id });
  }
  const floor = run.conversation.floorsUsed ? d.floors[team.id] : undefined;
  if (floor !== undefined) for (const m of run.graph.members.get(team.id) ?? []) d.floors[m.id] = floor;
  if (mode === 'groupChat' && entryOverride === undefined) {
    cur.at = null;
    await selectSpeaker(run, cx, cur, team);
    return;
  }
  cur.at = entry;
}

export async function leaveTeam(run: Run, cx: Ctx, cur: Cursor, reason: string): Promise<void> {
  const scope = cur.scopes.pop()!;
  const team = run.graph.nodes.get(scope.team!)!;
  const last = run.conversation.lastMessage(cx);
  run.events.emit(cx, {
    type: 'log',
    nodeId: team.id,
    level: 'info',
    text: `team ${team.id} ended: ${reason}`,
  });
  const d = cx.data;
  if (d.mic !== undefined)
    releaseMicLeaving(d, team, run.graph.nodes.get(d.mic), (e) => run.events.emit(cx, e));
  run.events.emit(cx, {
    type: 'node.completed',
    nodeId: team.id,
    output: last ? (last.json ?? last.content) : '',
  });
  if (cur.stopAfter === team.id && cur.scopes.length === 1) {
    cur.done = true;
    cur.at = null;
    return;
  }
  await route(run, cx, cur, team, {});
  if (cur.stopAfter === team.id && cur.scopes.length === 1) cur.done = true;
}

/** Group chat: who speaks next (round robin, an LLM manager, or a decider member). */
export async function selectSpeaker(run: Run, cx: Ctx, cur: Cursor, team: GNode): Promise<void> {
  const scope = cur.scopes[cur.scopes.length - 1]!;
  const reason = (team.behavior as TeamBehavior).terminated(
    team.config,
    scope,
    run.conversation.lastMessage(cx),
    run.now(),
  );
  if (reason !== undefined) {
    cur.at = null;
    run.events.emit(cx, { type: 'log', nodeId: team.id, level: 'info', text: `team ${team.id}: ${reason}` });
    return;
  }
  const speaker = team.config.speaker as { strategy?: string; decider?: string } | undefined;
  if (speaker?.strategy === 'decider' && speaker.decider) {
    cur.at = speaker.decider;
    return;
  }
  // A pause (and a redirect injected during it) lands before the manager reads the transcript,
  // so the next speaker is chosen with whatever the user said while the run was paused.
  const g = run.control.gate(cx);
  if (g) await g;
  const tc = new TeamCtx(run, cx, team, cur, scope);
  // An LLM manager's call is a turn of the team node, so its token usage is reported like any other.
  const llm = speaker?.strategy === 'llm';
  const turn = llm ? ++cx.data.counters.turns : 0;
  if (llm) run.events.emit(cx, { type: 'turn.started', nodeId: team.id, turn });
  tc.turn = turn;
  const next = await (team.behavior as TeamBehavior).nextSpeaker(tc);
  if (llm) run.turnCompleted(cx, tc, turn);
  if ('done' in next) {
    run.events.emit(cx, { type: 'decision', nodeId: team.id, choice: 'done', reason: next.reason });
    cur.at = null;
    return;
  }
  run.events.emit(cx, { type: 'decision', nodeId: team.id, choice: next.speaker, reason: next.reason });
  scope.spoken++;
  scope.lastSpeaker = next.speaker;
  cur.at = next.speaker;
}

/** A team's `termination.decider` (when not its speaker or FSM decider) may end it after any member turn. */
export async function runTerminationDecider(run: Run, cx: Ctx, cur: Cursor, team: GNode): Promise<void> {
  const id = (team.config.termination as { decider?: string } | undefined)?.decider;
  if (id === undefined) return;
  if (id === (team.config.speaker as { decider?: string } | undefined)?.decider || id === team.config.decider)
    return;
  const decider = run.graph.nodes.get(id);
  if (!decider) return;
  const o = await run.execute(cx, cur, decider);
  if (isFailed(o)) throw new RunFailure(o.failed.code, o.failed.message);
  if (o.route && 'done' in o.route) cur.at = null;
}
