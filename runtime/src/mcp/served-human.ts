/**
 * A human node of a served flow asked through MCP elicitation (form mode): the form is built
 * from the node's options, and the accepted content becomes the answer the engine expects.
 * A question is one string field (a choice among the node's options when it lists some, the
 * first preselected); an approve gate is an approve/reject choice plus an optional comment,
 * preselected on "reject" so that a client that accepts defaults never approves by itself.
 */
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { checkAgainstSchema, type Flow } from '@switchboard/schemas';

export interface HumanAsk {
  nodeId: string;
  question: string;
  options?: string[];
  mode: 'ask' | 'approve';
  timeoutMs?: number;
  /** A tool's own elicitation form, passed on to the caller as it is (see the engine's `elicitation: 'ask'`). */
  form?: Record<string, unknown>;
}

/** What an `input.requested` event asks, with the node's mode and timeout from the flow. */
export function humanAskOf(
  flow: Flow,
  e: { nodeId?: string; question?: unknown; options?: unknown; form?: unknown },
): HumanAsk | undefined {
  if (e.nodeId === undefined) return undefined;
  const node = flow.nodes.find((n) => n.id === e.nodeId);
  const cfg = (node?.config ?? {}) as { mode?: unknown; timeoutMs?: unknown };
  const ask: HumanAsk = {
    nodeId: e.nodeId,
    question: typeof e.question === 'string' ? e.question : '',
    mode: cfg.mode === 'approve' ? 'approve' : 'ask',
  };
  if (Array.isArray(e.options) && e.options.every((o) => typeof o === 'string') && e.options.length > 0)
    ask.options = e.options as string[];
  if (typeof cfg.timeoutMs === 'number') ask.timeoutMs = cfg.timeoutMs;
  if (e.form && typeof e.form === 'object' && !Array.isArray(e.form)) {
    ask.form = e.form as Record<string, unknown>;
    ask.mode = 'ask';
  }
  return ask;
}

/**
 * Whether the client can answer a form: `elicitation: {}` (the 2025-06-18 spelling, form
 * implied) or `elicitation: { form: {} }`; a client with only `url` cannot.
 */
export function canElicitForm(caps: ClientCapabilities | undefined): boolean {
  const e = caps?.elicitation as { form?: unknown; url?: unknown } | undefined;
  if (!e || typeof e !== 'object') return false;
  return e.form !== undefined || e.url === undefined;
}

export interface ElicitationForm {
  message: string;
  requestedSchema: {
    type: 'object';
    properties: Record<string, Record<string, unknown>>;
    required?: string[];
  };
}

export function elicitationForm(ask: HumanAsk): ElicitationForm {
  const message = ask.question || `The flow asks for input at "${ask.nodeId}".`;
  if (ask.form) return { message, requestedSchema: ask.form as ElicitationForm['requestedSchema'] };
  if (ask.mode === 'approve')
    return {
      message,
      requestedSchema: {
        type: 'object',
        properties: {
          decision: {
            type: 'string',
            title: 'Decision',
            oneOf: [
              { const: 'approve', title: 'Approve' },
              { const: 'reject', title: 'Reject' },
            ],
            default: 'reject',
          },
          comment: { type: 'string', title: 'Comment', description: 'Optional: a reason or an instruction.' },
        },
        required: ['decision'],
      },
    };
  const answer: Record<string, unknown> = { type: 'string', title: 'Answer', description: message };
  if (ask.options) {
    answer.enum = ask.options;
    answer.default = ask.options[0];
  }
  return { message, requestedSchema: { type: 'object', properties: { answer }, required: ['answer'] } };
}

/** The engine's answer from accepted content, or a sentence saying what is wrong with it. */
export function answerOf(ask: HumanAsk, content: unknown): { answer: string } | { problem: string } {
  const form = elicitationForm(ask);
  // A tool's form: its server checks the content; the engine reads it back from JSON.
  if (ask.form) return { answer: JSON.stringify(content ?? {}) };
  const check = checkAgainstSchema(form.requestedSchema, content ?? {});
  if (!check.valid) return { problem: check.errors.join('; ') };
  const c = content as Record<string, unknown>;
  if (ask.mode === 'approve') {
    const comment = typeof c.comment === 'string' ? c.comment.trim() : '';
    // "approve: …" / "reject: …" — the gate reads the verdict from the first word.
    return { answer: comment ? `${c.decision}: ${comment}` : String(c.decision) };
  }
  return { answer: String(c.answer) };
}
