/**
 * Turns a child's stderr into bounded log lines: long lines are cut, a line without a newline
 * cannot grow past a cap, and a flood is rate-limited (the number of dropped lines is reported).
 * Memory stays bounded whatever the child writes.
 */
export interface StderrLinesOptions {
  maxLineChars?: number;
  /** Lines let through per second (token bucket refill). */
  perSecond?: number;
  /** Bucket size: a burst of this many lines passes at once. */
  burst?: number;
}

export class StderrLines {
  private partial = '';
  private tokens: number;
  private last = Date.now();
  private dropped = 0;
  private readonly maxLine: number;
  private readonly perSecond: number;
  private readonly burst: number;

  constructor(
    private readonly emit: (line: string) => void,
    o: StderrLinesOptions = {},
  ) {
    this.maxLine = o.maxLineChars ?? 2000;
    this.perSecond = o.perSecond ?? 50;
    this.burst = o.burst ?? 200;
    this.tokens = this.burst;
  }

  push(chunk: Buffer | string): void {
    let s = this.partial + (typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
    let nl = s.indexOf('\n');
    while (nl >= 0) {
      this.line(s.slice(0, nl).replace(/\r$/, ''));
      s = s.slice(nl + 1);
      nl = s.indexOf('\n');
    }
    // A line that never ends is cut into capped pieces.
    while (s.length > this.maxLine) {
      this.line(s.slice(0, this.maxLine));
      s = s.slice(this.maxLine);
    }
    this.partial = s;
  }

  /** Emits what is left and the count of lines dropped by the rate limit. */
  flush(): void {
    if (this.partial) this.line(this.partial);
    this.partial = '';
    if (this.dropped) {
      this.emit(`[${this.dropped} stderr lines dropped: more than ${this.perSecond} lines per second]`);
      this.dropped = 0;
    }
  }

  private line(l: string): void {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < 1) {
      this.dropped++;
      return;
    }
    this.tokens -= 1;
    if (this.dropped) {
      this.emit(`[${this.dropped} stderr lines dropped: more than ${this.perSecond} lines per second]`);
      this.dropped = 0;
    }
    this.emit(l.length > this.maxLine ? `${l.slice(0, this.maxLine)}…` : l);
  }
}
