/**
 * Where a scaled-out deployment keeps things in Redis. Every key starts with one prefix
 * (`sb` by default) so that several deployments can share a Redis; the BullMQ queue lives
 * under `<prefix>:bull`. A run's event log is a stream whose entry ids are `<seq>-0`, so Redis
 * itself refuses a seq that is not after the last one (no gap and no duplicate can be added).
 */
export const QUEUE_NAME = 'runs';

export interface RedisKeys {
  prefix: string;
  /** BullMQ's key prefix (its keys are `<bull>:runs:…`). */
  bull: string;
  /** Stream of run announcements (`id`, `record`), read by every server instance. */
  runs: string;
  /** Channel: a run's stream grew (message: the run id). */
  evChannel: string;
  /** Channel: a run was announced. */
  newChannel: string;
  /** Channel: a command was sent to a run (message: the run id). */
  cmdChannel: string;
  events(runId: string): string;
  spec(runId: string): string;
  checkpoint(runId: string): string;
  journal(runId: string): string;
  commands(runId: string): string;
  /** BullMQ's lock of the job that executes the run (its id is the run id). */
  lock(runId: string): string;
  worker(workerId: string): string;
  workerPattern: string;
}

export function redisKeys(prefix = 'sb'): RedisKeys {
  if (!/^[A-Za-z0-9_.-]{1,40}$/.test(prefix))
    throw new Error(`redis key prefix "${prefix}": use 1 to 40 letters, digits, "_", "." or "-"`);
  const bull = `${prefix}:bull`;
  const run = (id: string, what: string) => `${prefix}:run:${id}:${what}`;
  return {
    prefix,
    bull,
    runs: `${prefix}:runs`,
    evChannel: `${prefix}:ev`,
    newChannel: `${prefix}:new`,
    cmdChannel: `${prefix}:cmd`,
    events: (id) => run(id, 'ev'),
    spec: (id) => run(id, 'spec'),
    checkpoint: (id) => run(id, 'cp'),
    journal: (id) => run(id, 'jr'),
    commands: (id) => run(id, 'cmd'),
    lock: (id) => `${bull}:${QUEUE_NAME}:${id}:lock`,
    worker: (id) => `${prefix}:worker:${id}`,
    workerPattern: `${prefix}:worker:*`,
  };
}

/** Reads `--redis URL` or SWITCHBOARD_REDIS_URL; refuses anything but redis:// and rediss://. */
export function redisUrlFrom(
  explicit: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const v = explicit ?? (env.SWITCHBOARD_REDIS_URL || undefined);
  if (v === undefined) return undefined;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new Error(`${explicit !== undefined ? '--redis' : 'SWITCHBOARD_REDIS_URL'}: "${v}" is not a URL`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    throw new Error(
      `${explicit !== undefined ? '--redis' : 'SWITCHBOARD_REDIS_URL'}: expected redis://host:port, got ${u.protocol}`,
    );
  return v;
}

/**
 * A connection whose errors are left to its reconnection (ioredis retries by itself) instead of
 * crashing the process as unhandled `error` events; `onError` may log them.
 */
export function quiet<T extends { on(event: 'error', f: (e: Error) => void): unknown }>(
  conn: T,
  onError: (e: Error) => void = () => {},
): T {
  conn.on('error', onError);
  return conn;
}
