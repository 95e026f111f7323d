/** Short texts shown on edges: a decider's condition for the edge, or a handover's protocol. */
import type { FlowEdgeT } from '@switchboard/schemas';

const OPS: Record<string, string> = {
  eq: '=',
  ne: '≠',
  gt: '>',
  gte: '≥',
  lt: '<',
  lte: '≤',
  contains: 'contains',
  notContains: 'lacks',
  regex: '~',
  exists: 'exists',
  empty: 'is empty',
};

/** A condition in one line: `last.json.ok = true`, `a ∧ b`, `¬a`, `always`. */
export function describeCondition(c: unknown): string {
  if (!c || typeof c !== 'object') return '?';
  const o = c as Record<string, unknown>;
  if (Array.isArray(o.all)) return o.all.map(describeCondition).join(' ∧ ') || 'always';
  if (Array.isArray(o.any)) return o.any.map(describeCondition).join(' ∨ ') || 'never';
  if ('not' in o) return `¬(${describeCondition(o.not)})`;
  if (o.always === true) return 'always';
  const op = OPS[String(o.op)] ?? String(o.op);
  const v = o.value === undefined ? '' : ` ${JSON.stringify(o.value)}`;
  return `${String(o.path)} ${op}${v}`;
}

// Bounded only so that a huge label cannot bloat the DOM: the canvas truncates what it draws and
// shows the whole caption on hover.
function clip(s: string, max = 200): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** What a handover hands over, in a few words. */
export function describeHandover(config: Record<string, unknown> | undefined): string {
  const parts: string[] = [];
  const ctx = config?.context as { mode?: string; n?: number; keys?: string[] } | undefined;
  if (ctx?.mode === 'none') parts.push('no context');
  else if (ctx?.mode === 'lastN') parts.push(`last ${ctx.n ?? '?'}`);
  else if (ctx?.mode === 'summary') parts.push('summary');
  else if (ctx?.mode === 'state') parts.push(`state: ${(ctx.keys ?? []).join(', ') || '—'}`);
  else if (ctx?.mode === 'all') parts.push('all');
  if (typeof config?.briefing === 'string' && config.briefing) parts.push('briefing');
  if (typeof config?.branch === 'string') parts.push(config.branch);
  if (config?.escalation === true) parts.push('escalation');
  return parts.join(' · ');
}

/** Rules of a decider that send control along `edgeId`, as one caption. */
export function describeDeciderChoice(deciderConfig: Record<string, unknown>, edgeId: string): string {
  const out: string[] = [];
  const rules = Array.isArray(deciderConfig.rules) ? deciderConfig.rules : [];
  for (const r of rules as Array<{ when?: unknown; to?: unknown }>) {
    const to = Array.isArray(r?.to) ? r.to : [r?.to];
    if (to.includes(edgeId)) out.push(describeCondition(r.when));
  }
  if (deciderConfig.default === edgeId) out.push('default');
  return out.join(' | ');
}

/**
 * The caption of an edge. `sourceRole`/`sourceConfig` describe its source node, because a
 * decider's rules, not the edge, say when the edge is taken.
 */
export function edgeCaption(
  edge: Pick<FlowEdgeT, 'id' | 'kind' | 'label' | 'config'>,
  sourceRole: string | undefined,
  sourceConfig: Record<string, unknown> | undefined,
): string {
  const cfg = edge.config ?? {};
  let text = '';
  if (edge.kind === 'handover')
    text =
      sourceRole === 'decider' && sourceConfig
        ? describeDeciderChoice(sourceConfig, edge.id) || describeHandover(cfg)
        : describeHandover(cfg);
  else if (edge.kind === 'tools')
    text = Array.isArray(cfg.allow) ? `allow: ${(cfg.allow as string[]).join(', ')}` : '';
  else if (edge.kind === 'delegate')
    text = typeof cfg.toolName === 'string' ? `as ${cfg.toolName}` : 'delegate';
  const label = edge.label ?? '';
  return clip([label, text].filter(Boolean).join(' — '));
}
