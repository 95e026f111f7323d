/**
 * Token and cost budgets beyond the run's token total: per node, per team (everything called
 * inside the team, nested teams included) and the run's cost. Each model reply is charged to
 * its node and every team around it; a budget reaching `warnAt` of its limit gives one warning,
 * a budget going over gives a named stop. (The run's token total stays in run.ts, which already
 * counts it; this module only adds its warning.)
 */
import type { BudgetsT, Flow } from '@switchboard/schemas';
import type { Dict } from '@switchboard/schemas/core';

export type BudgetHit =
  | {
      kind: 'warning';
      budget: 'tokens' | 'cost';
      scope?: 'node' | 'team';
      nodeId?: string;
      limit: number;
      used: number;
      fraction: number;
    }
  | {
      kind: 'exceeded';
      budget: 'tokens' | 'cost';
      scope?: 'node' | 'team';
      nodeId?: string;
      limit: number;
      used: number;
    };

interface Limit {
  tokens?: number;
  cost?: number;
  scope: 'node' | 'team';
}

const DEFAULT_WARN_AT = 0.8;

/** Costs are summed in micro-dollars so that repeated small charges do not drift. */
const round = (usd: number) => Math.round(usd * 1e6) / 1e6;

export class BudgetTracker {
  private constructor(
    private readonly limits: ReadonlyMap<string, Limit>,
    private readonly prices: ReadonlyMap<string, { input: number; output: number }>,
    private readonly runTokens: number | undefined,
    private readonly runCost: number | undefined,
    private readonly warnAt: number,
  ) {}

  /** A tracker when the budgets ask for anything it checks, else undefined (no cost on the hot path). */
  static create(flow: Flow, b: BudgetsT, teams: ReadonlySet<string>): BudgetTracker | undefined {
    if (!b.nodes?.length && b.maxCost === undefined && b.maxTokens === undefined) return undefined;
    const limits = new Map<string, Limit>();
    for (const n of b.nodes ?? []) {
      const l: Limit = { scope: teams.has(n.node) ? 'team' : 'node' };
      if (n.maxTokens !== undefined) l.tokens = n.maxTokens;
      if (n.maxCost !== undefined) l.cost = n.maxCost;
      limits.set(n.node, l);
    }
    const prices = new Map<string, { input: number; output: number }>();
    for (const [name, m] of Object.entries(flow.models)) if (m.pricing) prices.set(name, m.pricing);
    return new BudgetTracker(limits, prices, b.maxTokens, b.maxCost, b.warnAt ?? DEFAULT_WARN_AT);
  }

  /** One warning when spending crosses `warnAt` of the limit (so none is repeated after a resume), a stop past it. */
  private check(
    budget: 'tokens' | 'cost',
    limit: number,
    before: number,
    after: number,
    where: { scope?: 'node' | 'team'; nodeId?: string },
    out: BudgetHit[],
  ): void {
    const mark = limit * this.warnAt;
    if (before < mark && after >= mark)
      out.push({ kind: 'warning', budget, ...where, limit, used: after, fraction: this.warnAt });
    if (after > limit) out.push({ kind: 'exceeded', budget, ...where, limit, used: after });
  }

  /**
   * Charges one model reply of `nodeId` (inside the teams `ancestors`) made with the flow's model
   * `modelKey`; `runTokens` is the run's token total after it. Spending is kept in `use` (the
   * run's checkpointed counters, shared with nested runs). Returns warnings, then the first stop.
   */
  charge(
    nodeId: string,
    ancestors: readonly string[],
    modelKey: string | undefined,
    usage: { promptTokens: number; completionTokens: number },
    runTokens: number,
    use: Dict<number>,
  ): BudgetHit[] {
    const out: BudgetHit[] = [];
    const tokens = usage.promptTokens + usage.completionTokens;
    const price = modelKey === undefined ? undefined : this.prices.get(modelKey);
    const cost = price
      ? round((usage.promptTokens * price.input + usage.completionTokens * price.output) / 1e6)
      : 0;
    const add = (key: string, n: number, money: boolean): [number, number] => {
      const before = use[key] ?? 0;
      const after = money ? round(before + n) : before + n;
      use[key] = after;
      return [before, after];
    };
    if (this.runTokens !== undefined)
      this.check('tokens', this.runTokens, runTokens - tokens, runTokens, {}, out);
    if (this.runCost !== undefined)
      this.check('cost', this.runCost, ...add('run\u0000cost', cost, true), {}, out);
    // Innermost first: the node's own budget, then its teams from the nearest out.
    for (let i = ancestors.length; i >= 0; i--) {
      const id = i === ancestors.length ? nodeId : ancestors[i]!;
      const l = this.limits.get(id);
      if (!l) continue;
      const where = { scope: l.scope, nodeId: id };
      if (l.tokens !== undefined)
        this.check('tokens', l.tokens, ...add(`${id}\u0000tokens`, tokens, false), where, out);
      if (l.cost !== undefined) this.check('cost', l.cost, ...add(`${id}\u0000cost`, cost, true), where, out);
    }
    const stop = out.find((h) => h.kind === 'exceeded');
    return stop ? [...out.filter((h) => h.kind === 'warning'), stop] : out;
  }
}
