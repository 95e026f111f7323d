/**
 * The one fact a node's face shows under its name, the thing one needs at a glance: an agent's
 * model, a team's mode, how many conditions a decider weighs, what a tool serves. Kinds the
 * editor does not know here fall back to their own `summary`, so a third-party kind still gets
 * a line without a change in the editor.
 */
import type { NodeKindDefinition } from '@switchboard/nodes';

const MODES = new Map<string, string>([
  ['handover', 'handover'],
  ['groupChat', 'group chat'],
  ['fsm', 'state machine'],
]);

const STRATEGIES = new Map<string, string>([
  ['llm', 'LLM arbiter'],
  ['rules', 'rules'],
  ['roundRobin', 'round robin'],
]);

const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? '' : 's'}`;
}

/** How many leaf conditions a rule's `when` holds (`all`/`any`/`not` groups counted through). */
export function countConditions(c: unknown): number {
  if (!c || typeof c !== 'object') return 0;
  const o = c as Record<string, unknown>;
  if (Array.isArray(o.all)) return o.all.reduce<number>((n, x) => n + countConditions(x), 0);
  if (Array.isArray(o.any)) return o.any.reduce<number>((n, x) => n + countConditions(x), 0);
  if ('not' in o) return countConditions(o.not);
  if (o.always === true) return 0;
  return 1;
}

function deciderFact(c: Record<string, unknown>): string {
  const strategy = STRATEGIES.get(String(c.strategy)) ?? String(c.strategy ?? 'rules');
  if (c.strategy !== 'rules' && c.strategy !== undefined) {
    const model = str(c.model);
    return model ? `${strategy} · ${model}` : strategy;
  }
  const rules = Array.isArray(c.rules) ? c.rules : [];
  const conditions = rules.reduce<number>(
    (n, r) => n + countConditions((r as { when?: unknown } | null)?.when),
    0,
  );
  return `${plural(conditions, 'condition')} · ${plural(rules.length, 'rule')}`;
}

function teamFact(c: Record<string, unknown>): string {
  const mode = MODES.get(String(c.mode)) ?? String(c.mode ?? '');
  const t = (c.termination ?? {}) as Record<string, unknown>;
  return typeof t.maxTurns === 'number' ? `${mode} · ≤ ${t.maxTurns} turns` : mode;
}

/** The face's fact line for a node of `def` with `config`; '' when there is nothing to say. */
export function faceFact(def: NodeKindDefinition | undefined, config: Record<string, unknown>): string {
  if (!def) return '';
  switch (def.kind) {
    case 'agent':
      return str(config.model) ? `model: ${config.model}` : '';
    case 'team':
      return teamFact(config);
    case 'decider':
      return deciderFact(config);
    case 'observer':
      return [str(config.type), str(config.when) ?? 'after'].filter(Boolean).join(' · ');
    case 'tool':
      return str(config.server) ? `server: ${config.server}` : '';
    case 'human':
      return str(config.question) ?? str(config.mode) ?? '';
    case 'note':
      return '';
  }
  if (!def.summary) return '';
  try {
    return String(def.summary(config as never) ?? '');
  } catch {
    // A config the kind cannot summarise is invalid; the problems list says why.
    return '';
  }
}
