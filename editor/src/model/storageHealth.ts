/**
 * What the server's `/api/health` says about its storage, as the editor's banner shows it:
 * nothing while writes succeed and space is plenty; a warning below the server's low-space
 * threshold; an alert while writes fail (runs paused by the disk, changes not saved).
 */

export interface StorageView {
  level: 'degraded' | 'low';
  /** `storage_full`, `storage_unavailable`, `storage_io` or `storage_low`. */
  code: string;
  text: string;
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function mib(bytes: unknown): string | undefined {
  return typeof bytes === 'number' ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB free` : undefined;
}

const ADVICE: Record<string, string> = {
  storage_full: 'the server’s disk is full',
  storage_unavailable: 'the server’s data directory is unavailable',
  storage_io: 'the server’s disk fails to write',
};

/** The banner for a health answer; undefined when there is nothing to say (or no such field). */
export function storageView(body: unknown): StorageView | undefined {
  if (!isObj(body) || !isObj(body.storage)) return undefined;
  const s = body.storage;
  const free = mib(s.freeBytes);
  if (s.status === 'degraded') {
    const err = isObj(s.lastError) ? s.lastError : {};
    const code = typeof err.code === 'string' ? err.code : 'storage_io';
    const what = ADVICE[code] ?? 'the server cannot write its data';
    return {
      level: 'degraded',
      code,
      text: `Storage degraded: ${what}${typeof err.path === 'string' ? ` (${err.path})` : ''}. Runs are paused and changes are not saved until writes succeed again${free ? `; ${free}` : ''}.`,
    };
  }
  if (s.lowSpace === true)
    return {
      level: 'low',
      code: 'storage_low',
      text: `Storage low: ${free ?? 'little space left'} on the server. Runs and saves stop when it is full.`,
    };
  return undefined;
}

/** Polls the health route and keeps the current banner, for `useSyncExternalStore`. */
export class StorageWatch {
  private view: StorageView | undefined;
  private key = '';
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly listeners = new Set<() => void>();
  private stopped = true;

  constructor(
    private readonly fetchHealth: () => Promise<unknown>,
    private readonly intervalMs = 3000,
  ) {}

  readonly subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  readonly getSnapshot = (): StorageView | undefined => this.view;

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    void this.poll();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** Asks once; an unreachable server changes nothing (other parts of the editor say so). */
  async poll(): Promise<void> {
    let next: StorageView | undefined = this.view;
    try {
      next = storageView(await this.fetchHealth());
    } catch {
      // Keep what was shown.
    }
    const key = next ? `${next.level}|${next.text}` : '';
    if (key !== this.key) {
      this.key = key;
      this.view = next;
      for (const fn of this.listeners) fn();
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.poll(), this.intervalMs);
  }
}
