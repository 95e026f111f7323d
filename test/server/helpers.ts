/** Shared helpers for the server tests: a server over a temp data directory, requests, waits. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import { agent, edge, flow, node } from '../../runtime/src/engine/testing/index.js';
import { createServer, type ServerOptions, type SwitchboardServer } from '../../runtime/src/server/index.js';

export const HOST = '127.0.0.1:5170';

export function tempDir(prefix = 'sb-server-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface InjectArg {
  method: string;
  url: string;
  payload?: string | Buffer;
  headers?: Record<string, string>;
  remoteAddress?: string;
}
export interface InjectRes {
  statusCode: number;
  body: string;
  headers: Record<string, string | string[] | number | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  json(): any;
}

export async function testServer(
  opts: ServerOptions = {},
): Promise<SwitchboardServer & { dir: string; req: (o: InjectArg) => Promise<InjectRes> }> {
  const { dir } = tempDir();
  const s = await createServer({ dataDir: dir, editorDir: false, port: 5170, ...opts });
  const req = (o: InjectArg) =>
    s.app.inject({
      ...o,
      headers: { host: HOST, ...(o.headers ?? {}) },
    } as never) as unknown as Promise<InjectRes>;
  const close = s.close.bind(s);
  return Object.assign(s, {
    dir,
    req,
    close: async () => {
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  });
}

/** start → writer → end on a scripted model. */
export function simpleFlow(id = 'simple', text = 'the draft'): Flow {
  return {
    ...flow(
      [node('start', 'start'), agent('writer'), node('end', 'end')],
      [edge('start', 'writer'), edge('writer', 'end')],
      [{ node: 'writer', text }],
    ),
    id,
    name: `Flow ${id}`,
  };
}

/** start → a1 → … → aN → end, each reply after `latencyMs`. */
export function slowChain(id: string, n: number, latencyMs: number): Flow {
  const nodes = [node('start', 'start')];
  const edges = [];
  let prev = 'start';
  for (let i = 1; i <= n; i++) {
    nodes.push(agent(`a${i}`));
    edges.push(edge(prev, `a${i}`));
    prev = `a${i}`;
  }
  nodes.push(node('end', 'end'));
  edges.push(edge(prev, 'end'));
  return {
    ...flow(nodes, edges, [{ fallback: true, text: 'ok', deltas: ['o', 'k'] }]),
    id,
    name: id,
    models: {
      default: {
        provider: 'scripted',
        latencyMs,
        script: [{ fallback: true, text: 'ok', deltas: ['o', 'k'] }],
      },
    },
  };
}

export async function until<T>(
  fn: () => T | Promise<T>,
  what: string,
  timeoutMs = 20_000,
): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
