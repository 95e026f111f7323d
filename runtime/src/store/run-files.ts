/**
 * The files of one run besides its event log: what was started (`run.json`, written once)
 * and the check of checkpoints (kept in `checkpoints.jsonl`, see checkpoint-log.ts).
 */
import { readFile } from 'node:fs/promises';
import type { Flow } from '@switchboard/schemas';
import type { RunCheckpoint } from '../engine/types.js';
import { writeFileAtomic } from './atomic.js';
import { StoreError } from './errors.js';
import { parseStoreText, type ShapeCheck } from './json-file.js';

/** Everything needed to run (or rerun) the run from the start. */
export interface RunSpec {
  version: 1;
  runId: string;
  /** The flow as it was run, models overrides applied. */
  flow: Flow;
  input: unknown;
  createdAt: string;
  answers?: Record<string, string | string[]>;
  /** A fork of run `runId` at `nodeId`'s turn `turn`. */
  fork?: { runId: string; nodeId: string; turn: number };
  /** Pinned nodes (../pins/): kept so a run resumed after a restart stays pinned. */
  pins?: import('@switchboard/schemas').Pin[];
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function checkSpec(runId: string): ShapeCheck<RunSpec> {
  return (v) => {
    if (!isObj(v)) return { ok: false, path: '', message: 'expected an object' };
    if (v.version !== 1) return { ok: false, path: '/version', message: 'expected 1' };
    if (v.runId !== runId) return { ok: false, path: '/runId', message: `expected ${JSON.stringify(runId)}` };
    if (!isObj(v.flow) || typeof v.flow.id !== 'string')
      return { ok: false, path: '/flow', message: 'expected a flow document' };
    return { ok: true, value: v as unknown as RunSpec };
  };
}

export function checkCheckpoint(runId: string): ShapeCheck<RunCheckpoint> {
  return (v) => {
    if (!isObj(v)) return { ok: false, path: '', message: 'expected an object' };
    if (v.version !== 1) return { ok: false, path: '/version', message: 'expected 1' };
    if (v.runId !== runId) return { ok: false, path: '/runId', message: `expected ${JSON.stringify(runId)}` };
    if (typeof v.flowId !== 'string') return { ok: false, path: '/flowId', message: 'expected a string' };
    if (!Number.isInteger(v.seq) || (v.seq as number) < 0)
      return { ok: false, path: '/seq', message: 'expected an integer ≥ 0' };
    if (!('data' in v)) return { ok: false, path: '/data', message: 'missing' };
    return { ok: true, value: v as unknown as RunCheckpoint };
  };
}

export async function readJsonStrict<T>(file: string, check: ShapeCheck<T>): Promise<T | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new StoreError('io', `cannot read ${file}: ${(e as Error).message}`, file);
  }
  return parseStoreText(text, file, check);
}

export async function writeJsonDurable(file: string, value: unknown, fsync = true): Promise<void> {
  await writeFileAtomic(file, `${JSON.stringify(value)}\n`, { fsync });
}
