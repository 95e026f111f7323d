/**
 * The flow's problems: validation a moment after the last edit (in a worker when the browser build
 * gives one, `offThread.ts`; else here, with the validator loaded on first need, `validator.ts`),
 * problems reported from elsewhere, and the per-id marks the faces show.
 */
import type { Flow, Problem } from '@switchboard/schemas/core';
import { KeyedStore } from './keyed.js';
import { OffThread, type OffThreadAnswer } from './offThread.js';
import type { FlowValidator, ProblemMark, ProblemSet } from './types.js';

/** Flows up to this many nodes are validated as they load; larger ones a moment after. */
const VALIDATE_AT_ONCE_MAX = 1000;

/** What validation reads of the document (`FlowDocument`). */
export interface ValidatedDoc {
  /** The flow, not copied. */
  flow(): Flow;
  readonly version: number;
  readonly nodeCount: number;
  readonly hasText: boolean;
  offerText(text: string): void;
  serialize(): string;
}

export interface ProblemsOptions {
  /** Milliseconds of quiet after an edit before validation runs. */
  delay: number;
  validate?: FlowValidator;
  worker?: () => Worker;
}

export class Problems {
  /** Per node/edge id: `''`, or `error\n…messages` / `warning\n…messages`. */
  readonly marks = new KeyedStore<ProblemMark>('');
  private set: ProblemSet = { errors: [], warnings: [] };
  private readonly listeners = new Set<() => void>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly delay: number;
  private validator: FlowValidator | undefined;
  private validatorLoading: Promise<FlowValidator> | undefined;
  /** Validation and serialization after edits, in a worker (when the browser build gives one). */
  private readonly offThread: OffThread | undefined;
  /** The document version the request in flight to the worker is about. */
  private offThreadVersion = -1;
  private readonly textWaiters: Array<() => void> = [];

  constructor(
    private readonly doc: ValidatedDoc,
    opts: ProblemsOptions,
  ) {
    this.delay = opts.delay;
    this.validator = opts.validate;
    this.offThread = opts.worker
      ? new OffThread(
          opts.worker,
          (a) => this.offThreadAnswer(a),
          () => {
            this.offThreadVersion = -1;
            this.validateNow();
            this.wakeTextWaiters();
          },
        )
      : undefined;
    // Fetched while the editor draws, so that it is at hand for the first flow loaded.
    if (!this.validator && typeof window !== 'undefined') void this.loadValidator();
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.offThread?.dispose();
  }

  get current(): ProblemSet {
    return this.set;
  }

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  /**
   * Runs the validator now (normally it runs a moment after the last edit). Before the validator
   * has loaded, it loads it and validates then; `validated()` waits for that.
   */
  validateNow(): ProblemSet {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    // An answer the worker is still working on is older than this.
    this.offThread?.drop();
    const validate = this.validator;
    if (!validate) {
      void this.loadValidator().then(() => this.validateNow());
      return this.set;
    }
    const r = validate(this.doc.flow());
    this.setProblems({ errors: r.errors, warnings: r.warnings });
    return this.set;
  }

  /** Validates the document as it is now, loading the validator first if needed. */
  async validated(): Promise<ProblemSet> {
    await this.loadValidator();
    return this.validateNow();
  }

  private loadValidator(): Promise<FlowValidator> {
    if (this.validator) return Promise.resolve(this.validator);
    this.validatorLoading ??= import('./validator.js').then((m) => {
      this.validator = m.validate;
      return m.validate;
    });
    return this.validatorLoading;
  }

  /** Shows problems reported from elsewhere (the server refusing a save). */
  setProblems(set: ProblemSet): void {
    this.set = set;
    const marks = new Map<string, string[]>();
    const add = (p: Problem, sev: string) => {
      const id = p.nodeId ?? p.edgeId;
      if (!id) return;
      const list = marks.get(id) ?? [];
      if (list.length === 0) list.push(sev);
      list.push(p.message);
      marks.set(id, list);
    };
    for (const p of set.errors) add(p, 'error');
    for (const p of set.warnings) add(p, 'warning');
    this.marks.replaceAll(new Map([...marks].map(([k, v]) => [k, v.join('\n')])));
    for (const fn of this.listeners) fn();
  }

  /**
   * A flow just loaded shows its problems with its first drawing; a very large one is validated
   * a moment later instead, so that it is drawn sooner (at 5,000 nodes validation takes a good
   * part of a second).
   */
  validateLoaded(): void {
    if (this.doc.nodeCount <= VALIDATE_AT_ONCE_MAX) {
      this.validateNow();
      // The worker starts (and compiles its schemas) now rather than at the first pause in typing.
      this.offThread?.warm(this.doc.flow());
    } else this.schedule();
  }

  /** Validates a moment after the last edit. */
  schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.validateSoon(), this.delay);
  }

  /** Validates in the worker when there is one (the answer comes a moment later), else here. */
  private validateSoon(): void {
    this.timer = undefined;
    if (!this.offThread?.usable) {
      this.validateNow();
      return;
    }
    this.offThreadVersion = this.doc.version;
    this.offThread.send(this.doc.flow());
  }

  private offThreadAnswer(a: OffThreadAnswer): void {
    const current = this.offThreadVersion === this.doc.version;
    this.offThreadVersion = -1;
    if (current && a.text !== undefined) this.doc.offerText(a.text);
    // Problems about an older state are dropped: a newer request follows the newer edit.
    if (current || !this.timer) this.setProblems({ errors: a.errors ?? [], warnings: a.warnings ?? [] });
    this.wakeTextWaiters();
  }

  private wakeTextWaiters(): void {
    for (const fn of this.textWaiters.splice(0)) fn();
  }

  /**
   * The serialized flow as it is now, without serializing on the main thread when the worker is
   * about to send it (the save state and autosave wait a moment after an edit anyway); undefined
   * when the document changed while waiting.
   */
  async settledText(): Promise<string | undefined> {
    const version = this.doc.version;
    if (!this.doc.hasText && this.offThreadVersion === version && this.offThread?.usable)
      await new Promise<void>((resolve) => this.textWaiters.push(resolve));
    // Changed meanwhile: the caller waits for the next quiet moment.
    return this.doc.version === version ? this.doc.serialize() : undefined;
  }
}
