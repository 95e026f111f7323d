/**
 * Where control goes after a node: the edges it chose (or the default ones), the handover
 * protocol along each edge (context floors, briefings), parallel forks and their join, the
 * candidates a node chooses from, a node's failure, and moving the cursor into and out of team
 * scopes (teams.ts has what a team does).
 */
import { type Candidate, firstAfter, getPath, type Message, renderTemplate } from '@switchboard/nodes/core';
import type { EventError } from '@switchboard/schemas';
import { dict } from '@switchboard/schemas/core';
import type { Ctx, Outcome } from './context.js';
import { RunFailure } from './errors.js';
import { type GEdge, type GNode, type Graph, joinNode } from './graph.js';
import { edgesWithoutHandover } from './handover-policy.js';
import type { Run } from './run.js';
import type { Cursor } from './state.js';
import { enterTeams, routeInTeam } from './teams.js';

export async function onFailure(
  run: Run,
  cx: Ctx,
  cur: Cursor,
  node: GNode,
  error: EventError,
): Promise<void> {
  const d = cx.data;
  const scope = cur.scopes[cur.scopes.length - 1]!;
  const failures = (d.counters.failures[node.id] ?? 0) + 1;
  d.counters.failures[node.id] = failures;
  if (scope.mode === 'fsm' && scope.team !== null && node.parent === scope.team) {
    const team = run.graph.nodes.get(scope.team)!;
    const max = (team.config.maxFailures as number | undefined) ?? 3;
    if (failures < max) {
      // The state is retried; the transition function sees the failure counter.
      run.events.emit(cx, {
        type: 'log',
        nodeId: node.id,
        level: 'warn',
        text: `${node.id} failed (${failures}/${max}); retrying the state`,
      });
      return;
    }
    const esc = node.out.find((e) => e.config.escalation) ?? team.out.find((e) => e.config.escalation);
    if (esc) {
      run.events.emit(cx, {
        type: 'log',
        nodeId: node.id,
        level: 'warn',
        text: `${node.id} failed ${failures} times; escalating along ${esc.id}`,
      });
      d.counters.failures[node.id] = 0;
      await take(run, cx, cur, run.graph.nodes.get(esc.source)!, [esc]);
      return;
    }
    throw new RunFailure(
      'node_failed',
      `"${node.id}" failed ${failures} times in FSM team "${team.id}" and no escalation edge is drawn: ${error.message}`,
      failures,
      error.code,
    );
  }
  throw new RunFailure(
    error.code === 'human_input_required' ? 'human_input_required' : error.code,
    error.message,
    error.attempts,
    error.cause,
  );
}

/**
 * Where control goes after a node. Outside teams (the common case) this is synchronous and
 * returns undefined: no async frame or promise per step; inside a team the mode decides.
 */
export function route(run: Run, cx: Ctx, cur: Cursor, node: GNode, o: Outcome): Promise<void> | undefined {
  if (o.escalateTo !== undefined) return moveTo(run, cx, cur, o.escalateTo);
  const scope = cur.scopes[cur.scopes.length - 1]!;
  if (scope.team !== null) return routeInTeam(run, cx, cur, node, o, scope);
  if (o.route && 'done' in o.route) {
    cur.at = null;
    return undefined;
  }
  return take(run, cx, cur, node, o.route ? edgesById(node, o.route.edges) : defaultEdges(run, cx, node));
}

export function edgesById(node: GNode, ids: readonly string[]): GEdge[] {
  const out: GEdge[] = [];
  for (const id of ids) {
    const e = node.out.find((x) => x.id === id);
    if (!e) throw new RunFailure('flow_invalid', `"${node.id}" chose edge "${id}", which does not leave it`);
    out.push(e);
  }
  return out;
}

/** Without an explicit choice: one edge is followed; several fan out, except from an agent (it chose none: handover-policy.ts). */
export function defaultEdges(run: Run, cx: Ctx, node: GNode): GEdge[] {
  if (node.out.length <= 1) return node.out;
  if (node.role === 'agent') return edgesWithoutHandover(node, (e) => run.events.emit(cx, e));
  if (node.role === 'human') return node.out.filter((e) => e.config.branch === undefined);
  return node.out;
}

/**
 * Follows edges: none ends the scope, one moves, several fork parallel branches. Synchronous
 * (undefined) unless entering a team needs to wait.
 */
export function take(run: Run, cx: Ctx, cur: Cursor, from: GNode, edges: GEdge[]): Promise<void> | undefined {
  if (edges.length === 0) {
    cur.at = null;
    return undefined;
  }
  // Indexed, as on every per-step path: for-of allocates an iterator wherever V8 has not
  // optimised the code yet, and a short-lived process (bench gate e) runs much of it unoptimised.
  for (let i = 0; i < edges.length; i++) {
    const e = edges[i]!;
    run.events.handover(cx, from.id, e);
    applyProtocol(run, cx, from, e);
  }
  if (edges.length === 1) return moveTo(run, cx, cur, edges[0]!.target);
  const targets = edges.map((e) => e.target);
  const join = joinNode(run.graph, targets);
  cur.fork = {
    origin: from.id,
    join,
    edges: edges.map((e) => e.id),
    branches: targets.map((t) => ({
      at: t,
      scopes: cur.scopes.map((s) => ({ ...s })),
      stopAt: join,
    })),
  };
  cur.at = null;
  return undefined;
}

