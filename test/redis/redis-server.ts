/**
 * A real `redis-server` for a test, on a free port, in a temporary directory:
 * `redis-server --port P --save '' --appendonly yes|no --dir TMP`, ready once it answers PING.
 * `restart()` kills it (-9 when asked) and starts it again on the same port and directory, so
 * with AOF it comes back with what it had acknowledged.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export const REDIS_SERVER = process.env.REDIS_SERVER ?? '/usr/bin/redis-server';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface TestRedis {
  port: number;
  url: string;
  dir: string;
  /** Kills the server (SIGKILL with `hard`) and starts it again on the same port and directory. */
  restart(opts?: { hard?: boolean; downMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

async function waitForPing(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}: ${log()}`);
    const r = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    r.on('error', () => {});
    try {
      await r.connect();
      if ((await r.ping()) === 'PONG') return;
    } catch {
    } finally {
      r.disconnect();
    }
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING: ${log()}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

export async function startRedis(
  opts: { appendonly?: boolean; appendfsync?: 'always' | 'everysec' } = {},
): Promise<TestRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-redis-'));
  const port = await freePort();
  let child: ChildProcess;
  let out = '';
  const launch = async () => {
    out = '';
    child = spawn(
      REDIS_SERVER,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        opts.appendonly ? 'yes' : 'no',
        '--appendfsync',
        opts.appendfsync ?? 'everysec',
        '--dir',
        dir,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout!.on('data', (d) => {
      out = (out + d).slice(-4000);
    });
    child.stderr!.on('data', (d) => {
      out = (out + d).slice(-4000);
    });
    await waitForPing(port, child, () => out);
  };
  const kill = async (signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await exited;
  };
  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    async restart({ hard = false, downMs = 0 } = {}) {
      await kill(hard ? 'SIGKILL' : 'SIGTERM');
      if (downMs) await new Promise((r) => setTimeout(r, downMs));
      await launch();
    },
    async stop() {
      await kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
