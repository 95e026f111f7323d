/** Collects problems for one validation, capping both lists so hostile input cannot flood them. */
import { type Problem, problem } from './codes.js';

export class Collector {
  readonly errors: Problem[] = [];
  readonly warnings: Problem[] = [];
  private droppedErrors = 0;
  private droppedWarnings = 0;
  private stoppedEarly = false;

  constructor(private readonly max: number) {}

  error(p: Problem): void {
    if (this.errors.length < this.max) this.errors.push(p);
    else this.droppedErrors++;
  }

  warn(p: Problem): void {
    if (this.warnings.length < this.max) this.warnings.push(p);
    else this.droppedWarnings++;
  }

  /** True once the error list is full; expensive checks stop early then. */
  get full(): boolean {
    if (this.errors.length < this.max) return false;
    this.stoppedEarly = true;
    return true;
  }

  /** Adds one `too-many-errors` entry per list that overflowed. */
  finish(): void {
    if (this.droppedErrors > 0)
      this.errors.push(problem('too-many-errors', '', `${this.droppedErrors} more errors not shown`));
    else if (this.stoppedEarly)
      this.errors.push(
        problem('too-many-errors', '', `checking stopped after ${this.max} errors; there may be more`),
      );
    if (this.droppedWarnings > 0)
      this.warnings.push(problem('too-many-errors', '', `${this.droppedWarnings} more warnings not shown`));
  }
}