/** The handover protocol: what context goes along, and a briefing as the receiver's first inbox item. */
export function applyProtocol(run: Run, cx: Ctx, from: GNode, e: GEdge): void {
  const d = cx.data;
  const to = e.target;
  const c = e.config;
  const ctxMode = c.context?.mode ?? 'all';
  if (ctxMode === 'all') {
    if (run.conversation.floorsUsed && d.floors[to] !== undefined) delete d.floors[to];
  } else {
    run.conversation.floorsUsed = true;
    if (ctxMode === 'lastN') {
      const n = c.context?.n ?? 1;
      const t = d.transcript;
      d.floors[to] = t.length >= n ? t[t.length - n]!.seq : 0;
    } else d.floors[to] = d.msgSeq + 1;
  }
  const last = d.transcript[d.transcript.length - 1];
  if (last && run.graph.threads.has(to) && last.author !== to) run.conversation.addToThread(d, to, last.seq);
  let package_ = '';
  if (ctxMode === 'summary') {
    const s = run.conversation.summaryFor(cx, from);
    package_ = s ? `Summary so far:\n${s.text}` : '';
  } else if (ctxMode === 'state') {
    const keys = c.context?.keys ?? [];
    const picked = dict<unknown>();
    for (const k of keys) picked[k] = getPath(d.state, k) ?? null;
    package_ = `State:\n${JSON.stringify(picked)}`;
  }
  if (c.briefing !== undefined || package_ !== '') {
    const briefing = c.briefing
      ? renderTemplate(c.briefing, {
          task: d.task,
          last: last?.content ?? '',
          state: d.state,
          input: d.input,
          from: from.id,
        })
      : '';
    const text = [briefing, package_].filter((s) => s !== '').join('\n\n');
    run.conversation.addInbox(cx, to, { kind: 'briefing', text, from: e.id });
  }
}

/**
 * Moves control to a node, leaving and entering team scopes as needed. Synchronous
 * (undefined) when no team is entered.
 */
export function moveTo(run: Run, cx: Ctx, cur: Cursor, target: string): Promise<void> | undefined {
  const node = run.graph.nodes.get(target);
  if (!node) throw new RunFailure('flow_invalid', `no node "${target}"`);
  // Leave scopes the target is not inside of (without following the teams' own edges).
  while (cur.scopes.length > 1) {
    const top = cur.scopes[cur.scopes.length - 1]!;
    if (top.team !== null && node.ancestors.includes(top.team)) break;
    cur.scopes.pop();
    run.events.emit(cx, { type: 'node.completed', nodeId: top.team!, output: `left for ${target}` });
  }
  // Enter teams between the current scope and the target.
  const topTeam = cur.scopes[cur.scopes.length - 1]!.team;
  const startAt = topTeam === null ? 0 : node.ancestors.indexOf(topTeam) + 1;
  if (startAt >= node.ancestors.length) {
    cur.at = target;
    return undefined;
  }
  return enterTeams(run, cx, cur, node, startAt, target);
}

/** Runs a cursor's parallel branches to their join and merges their results, in edge order. */
export async function runFork(run: Run, cx: Ctx, cur: Cursor): Promise<void> {
  const fork = cur.fork!;
  run.allowManyListeners();
  await Promise.all(fork.branches.map((b) => (b.done ? undefined : run.drive(cx, b))));
  // Merge in branch (edge) order, whatever order they finished in.
  const d = cx.data;
  const parts: string[] = [];
  const values: unknown[] = [];
  for (const b of fork.branches) {
    // Seqs are increasing: a search, not a scan per branch (100 branches, hundreds of messages).
    const at = b.lastSeq !== undefined ? d.transcript[firstAfter(d.transcript, b.lastSeq - 1)] : undefined;
    const m = at !== undefined && at.seq === b.lastSeq ? at : undefined;
    values.push(m ? (m.json ?? m.content) : null);
    parts.push(m ? `[${m.author}] ${m.content}` : '[no result]');
  }
  cur.fork = undefined;
  cur.at = fork.join;
  const merged: Omit<Message, 'seq'> = {
    role: 'user',
    author: fork.origin,
    content: parts.join('\n\n'),
    json: values,
  };
  if (fork.join !== null) merged.to = fork.join;
  const m = run.conversation.append(cx, merged, fork.origin);
  cur.lastSeq = m.seq;
  if (fork.join !== null)
    run.conversation.addInbox(cx, fork.join, {
      kind: 'briefing',
      text: `Results of the parallel branches:\n\n${merged.content}`,
      from: fork.origin,
    });
}

/** The edges a node may choose from, as behaviours see them (built once per compiled flow). */
export function candidatesFor(graph: Graph, cur: Cursor, node: GNode): Candidate[] {
  const scope = cur.scopes[cur.scopes.length - 1]!;
  let edges: GEdge[] = node.out;
  if (scope.mode === 'fsm' && scope.team !== null && node.role === 'decider' && scope.state !== undefined) {
    const team = graph.nodes.get(scope.team)!;
    if (team.config.decider === node.id) edges = graph.nodes.get(scope.state)?.out ?? [];
  }
  // Candidates depend only on the edges, so each node's list is built once per compiled flow.
  const owner = edges === node.out ? node : graph.nodes.get(edges[0]?.source ?? '');
  if (!owner) return [];
  let list = graph.candidates.get(owner.id);
  if (!list) {
    list = edges.map((e) => candidate(graph, e));
    graph.candidates.set(owner.id, list);
  }
  return list;
}

function candidate(graph: Graph, e: GEdge): Candidate {
  const t = graph.nodes.get(e.target)!;
  const c: Candidate = { edgeId: e.id, target: e.target, label: e.label ?? t.label };
  if (typeof t.config.role === 'string') c.role = t.config.role;
  if (e.config.description !== undefined) c.description = e.config.description;
  if (e.config.branch !== undefined) c.branch = e.config.branch;
  if (e.config.escalation) c.escalation = true;
  return c;
}
