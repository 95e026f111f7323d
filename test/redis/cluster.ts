/**
 * Real server and worker processes for the scale-out tests (server-main.ts, worker-main.ts),
 * started with tsx from the sources, and a seeded random source whose seed the tests log.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const RUNTIME = join(HERE, '..', '..', 'runtime');

export interface Proc {
  child: ChildProcess;
  /** What the process printed after READY. */
  ready: string;
  stderr(): string;
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

function launch(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Proc> {
  const child = spawn(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', join(HERE, script), ...args],
    {
      cwd: RUNTIME,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_ENV: 'production', ...env },
    },
  );
  let err = '';
  child.stderr!.on('data', (d) => {
    err = (err + d).slice(-200_000);
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${script} did not start: ${err}`)), 30_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /READY (.*)\n/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({
          child,
          ready: m[1]!,
          stderr: () => err,
          async kill9() {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
            await exited;
          },
          async stop() {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
            const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
            await exited;
            clearTimeout(t);
          },
        });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code} before it was ready: ${err}`));
    });
  });
}

export async function startServer(
  redisUrl: string,
  dir: string,
  env: NodeJS.ProcessEnv = {},
): Promise<Proc & { url: string; port: number; relayId: string }> {
  const p = await launch('server-main.ts', [redisUrl, dir], env);
  const [port, relayId = ''] = p.ready.split(' ');
  return Object.assign(p, { url: `http://127.0.0.1:${port}`, port: Number(port), relayId });
}

export function startWorker(
  redisUrl: string,
  dir: string,
  counter: string,
  concurrency = 2,
  env: NodeJS.ProcessEnv = {},
): Promise<Proc> {
  return launch('worker-main.ts', [redisUrl, dir, counter, String(concurrency)], env);
}

/** mulberry32: small, seeded, good enough to pick victims and delays reproducibly. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
