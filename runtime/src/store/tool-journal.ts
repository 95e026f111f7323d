/**
 * A per-run journal of tool calls, so that a crash never turns into a blind repeat of a
 * call with side effects. Before a call its intent is appended and fsynced; after it, its
 * result. After a restart, the calls made since the last checkpoint are replayed in order:
 * a call with a recorded result gets that result again without executing; a call with only
 * an intent may or may not have run (`maybe-executed`) and is not repeated.
 */
import {
  closeSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  openSync,
  readFileSync,
  writeSync,
} from 'node:fs';
import { promisify } from 'node:util';
import { StoreError } from './errors.js';
import { fault, faultAsync } from './faults.js';
import { writeAll } from './fd-io.js';

const fdatasyncAsync = promisify(fdatasync);

export interface JournalIntent {
  k: 'intent';
  /** Ordinal of the call in the run (across resumes). */
  n: number;
  tool: string;
  /** Hash of the canonical arguments. */
  args: string;
  /** Log seq of the last checkpoint when the call was made. */
  cp: number;
}

export interface JournalDone {
  k: 'done';
  n: number;
  result: { content: string; isError: boolean; structured?: unknown };
}

export type JournalEntry = JournalIntent | JournalDone;

export interface JournalCall {
  intent: JournalIntent;
  done?: JournalDone;
}

export class ToolJournal {
  private fd: number;
  private next: number;
  private closed = false;
  private failure: Error | undefined;
  readonly calls: JournalCall[];

  private constructor(
    readonly file: string,
    fd: number,
    calls: JournalCall[],
  ) {
    this.fd = fd;
    this.calls = calls;
    this.next = (calls.at(-1)?.intent.n ?? 0) + 1;
  }

  static open(file: string): ToolJournal {
    const calls: JournalCall[] = [];
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    const lines = text.split('\n');
    const byN = new Map<number, JournalCall>();
    let good = 0;
    lines.forEach((line, i) => {
      if (line === '') return;
      let e: JournalEntry;
      try {
        e = JSON.parse(line) as JournalEntry;
      } catch {
        // A torn last line is an intent or result that never reached the disk whole:
        // for an intent the call had not started yet (we fsync before calling).
        if (i === lines.length - 1) return;
        throw new StoreError('corrupt-log', `${file}: line ${i + 1} is not JSON`, file);
      }
      good += Buffer.byteLength(line) + 1;
      if (e.k === 'intent') {
        const c = { intent: e };
        calls.push(c);
        byN.set(e.n, c);
      } else if (e.k === 'done') {
        const c = byN.get(e.n);
        if (c) c.done = e;
      }
    });
    fault('open', file);
    const fd = openSync(file, 'a', 0o600);
    // Cut a torn tail so the next line starts clean.
    if (good < Buffer.byteLength(text)) ftruncateSync(fd, good);
    else if (text.length > 0 && !text.endsWith('\n')) writeSync(fd, '\n');
    return new ToolJournal(file, fd, calls);
  }

  /** Records the intent durably; resolves before the tool may be called. */
  async intent(tool: string, args: string, cp: number): Promise<JournalIntent> {
    const e: JournalIntent = { k: 'intent', n: this.next++, tool, args, cp };
    await this.append(e, true);
    this.calls.push({ intent: e });
    return e;
  }

  async done(n: number, result: JournalDone['result']): Promise<void> {
    const e: JournalDone = { k: 'done', n, result };
    await this.append(e);
    const c = this.calls.find((x) => x.intent.n === n);
    if (c) c.done = e;
  }

  /**
   * One durable line. A failed write stops the journal: no later line may follow a torn one.
   * An intent that failed is cut off again when the disk lets us: the call was not made, and a
   * resume must not take it for one that may have been (`maybe-executed`).
   */
  private async append(e: JournalEntry, intent = false): Promise<void> {
    if (this.failure) throw this.failure;
    const before = fstatSync(this.fd).size;
    try {
      writeAll(this.fd, Buffer.from(`${JSON.stringify(e)}\n`), this.file);
      await (faultAsync('sync', this.file) ?? fdatasyncAsync(this.fd));
    } catch (err) {
      this.failure = err as Error;
      if (intent)
        try {
          ftruncateSync(this.fd, before);
          fdatasyncSync(this.fd);
        } catch {}
      throw err;
    }
  }

  /** Idempotent: a second close must not close whatever descriptor reused the number. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      closeSync(this.fd);
    } catch {}
  }
}
