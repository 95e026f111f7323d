/**
 * The validator and the serializer run in a web worker after an edit (`validate.worker.ts`): on
 * a flow of a thousand nodes each takes tens of milliseconds, which typing would otherwise feel.
 * Only the answer about the latest request counts; the serialized text comes back with it, so
 * that the save state and autosave do not serialize the flow again on the main thread.
 */
import type { Flow, Problem } from '@switchboard/schemas';

export interface OffThreadAnswer {
  id: number;
  errors?: Problem[];
  warnings?: Problem[];
  text?: string;
  failed?: string;
}

export class OffThread {
  private worker: Worker | undefined;
  private latest = 0;
  private broken = false;

  /**
   * @param start starts the worker
   * @param answer receives the answer to the latest request only
   * @param failed the worker could not run or threw: the caller validates on its own
   */
  constructor(
    private readonly start: () => Worker,
    private readonly answer: (a: OffThreadAnswer) => void,
    private readonly failed: () => void,
  ) {}

  get usable(): boolean {
    return !this.broken;
  }

  /** Sends a flow; returns the request's id. */
  send(flow: Flow): number {
    const id = ++this.latest;
    this.ensure()?.postMessage({ id, flow });
    return id;
  }

  /** Whatever is on its way is out of date. */
  drop(): void {
    this.latest++;
  }

  /** Starts the worker ahead of the first edit, so that its first answer is not slowed by its start. */
  warm(flow: Flow): void {
    this.ensure()?.postMessage({ id: -1, flow });
  }

  dispose(): void {
    this.worker?.terminate();
    this.worker = undefined;
  }

  private ensure(): Worker | undefined {
    if (this.worker || this.broken) return this.worker;
    try {
      const worker = this.start();
      worker.onmessage = (e: MessageEvent<OffThreadAnswer>) => {
        if (e.data.id !== this.latest) return;
        if (e.data.failed !== undefined) this.failed();
        else this.answer(e.data);
      };
      worker.onerror = () => {
        worker.terminate();
        this.worker = undefined;
        this.broken = true;
        this.failed();
      };
      this.worker = worker;
    } catch {
      this.broken = true;
    }
    return this.worker;
  }
}
