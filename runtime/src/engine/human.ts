/**
 * Human answers: questions a node asks a person (`input.requested` / `input.received`), answers
 * that arrive before or while they are asked (`answer` commands, `options.answers`), and MCP
 * elicitations asked as human input. Owns the answers not yet taken and the questions waiting.
 */
import { NodeError } from '@switchboard/nodes/core';
import { ownValue } from '@switchboard/schemas/core';
import type { ElicitationAnswer, ElicitationAsk } from '../tools/types.js';
import type { Checkpoints } from './checkpoints.js';
import { type Ctx, NO_ENTRIES, own, type RunCore } from './context.js';
import { answerElicitation, elicitationFromText } from './elicitation.js';

export class HumanInput {
  private pendingAnswers: ReadonlyMap<string, string[]> = NO_ENTRIES;
  private waiters: ReadonlyMap<string, (answer: string) => void> = NO_ENTRIES;

  constructor(
    private readonly run: RunCore,
    /**
     * A human node's wait for a person closes its step (and checkpoints the run): a person may
     * take days, and the run's other branches keep being checkpointed meanwhile. A wait inside
     * a step (an elicitation during a tool call) keeps the step open.
     */
    private readonly checkpoints: Pick<Checkpoints, 'enter' | 'leave' | 'asked'>,
    restored: Readonly<Record<string, readonly string[]>> | undefined,
  ) {
    if (!restored) return;
    const answers = new Map<string, string[]>();
    for (const [key, list] of Object.entries(restored)) answers.set(key, [...list]);
    if (answers.size > 0) this.pendingAnswers = answers;
  }

  /** An `answer` command: to the question of `nodeId` (or the first one waiting), or kept for later. */
  answer(nodeId: string | undefined, text: string): void {
    const key = nodeId ?? [...this.waiters.keys()][0] ?? '*';
    const w = this.waiters.get(key);
    if (w) w(text);
    else {
      const l = this.pendingAnswers.get(key) ?? [];
      l.push(text);
      const answers = own(this.pendingAnswers);
      answers.set(key, l);
      this.pendingAnswers = answers;
    }
  }

  /** The run stopped: every question waiting gets an empty answer (and finds the run's stop). */
  wakeAll(): void {
    for (const w of this.waiters.values()) w('');
  }

  /** Answers not yet taken, as a checkpoint keeps them (undefined: none). */
  pending(): Record<string, string[]> | undefined {
    return this.pendingAnswers.size > 0 ? Object.fromEntries(this.pendingAnswers) : undefined;
  }

  /** Asks a person on behalf of node `nodeId` (a human node, or an agent whose tool asked). */
  async ask(
    cx: Ctx,
    nodeId: string,
    question: string,
    o: {
      options?: string[] | undefined;
      timeoutMs?: number | undefined;
      form?: Record<string, unknown>;
      /**
       * Asked inside the step (an MCP elicitation during a tool call): the wait is no boundary
       * and cuts no checkpoint — one cut there would name the step's start while the model has
       * served its replies and its tool call is under way, so a resumed run would replay the step
       * against a script moved past it. The run resumes from the checkpoint before the step and
       * asks again.
       */
      inStep?: boolean;
    },
  ): Promise<string> {
    const run = this.run;
    const ev: Record<string, unknown> = { type: 'input.requested', nodeId, question };
    if (o.options) ev.options = o.options;
    if (o.form) ev.form = o.form;
    run.events.emit(cx, ev);
    let answer = this.takeAnswer(cx, nodeId);
    if (answer === undefined) {
      if ((run.options.humanInput ?? 'wait') === 'fail')
        throw new NodeError(
          'human_input_required',
          `human node "${nodeId}" needs an answer to "${question.slice(0, 200)}" and none was supplied`,
          1,
          false,
        );
      run.status = 'waiting';
      if (o.inStep) {
        this.checkpoints.asked(true);
        try {
          answer = await this.waitForAnswer(nodeId, o.timeoutMs);
        } finally {
          this.checkpoints.asked(false);
        }
      } else
        try {
          const cp = this.checkpoints.leave(cx, true);
          if (cp) await cp;
          if (run.stop) throw run.stop;
          // An answer that came in while the checkpoint was written is taken, not waited for.
          answer = this.takeAnswer(cx, nodeId) ?? (await this.waitForAnswer(nodeId, o.timeoutMs));
        } finally {
          const w = this.checkpoints.enter(cx);
          if (w) await w;
        }
      if (run.stop) throw run.stop;
      run.status = 'running';
    }
    run.events.emit(cx, { type: 'input.received', nodeId, answer });
    return answer;
  }

  /**
   * An MCP server's elicitation during a tool call of `nodeId`, by the run's policy: asked as
   * human input of the run (`ask`, the default where someone can answer: servers, terminals,
   * served flows), the form's defaults, or declined.
   */
  async elicit(cx: Ctx, nodeId: string, tool: string, ask: ElicitationAsk): Promise<ElicitationAnswer> {
    const options = this.run.options;
    const policy = options.elicitation ?? ((options.humanInput ?? 'wait') === 'wait' ? 'ask' : 'decline');
    let a: ElicitationAnswer;
    if (policy !== 'ask') a = answerElicitation(ask, policy);
    else
      try {
        a = elicitationFromText(
          ask,
          await this.ask(cx, nodeId, ask.message, { form: ask.requestedSchema, inStep: true }),
        );
      } catch (e) {
        if (this.run.stop) throw this.run.stop;
        if (!(e instanceof NodeError && e.code === 'human_input_required')) throw e;
        a = { action: 'decline' };
      }
    const outcome =
      a.action === 'accept'
        ? policy === 'accept-defaults'
          ? 'accepted its defaults'
          : 'accepted'
        : a.action === 'cancel'
          ? 'cancelled'
          : 'declined';
    this.run.events.emit(cx, {
      type: 'log',
      nodeId,
      level: 'info',
      text: `${tool} asked ${JSON.stringify(ask.message.slice(0, 200))}: ${outcome}`,
    });
    return a;
  }

  private waitForAnswer(nodeId: string, timeoutMs: number | undefined): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiters = own(this.waiters);
      this.waiters = waiters;
      waiters.set(nodeId, (a) => {
        if (timer) clearTimeout(timer);
        waiters.delete(nodeId);
        resolve(a);
      });
      if (timeoutMs !== undefined)
        timer = setTimeout(() => {
          waiters.delete(nodeId);
          reject(
            new NodeError(
              'human_timeout',
              `human node "${nodeId}" got no answer within ${timeoutMs} ms`,
              1,
              false,
            ),
          );
        }, timeoutMs);
    });
  }

  private takeAnswer(cx: Ctx, nodeId: string): string | undefined {
    for (const key of [nodeId, '*']) {
      const l = this.pendingAnswers.get(key);
      if (l && l.length > 0) return l.shift();
    }
    const given = ownValue(this.run.options.answers, nodeId);
    if (given === undefined) return undefined;
    if (typeof given === 'string') return given;
    const pos = cx.data.answerPos[nodeId] ?? 0;
    if (pos >= given.length) return undefined;
    cx.data.answerPos[nodeId] = pos + 1;
    return given[pos];
  }
}
