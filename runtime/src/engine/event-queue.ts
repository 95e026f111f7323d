/**
 * The run's event stream as an async iterable for one consumer. Events are buffered only once
 * the consumer has asked for the iterable, and dropped as soon as they are delivered, so a run
 * whose events go to `onEvent` alone keeps none of them in memory.
 */
import type { RunEvent } from '@switchboard/schemas';

export class EventQueue implements AsyncIterable<RunEvent> {
  private buf: RunEvent[] = [];
  private head = 0;
  private waiter: ((r: IteratorResult<RunEvent>) => void) | undefined;
  private closed = false;
  private attached = false;

  /** True once a consumer asked for the stream; before that, nothing is buffered. */
  get active(): boolean {
    return this.attached;
  }

  attach(): void {
    this.attached = true;
  }

  push(e: RunEvent): void {
    if (!this.attached || this.closed) return;
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w({ value: e, done: false });
      return;
    }
    this.buf.push(e);
  }

  close(): void {
    this.closed = true;
    const w = this.waiter;
    if (w && this.head >= this.buf.length) {
      this.waiter = undefined;
      w({ value: undefined, done: true });
    }
  }

  private next(): Promise<IteratorResult<RunEvent>> {
    if (this.head < this.buf.length) {
      const value = this.buf[this.head]!;
      this.buf[this.head++] = undefined as never;
      if (this.head > 1024 && this.head * 2 > this.buf.length) {
        this.buf = this.buf.slice(this.head);
        this.head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<RunEvent> {
    this.attached = true;
    return {
      next: () => this.next(),
      return: () => {
        this.closed = true;
        this.buf = [];
        this.head = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
