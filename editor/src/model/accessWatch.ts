/**
 * Notices when the server stops accepting this editor's token while it is open (it was
 * restarted with a new one). The live connections only see a refused WebSocket, which looks like
 * a network failure and is retried; the retries would add up to the server's failure limit and
 * lock this address out for a minute. So whenever a connection drops, the server is asked once
 * (a REST request, whose refusal is explicit) whether the token still holds; if not, the caller
 * stops the connections and asks for the token.
 */
import type { ServerAccess } from './api.js';

export interface Connection {
  subscribe(fn: () => void): () => void;
  /** Whether the connection is down now (a drop is a change from up to down). */
  down(): boolean;
}

export interface AccessWatchOptions {
  connections: Connection[];
  check(): Promise<ServerAccess>;
  /** Called once, when the server refuses the token (or limits this address). */
  onRefused(access: 'unauthorized' | 'rate-limited'): void;
}

/** Starts watching; returns the function that stops it. */
export function watchAccess(o: AccessWatchOptions): () => void {
  let checking = false;
  let done = false;
  const wasDown = o.connections.map((c) => c.down());
  const offs = o.connections.map((c, i) =>
    c.subscribe(() => {
      const down = c.down();
      const dropped = down && !wasDown[i];
      wasDown[i] = down;
      if (!dropped || checking || done) return;
      checking = true;
      void o
        .check()
        .then((access) => {
          if (done || (access !== 'unauthorized' && access !== 'rate-limited')) return;
          done = true;
          o.onRefused(access);
        })
        .finally(() => {
          checking = false;
        });
    }),
  );
  return () => {
    done = true;
    for (const off of offs) off();
  };
}
