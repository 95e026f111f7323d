/**
 * Fault injection for the store's file I/O. Every write path of the store (event logs,
 * checkpoints, the tool journal, the catalog and flow files, room files, run specs) asks
 * `fault(op, path)` before it touches the disk, so tests can make any of them fail the way a
 * full disk, a dying disk or a vanished directory does — with the errno the kernel would give —
 * or never return, as a write to a hung disk does. Nothing is injected unless a test installs
 * rules (in-process with {@link injectFaults}, or in a child process through
 * `SWITCHBOARD_FAULTS`, a JSON array of rules), so the cost in production is one array check.
 */

export type FaultOp = 'open' | 'write' | 'sync' | 'rename' | 'mkdir' | 'unlink';
export type FaultCode = 'ENOSPC' | 'EDQUOT' | 'EIO' | 'EROFS' | 'ENOENT';

export interface FaultRule {
  /** The errno to fail with; omitted with `hang`. */
  code?: FaultCode;
  /** The operation never returns (asynchronous operations only; synchronous ones fail with EIO). */
  hang?: boolean;
  /** Matches when the file's path contains this string. */
  path: string;
  /** Operations it applies to (default: all). */
  ops?: FaultOp[];
  /** Lets this many matching operations through first. */
  after?: number;
  /** Fails this many times, then lets everything through (default: until removed). */
  times?: number;
  /** A `write` hands the first half of its bytes to the file before failing (a short write). */
  partial?: boolean;
}

interface Active extends FaultRule {
  seen: number;
  failed: number;
}

let rules: Active[] = [];

const ERRNO: Record<FaultCode, number> = { ENOSPC: -28, EDQUOT: -122, EIO: -5, EROFS: -30, ENOENT: -2 };
const TEXT: Record<FaultCode, string> = {
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  EIO: 'i/o error',
  EROFS: 'read-only file system',
  ENOENT: 'no such file or directory',
};

/** Installs rules (added to those present); returns a function that removes them. */
export function injectFaults(...add: FaultRule[]): () => void {
  const mine = add.map((r) => ({ ...r, seen: 0, failed: 0 }));
  rules = [...rules, ...mine];
  return () => {
    rules = rules.filter((r) => !mine.includes(r));
  };
}

export function clearFaults(): void {
  rules = [];
}

function fromEnv(): void {
  const text = process.env.SWITCHBOARD_FAULTS;
  if (!text) return;
  const parsed = JSON.parse(text) as FaultRule[];
  if (!Array.isArray(parsed)) throw new Error('SWITCHBOARD_FAULTS must be a JSON array of fault rules');
  injectFaults(...parsed);
}
fromEnv();

export function errnoError(code: FaultCode, op: string, path: string): NodeJS.ErrnoException {
  const e = new Error(`${code}: ${TEXT[code]}, ${op} '${path}'`) as NodeJS.ErrnoException;
  e.code = code;
  e.errno = ERRNO[code];
  e.syscall = op;
  e.path = path;
  return e;
}

function match(op: FaultOp, path: string): Active | undefined {
  for (const r of rules) {
    if (r.ops && !r.ops.includes(op)) continue;
    if (!path.includes(r.path)) continue;
    r.seen++;
    if (r.seen <= (r.after ?? 0)) continue;
    if (r.times !== undefined && r.failed >= r.times) continue;
    r.failed++;
    return r;
  }
  return undefined;
}

/** Throws the injected error for a synchronous operation, if a rule matches. */
export function fault(op: FaultOp, path: string): void {
  if (rules.length === 0) return;
  const r = match(op, path);
  if (r) throw errnoError(r.code ?? 'EIO', op, path);
}

/**
 * For a synchronous write: how many bytes of `length` to write before failing, or undefined
 * when no rule matches. Throws at once when the rule writes nothing.
 */
export function writeFault(path: string, length: number): { bytes: number; error: Error } | undefined {
  if (rules.length === 0) return undefined;
  const r = match('write', path);
  if (!r) return undefined;
  const error = errnoError(r.code ?? 'EIO', 'write', path);
  if (!r.partial) throw error;
  return { bytes: Math.floor(length / 2), error };
}

const NEVER = new Promise<never>(() => {});

/** The asynchronous twin of {@link fault}: rejects, or never settles for a `hang` rule. */
export function faultAsync(op: FaultOp, path: string): Promise<void> | undefined {
  if (rules.length === 0) return undefined;
  const r = match(op, path);
  if (!r) return undefined;
  if (r.hang) return NEVER;
  return Promise.reject(errnoError(r.code ?? 'EIO', op, path));
}
