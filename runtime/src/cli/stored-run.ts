/**
 * Reads a stored run (its spec and event log) straight from a data directory, without taking
 * the directory's lock: `diff` and `test --record-case` only read, and may look at the runs of
 * a server that is running.
 */
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { scanEventLog } from '../store/event-log.js';
import { checkSpec, type RunSpec, readJsonStrict } from '../store/run-files.js';
import { RUN_ID_RE, resolveDataDir } from '../store/store.js';

export interface StoredRun {
  spec: RunSpec;
  events: RunEvent[];
}

export class StoredRunError extends Error {
  constructor(
    message: string,
    readonly usage: boolean,
  ) {
    super(message);
  }
}

export async function readStoredRun(runId: string, dataDir?: string): Promise<StoredRun> {
  if (!RUN_ID_RE.test(runId)) throw new StoredRunError(`not a run id: ${JSON.stringify(runId)}`, true);
  const dir = join(resolveDataDir(dataDir), 'runs', runId);
  let spec: RunSpec | undefined;
  try {
    spec = await readJsonStrict(join(dir, 'run.json'), checkSpec(runId));
  } catch (e) {
    throw new StoredRunError(`run ${runId}: ${(e as Error).message}`, false);
  }
  if (!spec) throw new StoredRunError(`no run ${runId} in ${resolveDataDir(dataDir)}`, true);
  return { spec, events: scanEventLog(join(dir, 'events.jsonl'), runId).events };
}
