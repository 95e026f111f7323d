/**
 * The process-wide pool of MCP connections. Runs acquire a connection by its spec key; runs
 * that need the same server (same command line, same resolved environment, same URL) share one
 * process or session. When the last run releases a connection it is closed after an idle delay
 * (built-ins, which are per run, right away); `close()` stops everything on shutdown.
 */
import {
  type ConnectionListener,
  type ConnectionOptions,
  McpConnection,
  type ServerSpec,
} from './connection.js';

export interface McpPoolOptions extends ConnectionOptions {
  /** Milliseconds an unused shared server stays up. Default 60 000. */
  idleMs?: number;
}

interface Entry {
  conn: McpConnection;
  /** runId → detach functions of that run's listeners. */
  runs: Map<string, Array<() => void>>;
  idle?: NodeJS.Timeout;
}

export class McpPool {
  private readonly entries = new Map<string, Entry>();
  private readonly opts: McpPoolOptions;
  private closed = false;

  constructor(opts: McpPoolOptions = {}) {
    this.opts = opts;
  }

  /** The connection for `spec`, held for `runId` until `release(runId)`. Does not connect yet. */
  acquire(spec: ServerSpec, runId: string, listener?: ConnectionListener): McpConnection {
    if (this.closed) throw new Error('the MCP pool is shut down');
    let e = this.entries.get(spec.key);
    if (e && (e.conn.status === 'failed' || e.conn.status === 'closed') && e.runs.size === 0) {
      // A server that failed for good is retried by a later run, not by the runs that saw it fail.
      void e.conn.close();
      this.entries.delete(spec.key);
      e = undefined;
    }
    if (!e) {
      e = { conn: new McpConnection(spec, this.opts), runs: new Map() };
      this.entries.set(spec.key, e);
    }
    if (e.idle) {
      clearTimeout(e.idle);
      e.idle = undefined;
    }
    const detach = e.runs.get(runId) ?? [];
    if (listener) detach.push(e.conn.addListener(listener));
    e.runs.set(runId, detach);
    return e.conn;
  }

  /** Drops the run's hold on every connection; unused ones close after the idle delay. */
  async release(runId: string): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const [key, e] of this.entries) {
      const detach = e.runs.get(runId);
      if (!detach) continue;
      for (const d of detach) d();
      e.runs.delete(runId);
      if (e.runs.size > 0) continue;
      const idleMs = e.conn.spec.kind === 'builtin' ? 0 : (this.opts.idleMs ?? 60_000);
      if (idleMs === 0 || e.conn.status === 'failed') {
        this.entries.delete(key);
        closing.push(e.conn.close());
      } else {
        e.idle = setTimeout(() => {
          if (this.entries.get(key) === e && e.runs.size === 0) {
            this.entries.delete(key);
            void e.conn.close();
          }
        }, idleMs);
        e.idle.unref();
      }
    }
    await Promise.all(closing);
  }

  /** Connections currently in the pool (for tests and status pages). */
  connections(): McpConnection[] {
    return [...this.entries.values()].map((e) => e.conn);
  }

  /** Stops every server. The pool refuses new work afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.entries.values()];
    this.entries.clear();
    for (const e of all) if (e.idle) clearTimeout(e.idle);
    await Promise.all(all.map((e) => e.conn.close()));
  }
}

let shared: McpPool | undefined;

/** The pool shared by the runs of this process. */
export function getMcpPool(): McpPool {
  if (!shared) {
    shared = new McpPool();
    // Safety net for hosts that exit without calling shutdownMcpPool(): no stdio server outlives us.
    process.once('exit', killChildrenNow);
  }
  return shared;
}

function killChildrenNow(): void {
  for (const c of shared?.connections() ?? []) {
    const pid = c.pid;
    if (pid)
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone
      }
  }
}

/** Stops the shared pool's servers (call on server or CLI shutdown). */
export async function shutdownMcpPool(): Promise<void> {
  const p = shared;
  shared = undefined;
  process.removeListener('exit', killChildrenNow);
  await p?.close();
}
