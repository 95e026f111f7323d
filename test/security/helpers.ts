/**
 * Shared helpers of the security regression suite: the CLI as a real process (from the
 * TypeScript sources), flows that try to run a command through the shell built-in, and waits for
 * a run to end over the REST API.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { CLI, REPO } from '../fixtures/mcp/helpers.js';
import { type InjectRes, until } from '../server/helpers.js';

export { REPO };

export interface CliResult {
  code: number | null;
  out: string;
  err: string;
}

/** Lets the CLI run from the workspace's TypeScript sources, with no build of the packages. */
export function withSources(env: Record<string, string>): Record<string, string> {
  return { ...env, NODE_OPTIONS: `${env.NODE_OPTIONS ?? ''} --conditions=source`.trim() };
}

/** `switchboard ARGS…` as a child process with exactly `env`. */
export function runCli(args: string[], env: Record<string, string>, cwd = REPO): Promise<CliResult> {
  return new Promise((resolve) => {
    const ch = spawn(process.execPath, [...CLI, ...args], {
      env: withSources(env),
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    ch.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    ch.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    ch.on('close', (code) => resolve({ code, out, err }));
  });
}

/** A shipped example flow, parsed. */
export function shippedFlow(name: string): Flow {
  return JSON.parse(readFileSync(join(REPO, 'flows', `${name}.json`), 'utf8')) as Flow;
}

type ServerCfg = NonNullable<Flow['mcpServers']>[string];

/**
 * A flow whose one agent calls `run_command` of the shell built-in once with `command`/`args`
 * (a scripted model: the flow's author decides what runs), given `shell` as its server config.
 */
export function shellCallFlow(id: string, shell: ServerCfg, command: string, args: string[]): Flow {
  return {
    version: 1,
    id,
    name: id,
    models: {
      default: {
        provider: 'scripted',
        script: [
          { node: 'dev', toolCalls: [{ name: 'shell__run_command', args: { command, args } }] },
          { fallback: true, text: 'done' },
        ],
      },
    },
    mcpServers: { 'sandbox-shell': shell },
    nodes: [
      { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
      { id: 'shell', kind: 'tool', position: { x: 0, y: 1 }, config: { server: 'sandbox-shell' } },
      {
        id: 'dev',
        kind: 'agent',
        position: { x: 1, y: 0 },
        config: { role: 'r', model: 'default', prompt: [{ text: 'x' }] },
      },
      { id: 'end', kind: 'end', position: { x: 2, y: 0 }, config: {} },
    ],
    edges: [
      { id: 'e1', kind: 'handover', source: 'start', target: 'dev' },
      { id: 'g', kind: 'tools', source: 'shell', target: 'dev' },
      { id: 'e2', kind: 'handover', source: 'dev', target: 'end' },
    ],
  };
}

export const json = (body: unknown) => ({
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

type Req = (o: {
  method: string;
  url: string;
  payload?: string;
  headers?: Record<string, string>;
}) => Promise<InjectRes>;

/** The run record once the run ended (completed, failed or cancelled). */
export async function finished(
  req: Req,
  id: string,
): Promise<{ status: string; error?: { code: string; message: string } }> {
  return until(async () => {
    const got = (await req({ method: 'GET', url: `/api/runs/${id}` })).json().run;
    return ['completed', 'failed', 'cancelled'].includes(got.status) ? got : undefined;
  }, `run ${id}`);
}

export interface Served {
  url: string;
  out(): string;
  err(): string;
  stop(): Promise<void>;
}

/** `switchboard serve ARGS…` as a real process; resolves once it listens. */
export async function startServe(args: string[], env: Record<string, string>): Promise<Served> {
  const ch = spawn(process.execPath, [...CLI, 'serve', '--port', '0', ...args], {
    env: withSources(env),
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  ch.stderr.on('data', (c: Buffer) => {
    err += c.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`serve did not start: ${err}`)), 60_000);
    ch.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!.replace(/\/$/, ''));
      }
    });
    ch.once('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`serve exited ${code}: ${err}`));
    });
  });
  return {
    url,
    out: () => out,
    err: () => err,
    stop: () =>
      new Promise<void>((resolve) => {
        if (ch.exitCode !== null) return resolve();
        ch.once('exit', () => resolve());
        ch.kill('SIGTERM');
      }),
  };
}

/**
 * Joins the co-editing room `room` of the server on `port` as a browser on its own origin would
 * (a stock y-websocket client); the provider goes into `providers` for the test to destroy.
 */
export async function enterRoom(port: number, room: string, providers: WebsocketProvider[]): Promise<Y.Doc> {
  const origin = `http://127.0.0.1:${port}`;
  const Polyfill = class extends WebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols, { origin });
    }
  };
  const doc = new Y.Doc();
  const provider = new WebsocketProvider(`ws://127.0.0.1:${port}/api/yjs`, room, doc, {
    WebSocketPolyfill: Polyfill as never,
    disableBc: true,
  });
  providers.push(provider);
  await until(() => provider.synced, `synced with ${room}`);
  return doc;
}
