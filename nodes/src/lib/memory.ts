/**
 * Memory policies: which committed messages an agent sees. Pure functions over the transcript so
 * the incremental-summary guarantee can be proven by a property test: every message is either
 * covered by the summary (seq ≤ coversSeq) or present in the view.
 */
import type { MemoryPolicy, Message, Summary } from '../runtime-api.js';

export interface ViewOptions {
  nodeId: string;
  /** Messages before this seq are hidden (a handover with context `none`/`lastN` set it). */
  floor?: number;
  /** Seqs of the node's own thread (its messages and what was handed or addressed to it). */
  thread?: readonly number[];
  summary?: Summary;
}

/** Index of the first message with seq > `after` (transcript seqs are strictly increasing). */
export function firstAfter(transcript: readonly Message[], after: number): number {
  let lo = 0;
  let hi = transcript.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (transcript[mid]!.seq <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The `thread` policy: the messages of a thread (seqs), from `floor` on. */
export function threadView(
  transcript: readonly Message[],
  thread: readonly number[],
  floor: number,
): readonly Message[] {
  // At most one message per seq: sized once, trimmed to what was found.
  const out = new Array<Message>(thread.length);
  let n = 0;
  for (let k = 0; k < thread.length; k++) {
    const seq = thread[k]!;
    if (seq < floor) continue;
    const i = firstAfter(transcript, seq - 1);
    const m = transcript[i];
    if (m && m.seq === seq) out[n++] = m;
  }
  if (n < out.length) out.length = n;
  return out;
}

export function memoryView(
  transcript: readonly Message[],
  memory: MemoryPolicy,
  opts: ViewOptions,
): readonly Message[] {
  const floor = opts.floor ?? 0;
  if (memory === 'thread') return threadView(transcript, opts.thread ?? [], floor);
  let after = floor - 1;
  if (memory === 'summary' && opts.summary && opts.summary.coversSeq > after) after = opts.summary.coversSeq;
  const i = firstAfter(transcript, after);
  return i === 0 ? transcript : transcript.slice(i);
}

/** The messages a new summary must condense: everything after the previous summary. */
export function messagesToSummarize(
  transcript: readonly Message[],
  previous: Summary | undefined,
): readonly Message[] {
  return transcript.slice(firstAfter(transcript, previous?.coversSeq ?? 0));
}
