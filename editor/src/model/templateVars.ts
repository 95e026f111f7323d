/**
 * Template variables understood in prompts, briefings, questions and end templates. The prompt
 * editor offers them for insertion and warns about names the runtime will not fill in.
 */
export const TEMPLATE_VARS = [
  { name: 'task', help: 'the run input' },
  { name: 'summary', help: 'the latest summary of the transcript' },
  { name: 'inbox', help: "the agent's pending inbox items" },
  { name: 'last', help: 'the last message' },
  { name: 'state.', help: 'a key of the run state, e.g. {{state.plan}}' },
] as const;

export interface TemplateCheck {
  /** Variables used, in order of first use. */
  used: string[];
  /** Variables the runtime does not know. */
  unknown: string[];
  /** A `{{` without its `}}`. */
  unclosed: boolean;
}

const KNOWN = new Set(['task', 'summary', 'inbox', 'last', 'input']);
const STATE = /^state(\.[A-Za-z0-9_-]+)+$/;

export function checkTemplate(text: string): TemplateCheck {
  const used: string[] = [];
  const unknown: string[] = [];
  const re = /\{\{\s*([^{}]*?)\s*\}\}/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const name = m[1]!;
    if (!used.includes(name)) used.push(name);
    if (!KNOWN.has(name) && !STATE.test(name) && !unknown.includes(name)) unknown.push(name);
  }
  const opens = (text.match(/\{\{/g) ?? []).length;
  const closes = (text.match(/\}\}/g) ?? []).length;
  return { used, unknown, unclosed: opens > closes };
}

/** Whether a string field holds a template (its description names a template variable). */
export function isTemplateField(key: string, description: string | undefined): boolean {
  return /\{\{/.test(description ?? '') || ['briefing', 'template', 'question', 'message'].includes(key);
}
