/**
 * Token and cost budgets beyond the run's token total: per node, per team (everything called
 * inside the team, nested teams included) and the run's cost. Each model reply is charged to
 * its node and every team around it; a budget reaching `warnAt` of its limit gives one warning,
 * a budget going over gives a named stop. (The run's token total stays in run.ts, which already
 * counts it; this module only adds its warning.)
 */
import type { BudgetsT, Flow } from '@switchboard/schemas';

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
  private readonly used = new Map<string, number>();
  private readonly warned = new Set<string>();

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
    for (const [name, m] of Object.entries(flow.models)) if (m.cost) prices.set(name, m.cost);
    return new BudgetTracker(limits, prices, b.maxTokens, b.maxCost, b.warnAt ?? DEFAULT_WARN_AT);
  }

  private check(
    key: string,
    budget: 'tokens' | 'cost',
    limit: number,
    used: number,
    where: { scope?: 'node' | 'team'; nodeId?: string },
    out: BudgetHit[],
  ): void {
    if (used >= limit * this.warnAt && !this.warned.has(key)) {
      this.warned.add(key);
      out.push({ kind: 'warning', budget, ...where, limit, used, fraction: this.warnAt });
    }
    if (used > limit) out.push({ kind: 'exceeded', budget, ...where, limit, used });
  }

  private add(key: string, n: number): number {
    const v = budgetRound(key, (this.used.get(key) ?? 0) + n);
    this.used.set(key, v);
    return v;
  }

  /**
   * Charges one model reply of `nodeId` (inside the teams `ancestors`) made with the flow's model
   * `modelKey`; `runTokens` is the run's token total after it. Returns warnings, then the first stop.
   */
  charge(
    nodeId: string,
    ancestors: readonly string[],
    modelKey: string | undefined,
    usage: { promptTokens: number; completionTokens: number },
    runTokens: number,
  ): BudgetHit[] {
    const out: BudgetHit[] = [];
    const tokens = usage.promptTokens + usage.completionTokens;
    const price = modelKey === undefined ? undefined : this.prices.get(modelKey);
    const cost = price
      ? round((usage.promptTokens * price.input + usage.completionTokens * price.output) / 1e6)
      : 0;
    if (this.runTokens !== undefined)
      this.check('run\u0000tokens', 'tokens', this.runTokens, runTokens, {}, out);
    if (this.runCost !== undefined)
      this.check('run\u0000cost', 'cost', this.runCost, this.add('run\u0000cost', cost), {}, out);
    // Innermost first: the node's own budget, then its teams from the nearest out.
    for (const id of [nodeId, ...[...ancestors].reverse()]) {
      const l = this.limits.get(id);
      if (!l) continue;
      const where = { scope: l.scope, nodeId: id };
      if (l.tokens !== undefined)
        this.check(
          `${id}\u0000tokens`,
          'tokens',
          l.tokens,
          this.add(`${id}\u0000tokens`, tokens),
          where,
          out,
        );
      if (l.cost !== undefined)
        this.check(`${id}\u0000cost`, 'cost', l.cost, this.add(`${id}\u0000cost`, cost), where, out);
    }
    const stop = out.find((h) => h.kind === 'exceeded');
    return stop ? [...out.filter((h) => h.kind === 'warning'), stop] : out;
  }
}

function budgetRound(key: string, v: number): number {
  return key.endsWith('\u0000cost') ? round(v) : v;
}
