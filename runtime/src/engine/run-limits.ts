/**
 * A run's limits as it runs: the step budget (every node, team and tool call is a step), the
 * run's token budget and time limit, and the node, team and cost budgets (budgets.ts). Counts
 * tokens of every model reply into the run's counters. The first limit spent stops the run.
 */

import type { ModelReply } from '@switchboard/nodes/core';
import type { Flow } from '@switchboard/schemas';
import { dict } from '@switchboard/schemas/core';
import { type BudgetHit, BudgetTracker } from './budgets.js';
import { type Ctx, emptyUsage, type RunCore } from './context.js';
import { RunFailure } from './errors.js';
import type { Graph } from './graph.js';
import { DEFAULT_MAX_STEPS } from './limits.js';
import type { NodeCtx } from './node-ctx.js';
import type { RunOptions } from './types.js';

const NO_BUDGETS: NonNullable<RunOptions['budgets']> = {};

/** How a limit stops the run. */
export interface Stopper {
  /** Fails the run now (run.failed, the run ends) and aborts whatever is in flight. */
  failNow(stop: RunFailure): void;
  /** Sets the run's stop: the loop ends the run when it finds it. */
  halt(stop: RunFailure): void;
}

export class RunLimits {
  private readonly maxSteps: number;
  private readonly maxTokens: number | undefined;
  /** Node, team and cost budgets and budget warnings; undefined when none is set. */
  private readonly budgets: BudgetTracker | undefined;
  private readonly timeoutMs: number | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly run: RunCore & Stopper,
    flow: Flow,
    graph: Graph,
    options: RunOptions,
  ) {
    // Merged only when both set budgets: a run usually has no budgets of its own.
    const fb = flow.budgets;
    const ob = options.budgets;
    const b = ob === undefined ? (fb ?? NO_BUDGETS) : fb === undefined ? ob : { ...fb, ...ob };
    this.maxSteps = b.maxSteps ?? DEFAULT_MAX_STEPS;
    this.maxTokens = b.maxTokens;
    this.budgets = BudgetTracker.create(flow, b, new Set(graph.members.keys()));
    this.timeoutMs = b.timeoutMs;
  }

  /** Starts the run's time limit, if it has one. */
  startClock(cx: Ctx): void {
    const ms = this.timeoutMs;
    if (ms === undefined) return;
    this.timer = setTimeout(() => this.exceeded(cx, 'time', ms, ms), ms);
    (this.timer as { unref?: () => void }).unref?.();
  }

  stopClock(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  countStep(cx: Ctx, nodeId: string): void {
    const c = cx.data.counters;
    if (++c.steps > this.maxSteps) {
      this.run.events.emit(cx, {
        type: 'budget.exceeded',
        nodeId,
        budget: 'steps',
        limit: this.maxSteps,
        used: c.steps,
      });
      const stop = new RunFailure(
        'budget_exceeded',
        `the step budget of ${this.maxSteps} was exceeded at node "${nodeId}"`,
      );
      this.run.halt(stop);
      throw stop;
    }
  }

  /** Adds a model reply's usage to the run's counters and to the node's turn. */
  countTokens(nc: NodeCtx, res: ModelReply): void {
    const u = res.usage;
    const c = nc.cx.data.counters;
    c.promptTokens += u.promptTokens;
    c.completionTokens += u.completionTokens;
    c.tokens += u.promptTokens + u.completionTokens;
    let bm = c.byModel[res.model];
    if (bm == null) c.byModel[res.model] = bm = emptyUsage();
    bm.turns++;
    bm.promptTokens += u.promptTokens;
    bm.completionTokens += u.completionTokens;
    nc.promptTokens += u.promptTokens;
    nc.completionTokens += u.completionTokens;
    nc.modelName = res.model;
  }

  /** After a reply is counted: budget warnings as events; a budget spent stops the run (throws). */
  checkTokens(nc: NodeCtx, u: ModelReply['usage'], modelKey: string | undefined): void {
    const cx = nc.cx;
    const tokens = cx.data.counters.tokens;
    if (this.budgets) this.chargeBudgets(nc, u, modelKey, tokens);
    if (this.maxTokens !== undefined && tokens > this.maxTokens) {
      this.exceeded(cx, 'tokens', this.maxTokens, tokens);
      throw this.run.stop;
    }
  }

  /** Node, team and cost budgets: warnings as events, the first budget spent stops the run. */
  private chargeBudgets(
    nc: NodeCtx,
    u: ModelReply['usage'],
    modelKey: string | undefined,
    runTokens: number,
  ): void {
    const cx = nc.cx;
    const counters = cx.data.counters;
    // A null-prototype table: node ids are data (and it survives checkpoints as plain JSON).
    counters.budgetUse ??= dict<number>();
    const hits: BudgetHit[] = this.budgets!.charge(
      nc.node.id,
      nc.node.ancestors,
      modelKey,
      u,
      runTokens,
      counters.budgetUse,
    );
    for (const h of hits) {
      const where = h.scope && h.nodeId ? { scope: h.scope, nodeId: h.nodeId } : undefined;
      if (h.kind === 'warning')
        this.run.events.emit(cx, {
          type: 'budget.warning',
          budget: h.budget,
          limit: h.limit,
          used: h.used,
          fraction: h.fraction,
          ...(where ?? {}),
        });
      else {
        this.exceeded(cx, h.budget, h.limit, h.used, where);
        throw this.run.stop;
      }
    }
  }

  /** A budget ran out: say so, stop the run and abort whatever is in flight. */
  private exceeded(
    cx: Ctx,
    budget: string,
    limit: number,
    used: number,
    where?: { scope: string; nodeId: string },
  ): void {
    if (this.run.stop) return;
    const events = this.run.events;
    if (where) events.emit(cx, { type: 'budget.exceeded', budget, limit, used, ...where });
    else events.emit(cx, { type: 'budget.exceeded', budget, limit, used });
    // The run ends now, whatever is in flight: a call that ignores its abort cannot hold it open.
    this.run.failNow(
      new RunFailure(
        'budget_exceeded',
        `the ${budget} budget of ${where ? `${where.scope} "${where.nodeId}" ` : ''}${limit} was exceeded (${used})`,
      ),
    );
  }
}
